"""Checks that two sweep directories hold the same results, run by run (used by sweep_local_test.sh).

Usage: same_results.py DIR_A DIR_B
Every run folder (<name>-<id>) of DIR_A must exist in DIR_B with status completed in both, and
every dataset under /metrics, /stats and /attention must be equal, except the wall-clock columns
(tokens_per_s, elapsed_s): the same steps, each once (nothing lost, nothing repeated), the same
values bit for bit. Exits 1 naming the first difference.
"""
import os
import sys

import h5py
import numpy as np

WALL_CLOCK = {"tokens_per_s", "elapsed_s"}


def datasets(f):
    found = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and name.split("/")[0] in ("metrics", "stats", "attention"):
            if name.split("/")[-1] not in WALL_CLOCK:
                found[name] = obj[()]

    f.visititems(visit)
    return found


def difference(x, y):
    """Where two arrays first differ, short enough to read in a CI log."""
    if x.shape != y.shape:
        return f"shape {x.shape} vs {y.shape}: {np.ravel(x)[:12]!r} vs {np.ravel(y)[:12]!r}"
    same = (x == y) | ((x != x) & (y != y)) if x.dtype.kind == "f" else x == y
    first = np.unravel_index(int(np.argmin(same)), x.shape) if x.ndim else ()
    count = int(np.size(same) - np.count_nonzero(same))
    return f"{count} of {x.size} values, first at {tuple(int(i) for i in first)}: {x[first]!r} vs {y[first]!r}"


def resumes(f):
    return [int(s) for s in f["resumes/step"][()]] if "resumes/step" in f else "none"


def status(f):
    v = f.attrs["status"]
    return v.decode() if isinstance(v, bytes) else str(v)


def main(a, b):
    runs = sorted(d for d in os.listdir(a) if os.path.isfile(os.path.join(a, d, "run.h5")))
    if not runs:
        sys.exit(f"no runs in {a}")
    for run in runs:
        fa = h5py.File(os.path.join(a, run, "run.h5"), "r", swmr=True)
        path_b = os.path.join(b, run, "run.h5")
        if not os.path.isfile(path_b):
            sys.exit(f"{run}: missing in {b}")
        fb = h5py.File(path_b, "r", swmr=True)
        for f, where in ((fa, a), (fb, b)):
            if status(f) != "completed":
                sys.exit(f"{run}: status {status(f)} in {where}")
        da, db = datasets(fa), datasets(fb)
        if set(da) != set(db):
            sys.exit(f"{run}: datasets differ: {sorted(set(da) ^ set(db))}")
        steps = da["metrics/train/step"]
        if len(np.unique(steps)) != len(steps):
            sys.exit(f"{run}: repeated train steps in {a}")
        for name in sorted(da):
            if da[name].shape != db[name].shape or not np.array_equal(da[name], db[name], equal_nan=da[name].dtype.kind == "f"):
                sys.exit(f"{run}: {name} differs: {difference(da[name], db[name])}; the runs' resume records: "
                         f"{resumes(fa)} in {a}, {resumes(fb)} in {b}")
    print(f"{len(runs)} runs identical")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
