#!/usr/bin/env python3
# The test verses of a Bible en->es translation run with their English side from another Bible:
# how much a model's score depends on the English translation it was trained on (WEB) when the
# same verses come from the King James Version (docs/training.md, "The same verses from the KJV").
# Writes web.tsv and kjv.tsv (english<TAB>spanish, the same verses, the same order) for
# `ablate eval RUN --data FILE`.
#
#   tests/.venv/bin/python scripts/bible_test_in_kjv.py --run RUN_DIR --kjv KJV_ES.TSV --out DIR
#
# KJV_ES.TSV: `mod2imp engKJV2006eb` and `mod2imp spaRV1909eb` (Debian sword-text-kjv,
# sword-text-sparv) aligned by scripts/bible_align.py. The test split is recomputed as
# task/translation makes it (plugins/common/text/splits.cpp: a splitmix64 Fisher-Yates shuffle of
# the pairs by split_seed, test = the first ceil(test_fraction n)) and checked against the run's
# own evals/test/predictions.tsv; verses where either English side or the Spanish is longer than
# the run's max_len in the run's tokenizer are left out, so both files hold the same verses.
import argparse
import math
import os
import sys

import h5py
import sentencepiece as spm
import yaml

MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def test_indices(n, test_fraction, seed):
    order = list(range(n))
    state = seed
    for i in range(n - 1, 0, -1):
        state, r = splitmix64(state)
        j = r % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order[: math.ceil(test_fraction * n - 1e-9)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--kjv", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with h5py.File(os.path.join(a.run, "run.h5"), "r", swmr=True) as f:
        resolved = f.attrs["resolved_spec_yaml"]
    spec = yaml.safe_load(resolved.decode() if isinstance(resolved, bytes) else resolved)
    task = spec["task"]
    pairs = [line.rstrip("\n").split("\t") for line in open(task["file"], encoding="utf-8")]
    test = test_indices(len(pairs), float(task["test_fraction"]), int(task.get("split_seed", 1)))
    model = open(os.path.join(a.run, "tokenizer-joint.bin"), "rb").read().split(b"\n", 2)[2]
    sp = spm.SentencePieceProcessor(model_proto=model)
    fits = lambda text: len(sp.encode(text)) <= int(task["max_len"])
    kjv = {cols[2]: cols[0] for cols in (line.rstrip("\n").split("\t") for line in open(a.kjv, encoding="utf-8"))}
    predicted = [line.split("\t")[2] for line in open(os.path.join(a.run, "evals", "test", "predictions.tsv"),
                                                        encoding="utf-8").readlines()[1:]]
    in_run = [pairs[i][1] for i in test if fits(pairs[i][0]) and fits(pairs[i][1])]
    same = sum(p == r for p, r in zip(predicted, in_run))
    if len(predicted) != len(in_run) or same < 0.99 * len(in_run):
        sys.exit(f"the recomputed test split does not match the run's ({len(in_run)} verses, the run scored "
                 f"{len(predicted)}, {same} references equal)")
    kept = [i for i in test if pairs[i][2] in kjv and all(fits(t) for t in (pairs[i][0], pairs[i][1], kjv[pairs[i][2]]))]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "web.tsv"), "w", encoding="utf-8") as w, \
         open(os.path.join(a.out, "kjv.tsv"), "w", encoding="utf-8") as k:
        for i in kept:
            w.write(f"{pairs[i][0]}\t{pairs[i][1]}\n")
            k.write(f"{kjv[pairs[i][2]]}\t{pairs[i][1]}\n")
    print(f"test split: {len(test)} verses, {len(in_run)} within max_len {task['max_len']} (the run's, all matched); "
          f"{len(kept)} with a KJV verse that fits too -> {a.out}/web.tsv, {a.out}/kjv.tsv")


if __name__ == "__main__":
    main()
