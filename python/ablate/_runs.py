# load_run, load_sweep, attention, run_scalars (see __init__.py). Arms are named as `ablate compare`
# names them (framework/analysis/compare.cpp): by the resolved-spec keys whose values differ
# between the runs, leaving out replicates (seed), execution and kept-files keys and the
# description; an arm's label is its values in key order joined by " · ".
import os

import h5py
import numpy as np
import pandas as pd

from ._spec import flat_spec

# Keys that never make an arm (compare.cpp's replicate_keys, spec::execution_keys,
# spec::kept_files_keys, and the free-text description).
NOT_ARM_KEYS = {
    "train.seed", "train.branch_from.run", "backend.threads", "train.keep_checkpoints", "train.ema",
    "train.branch_points", "log.tensorboard", "description",
}


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value[()])
    return str(value).rstrip("\x00")


def _run_file(path):
    path = os.fspath(path)
    return os.path.join(path, "run.h5") if os.path.isdir(path) else path


def _open(path):
    """run.h5 read-only, in SWMR mode so that a live run's rows are read consistently; a file this
    process already holds open without SWMR is opened the same way."""
    try:
        return h5py.File(path, "r", swmr=True)
    except OSError:
        return h5py.File(path, "r")


def run_files(directory):
    """Every run.h5 under `directory` (not following the links of SWEEP/tensorboard), sorted."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .attempts/: set-aside failed runs
        if "run.h5" in files:
            found.append(os.path.join(root, "run.h5"))
    return sorted(found)


def _metrics(f, split):
    group = f.get(f"metrics/{split}")
    if group is None or "step" not in group:
        return pd.DataFrame({"step": pd.Series(dtype="int64")})
    steps = group["step"][:]
    data = {"step": steps.astype("int64")}
    for name in group:
        if name != "step":
            values = group[name][:]
            data[f"{split}/{name}"] = values[: len(steps)].astype("float64")
    frame = pd.DataFrame(data)
    # Rows a live writer has not finished, or a damaged file's steps that go back: left out, as
    # RunReader leaves them out (steps increase strictly).
    increasing = np.concatenate([[True], np.diff(frame["step"].to_numpy()) > 0]) if len(frame) else []
    return frame[np.cumprod(increasing).astype(bool)] if len(frame) else frame


def _identity(f, path):
    attrs = f.attrs
    spec_yaml = _text(attrs["resolved_spec_yaml"])
    return {
        "run_id": _text(attrs["run_id"]),
        "experiment": _text(attrs["experiment"]),
        "seed": int(attrs["seed"]),
        "status": _text(attrs["status"]),
        "code_id": _text(attrs["code_id"]) if "code_id" in attrs else "",
        "path": os.path.abspath(path),
    }, flat_spec(spec_yaml)


def _one_run(path):
    path = _run_file(path)
    with _open(path) as f:
        identity, spec = _identity(f, path)
        rows = pd.merge(_metrics(f, "train"), _metrics(f, "eval"), on="step", how="outer").sort_values("step")
    return identity, spec, rows.reset_index(drop=True)


def load_run(path, keys=()):
    """One run (its folder or run.h5): a row per logged step, train/<metric> and eval/<metric>
    columns (NaN where that table has no row at the step), then run_id, experiment, seed, status,
    code_id, path, and the spec keys named in `keys` (dotted, e.g. 'model.block')."""
    identity, spec, rows = _one_run(path)
    for column, value in identity.items():
        rows[column] = value
    for key in keys:
        rows[key] = spec.get(key)
    return rows


def arm_keys(specs):
    """The keys that tell arms apart, sorted: values that differ (or are missing in some runs),
    less an option of a varying plugin whose value follows from the plugin alone
    (model.ffn.approximation beside model.ffn)."""
    varying = [k for k in sorted({k for spec in specs for k in spec})
               if k not in NOT_ARM_KEYS and len({spec.get(k) for spec in specs}) > 1]

    def determined_by(parent, key):
        seen = {}
        return all(seen.setdefault(spec.get(parent), spec.get(key)) == spec.get(key) for spec in specs)

    return [k for k in varying if not any(k.startswith(p + ".") and determined_by(p, k) for p in varying)]


def load_sweep(directory):
    """Every run under `directory` (a sweep's folder, or any folder of runs): load_run's rows of all
    runs, with a column per key that varies between them and `arm`, the arm's label as in
    `ablate compare`'s table ('pre_norm · gelu · learned')."""
    paths = run_files(directory)
    if not paths:
        raise FileNotFoundError(f"no run.h5 under {directory}")
    runs = [_one_run(p) for p in paths]
    varying = arm_keys([spec for _, spec, _ in runs])
    frames = []
    for identity, spec, rows in runs:
        for column, value in identity.items():
            rows[column] = value
        for key in varying:
            rows[key] = spec.get(key)
        rows["arm"] = " · ".join(spec.get(k, "(unset)") for k in varying) if varying else "all runs"
        frames.append(rows)
    frame = pd.concat(frames, ignore_index=True)
    frame.attrs["keys"] = varying  # the arm-defining keys, in label order
    return frame


def attention(run, stack, layer, step, kind="self"):
    """The probe batch's attention logged at `step`: a float32 array [E, H, Q, K] (examples, heads,
    queries, keys); stack 'encoder' | 'decoder', kind 'self' | 'cross'."""
    path = _run_file(run)
    with _open(path) as f:
        steps = f["attention/steps"][:]
        hits = np.flatnonzero(steps == step)
        if len(hits) == 0:
            raise KeyError(f"{path}: no attention logged at step {step}; logged at {steps.tolist()}")
        name = f"attention/{stack}/{kind}/layer_{layer}"
        if name not in f:
            raise KeyError(f"{path}: no {name}")
        return f[name][int(hits[0])]


def run_scalars(run):
    """What Ablate records once per run: the identity columns, parameters by kind
    ('parameters/total', 'parameters/non_embedding', ...), the last step, and the cumulative
    tokens and training FLOPs of the last train row."""
    path = _run_file(run)
    with _open(path) as f:
        out, _ = _identity(f, path)
        out["step"] = int(f.attrs["step"])
        if "parameter_kinds" in f.attrs:
            for kind, count in zip(f.attrs["parameter_kinds"], f.attrs["parameter_counts"]):
                out[f"parameters/{_text(kind)}"] = int(count)
        train = _metrics(f, "train")
    for name in ("tokens", "flops"):
        column = train.get(f"train/{name}")
        out[name] = float(column.iloc[-1]) if column is not None and len(column) else float("nan")
    return out
