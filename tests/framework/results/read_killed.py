# Reads a run file whose writer was killed (run_file_swmr_test.cpp): checks that h5py opens it
# (in SWMR mode unless --plain), that it holds at least MIN_ROWS train rows with the values the
# writer logged (loss = 2 / (1 + 0.01 step), steps 1, 2, 3, ...) and that attention rows sum to 1.
import sys

import h5py
import numpy as np

path, min_rows = sys.argv[1], int(sys.argv[2])
plain = "--plain" in sys.argv[3:]
with h5py.File(path, "r", swmr=not plain) as f:
    assert f.attrs["format"] == "ablate-run", f.attrs["format"]
    train = f["metrics/train"]
    n = min(train[name].shape[0] for name in train)
    steps = train["step"][:n]
    k = 0
    while k < n and steps[k] >= 0 and (k == 0 or steps[k] > steps[k - 1]):
        k += 1
    assert k >= min_rows, f"{k} consistent rows, expected at least {min_rows}"
    assert (steps[:k] == np.arange(1, k + 1)).all(), steps[:k]
    loss = train["loss"][:k]
    assert (loss == 2.0 / (1.0 + 0.01 * steps[:k])).all(), loss
    att_steps = f["attention/steps"][:]
    slot = f["attention"][f["attention"].attrs["slots"][0]]
    rows = min(len(att_steps), slot.shape[0])
    for i in range(rows):
        if att_steps[i] < 0:
            break
        assert np.allclose(slot[i].sum(axis=-1), 1.0, atol=1e-5), (i, slot[i].sum(axis=-1))
    print("ok", k, "train rows,", rows, "attention logs", flush=True)
