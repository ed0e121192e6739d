"""Asserts what each tutorial spec (experiments/tutorials) is meant to show, on the run files
tutorials_test.sh produced at CI size. Usage: check_tutorials.py OUT_DIR (one folder per spec).
Exits 1 with the first broken expectation.
"""
import glob
import math
import os
import sys

import h5py


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def runs(out, name):
    files = sorted(glob.glob(os.path.join(out, name, "run.h5")) + glob.glob(os.path.join(out, name, "*", "run.h5")))
    if not files:
        sys.exit(f"FAIL {name}: no run.h5 under {out}/{name}")
    return [h5py.File(f, "r") for f in files]


def expect(ok, name, what):
    if not ok:
        sys.exit(f"FAIL {name}: {what}")
    print(f"ok   {name}: {what}")


def last_eval(f, metric):
    return float(f["metrics/eval"][metric][-1])


def check_d2l(out):
    (f,) = runs(out, "d2l_translation")
    cols = set(f["metrics/eval"].keys())
    expect({"bleu", "sentence_bleu", "n_bleu_gt_0", "n_bleu_gt_0_8", "n_sentences"} <= cols, "d2l_translation",
           "eval reports corpus BLEU, the k=2 sentence BLEU and the counts of sentences with BLEU > 0 and > 0.8")
    expect(int(last_eval(f, "n_sentences")) == 50, "d2l_translation", "evaluates on the 50 train pairs (valid_fraction 0)")
    expect(last_eval(f, "n_bleu_gt_0_8") >= 25, "d2l_translation",
           f"memorises the pairs: {int(last_eval(f, 'n_bleu_gt_0_8'))} of 50 sentences with BLEU > 0.8")
    expect("attention/decode/cross/layer_1" in f, "d2l_translation", "records the second block's cross-attention per decode step")
    cross = f["attention/decode/cross/layer_1"]
    expect(cross.shape[2] == 4, "d2l_translation", f"per head (4 heads): shape {cross.shape}")
    preds = [text(p) for p in f["samples/prediction"][-1]]
    expect(any(any("\u4e00" <= c <= "\u9fff" for c in p) for p in preds), "d2l_translation",
           f"decoded samples are Chinese characters, e.g. {preds[0]!r}")


def check_small_prenorm(out):
    (f,) = runs(out, "small_prenorm_seq2seq")
    expect(last_eval(f, "exact_match") >= 0.75, "small_prenorm_seq2seq",
           f"greedy decoding reproduces the toy pairs (exact_match {last_eval(f, 'exact_match')})")
    plugins = [text(p) for p in f.attrs["plugins"]]
    expect(any(p.startswith("block/pre_norm") for p in plugins), "small_prenorm_seq2seq", "trained with block/pre_norm")
    expect("attention/decode/cross/layer_0" in f, "small_prenorm_seq2seq", "per-decode-step cross-attention recorded")


def check_bert(out):
    (f,) = runs(out, "bert_encoder")
    spec = text(f.attrs["resolved_spec_yaml"])
    expect("embedding_norm: true" in spec and "embedding_norm_eps: 1e-12" in spec, "bert_encoder",
           "embeddings LayerNorm with eps 1e-12")
    expect(text(f.attrs["status"]) == "completed", "bert_encoder", "the encoder classifier trains to the end")
    expect("accuracy" in f["metrics/eval"] and "test_accuracy" in f["metrics/eval"], "bert_encoder",
           "eval and test accuracy recorded")


def check_toy(out):
    fs = runs(out, "toy_pair_convergence")
    expect(len(fs) == 3, "toy_pair_convergence", "three seeds")
    for f in fs:
        reason = text(f.attrs["reason"])
        step = int(f.attrs["step"])
        loss = float(f["metrics/train/loss"][-1])
        expect("loss_threshold" in reason and loss < 0.01, "toy_pair_convergence",
               f"seed {int(f.attrs['seed'])} stops at step {step} with train loss {loss:.2e} below the threshold")


def check_annotated(out):
    (f,) = runs(out, "annotated_random")
    floor = math.log(1000 - 3)
    first = float(f["metrics/train/loss"][0])
    expect(abs(first - floor) < 0.1 * floor, "annotated_random",
           f"the loss starts near ln(997) = {floor:.3f}: first logged mean {first:.3f}")
    expect(last_eval(f, "loss") > 0.9 * floor, "annotated_random",
           f"unseen random pairs stay near chance: eval loss {last_eval(f, 'loss'):.3f}")
    expect("test_loss" not in f["metrics/eval"], "annotated_random", "synthetic tasks have no test split")


def check_causal_lm(out):
    by_mask = {}
    for f in runs(out, "tiny_causal_lm"):
        causal = "causal: true" in text(f.attrs["resolved_spec_yaml"])
        by_mask[causal] = last_eval(f, "loss")
        expect("attention/decoder/self/layer_1" in f, "tiny_causal_lm", "per-head self-attention recorded")
        mask = text(f["attention/decoder/self/layer_0"].attrs["mask"])
        expect(("causal" in mask) == causal, "tiny_causal_lm", f"the recorded mask says '{mask}'")
    expect(set(by_mask) == {True, False}, "tiny_causal_lm", "both arms of the sweep ran")
    expect(by_mask[False] < 0.5 * by_mask[True], "tiny_causal_lm",
           f"without the mask the future leaks: eval loss {by_mask[False]:.3f} vs {by_mask[True]:.3f} with it")


def main(out):
    for check in (check_d2l, check_small_prenorm, check_bert, check_toy, check_annotated, check_causal_lm):
        check(out)


if __name__ == "__main__":
    main(sys.argv[1])
