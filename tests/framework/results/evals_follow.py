# Follows a finished run file with h5py in SWMR mode while `ablate eval` records into it
# (run_file_swmr_test.cpp): prints what it sees when it opens, waits for a line on stdin,
# refreshes, prints the training rows again and every evaluation recorded.
import json
import sys

import h5py

f = h5py.File(sys.argv[1], "r", swmr=True)
step, names, scores = f["metrics/train/step"], f["evals/name"], f["evals/scores"]
checkpoint = f["evals/checkpoint_step"]
print("opened", step.shape[0], checkpoint.shape[0], flush=True)
sys.stdin.readline()
for d in (step, names, scores, checkpoint):
    d.refresh()
print("refreshed", step.shape[0], checkpoint.shape[0], flush=True)
print("steps", " ".join(str(int(s)) for s in step[:]), flush=True)
for name, at, text in zip(names.asstr()[:], checkpoint[:], scores.asstr()[:]):
    print("eval", name, int(at), json.loads(text)["metrics"]["bleu"], flush=True)
