# Follows a run file live with h5py in SWMR mode, as a notebook would (run_file_swmr_test.cpp):
# prints the rows it sees when it opens, waits for a line on stdin, refreshes, prints again.
import sys

import h5py

path = sys.argv[1]


def text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


f = h5py.File(path, "r", swmr=True)
step, loss, attention = f["metrics/train/step"], f["metrics/train/loss"], f["attention/steps"]
print("opened", step.shape[0], loss.shape[0], attention.shape[0], text(f.attrs["status"]), flush=True)
sys.stdin.readline()
for d in (step, loss, attention):
    d.refresh()  # H5Drefresh: new extents and chunks
print("refreshed", step.shape[0], loss.shape[0], attention.shape[0], flush=True)
print("steps", " ".join(str(int(s)) for s in step[:]), flush=True)
print("loss", " ".join(repr(float(x)) for x in loss[:]), flush=True)
# h5py cannot refresh the root group's attributes (no H5Orefresh binding): reopen to see them.
f.close()
with h5py.File(path, "r", swmr=True) as g:
    print("status", text(g.attrs["status"]), int(g.attrs["step"]), text(g.attrs["reason"]), flush=True)
