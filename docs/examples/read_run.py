#!/usr/bin/env python3
"""Reads an Ablate run file with h5py alone (schema: docs/results-format.md): the run's status,
its train loss curve as plot-ready arrays, and one attention tensor, checking that each of its
rows is a probability distribution. Works on finished runs and on runs still being written.

    /usr/bin/python3 docs/examples/read_run.py results/<experiment>/<run id>/run.h5
"""
import sys

import h5py
import numpy as np


def text(value):
    """Fixed-length string attributes (status, reason, finished) read as bytes, the others as str."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def rows(steps, *datasets):
    """How many rows of a table to trust: the shortest dataset, cut before the first unwritten
    (negative) or non-increasing step. A live or killed writer may be mid-append."""
    n = min([steps.shape[0]] + [d.shape[0] for d in datasets])
    s = steps[:n]
    k = 0
    while k < n and s[k] >= 0 and (k == 0 or s[k] > s[k - 1]):
        k += 1
    return k


def main(path):
    # swmr=True opens finished files, files being written, and files whose writer was killed.
    with h5py.File(path, "r", swmr=True) as f:
        assert text(f.attrs["format"]) == "ablate-run", "not an Ablate run file"
        print(f"run {text(f.attrs['run_id'])} of {text(f.attrs['experiment'])}: "
              f"status {text(f.attrs['status'])} at step {int(f.attrs['step'])}")

        # Train loss vs step: two 1-D arrays, ready for matplotlib's plt.plot(steps, loss).
        train = f["metrics/train"]
        n = rows(train["step"], train["loss"])
        steps, loss = train["step"][:n], train["loss"][:n]
        print(f"train loss: {n} rows, steps {steps[0]}..{steps[-1]}, loss {loss[0]:.4f} -> {loss[-1]:.4f}")

        # One attention tensor: the first logged slot at the last log, [example, head, query, key].
        attention = f["attention"]
        slots = [text(s) for s in attention.attrs["slots"]]
        logs = rows(attention["steps"], *[attention[s] for s in slots])
        if not slots or logs == 0:
            print("no attention logged")
            return
        ds = attention[slots[0]]
        a = ds[logs - 1]
        print(f"{slots[0]} at step {attention['steps'][logs - 1]}: shape {a.shape}, "
              f"axes {text(ds.attrs['axes'])}, mask {text(ds.attrs['mask'])}")
        # Rows at the probe's valid query positions are softmax distributions over the keys.
        side = text(ds.attrs["query_tokens"])
        lengths = attention[f"probe/{side}_lengths"][:] if side else np.full(a.shape[0], a.shape[2])
        for e, length in enumerate(lengths):
            sums = a[e, :, :length, :].sum(axis=-1)
            assert np.allclose(sums, 1.0, atol=1e-5), f"example {e}: row sums {sums}"
        if side:
            print(f"probe example 0 ({side}): {text(attention[f'probe/{side}_text'][0])!r}")
        print("every row sums to 1")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
