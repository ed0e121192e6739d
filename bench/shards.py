#!/usr/bin/python3
# The token-shard benchmark (issue "Real data"; bench/README.md, "Shards"): memory is bounded by
# the model, not the corpus. Trains config B's model (bench/configs/B_decoder_lm.yaml) from 20 MB
# and from 2 GB of token shards of the same text, alternating processes, and reports each one's
# peak RSS and tokens/s; also times `ablate tokenize` on 100 MB of text. Debian's python3 runs it.
#
#   /usr/bin/python3 bench/shards.py [--ablate build/bin/ablate] [--rounds 2] [--steps 30] [--work DIR]
#
# Needs data/bible_lm/web_en.txt (scripts/prepare_bible_lm.sh) and ~2.2 GB of free disk in --work
# (default: a temporary directory, removed afterwards).
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, run_process  # noqa: E402  (one way to run a process and read its peak RSS)

TEXT = os.path.join(ROOT, "data", "bible_lm", "web_en.txt")
TOKENIZER = "{plugin: sentencepiece, vocab_size: 8000, model_type: bpe}"
CONTEXT = 127  # config B's rows: bos + 127 tokens


def ablate(args, *argv):
    code, out, _ = run_process([args.ablate, *argv])
    if code != 0:
        sys.exit(f"shards.py: ablate {' '.join(argv[:2])} failed ({code}):\n{out[-2000:]}")
    return out


def write_shards(base_tokens, directory, total_tokens, per_shard, tokenizer_file):
    """`total_tokens` of the base text's tokens repeated, in shards of `per_shard` tokens, in
    llm.c's format (uint16: the 8k vocabulary), with the tokenizer file beside them."""
    os.makedirs(directory)
    shutil.copy(tokenizer_file, os.path.join(directory, "tokenizer-text.bin"))
    reps = -(-per_shard // len(base_tokens))
    tiled = np.tile(base_tokens, reps)
    written, i = 0, 0
    while written < total_tokens:
        n = min(per_shard, total_tokens - written)
        start = (written % len(base_tokens))
        body = np.concatenate([tiled[start:], tiled[:start]])[:n] if start else tiled[:n]
        header = np.zeros(256, np.int32)
        header[:3] = (20240520, 1, n)
        with open(os.path.join(directory, f"shard_{i:06d}.bin"), "wb") as f:
            f.write(header.tobytes())
            f.write(body.astype(np.uint16).tobytes())
        written += n
        i += 1
    return i


def spec_for(directory, steps, work, name):
    with open(os.path.join(ROOT, "bench", "configs", "B_decoder_lm.yaml")) as f:
        spec = yaml.safe_load(f)
    spec["name"] = "bench_b_shards"
    spec["task"] = {"plugin": "language_model", "shards": os.path.join(directory, "*.bin"), "context": CONTEXT,
                    "valid_fraction": 0.001, "test_fraction": 0.0, "tokenizer": yaml.safe_load(TOKENIZER)}
    spec["train"]["steps"] = steps
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(spec, f)
    return path, int(spec["train"]["batch_size"]) * (CONTEXT + 1)


def train(args, spec, tokens_per_step, out_dir):
    code, out, rss = run_process([args.ablate, "run", spec, "--out", out_dir, "--progress", "quiet"])
    if code != 0:
        sys.exit(f"shards.py: ablate run failed ({code}):\n{out[-2000:]}")
    with h5py.File(os.path.join(out_dir, "run.h5"), "r") as f:
        steps, elapsed = f["metrics/train/step"][:], f["metrics/train/elapsed_s"][:]
    return (steps[-1] - steps[0]) * tokens_per_step / (elapsed[-1] - elapsed[0]), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ablate", default=os.path.join(ROOT, "build", "bin", "ablate"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--work", default="")
    ap.add_argument("--large-gb", type=float, default=2.0)
    args = ap.parse_args()
    if not os.path.exists(TEXT):
        sys.exit(f"shards.py: {TEXT} is missing; run scripts/prepare_bible_lm.sh first")
    work = args.work or tempfile.mkdtemp(prefix="ablate_shards_bench_")
    os.environ.setdefault("ABLATE_CACHE_DIR", os.path.join(work, "cache"))
    try:
        base = os.path.join(work, "base")
        ablate(args, "tokenize", "--tokenizer", TOKENIZER, "--train", TEXT, "--out", base, TEXT)
        tokenizer_file = os.path.join(base, "tokenizer-text.bin")
        tokens = np.fromfile(os.path.join(base, "web_en.bin"), dtype=np.uint16, offset=1024)

        # Tokenizing 100 MB of text with the trained tokenizer (its training is not in the time).
        big = os.path.join(work, "text_100mb.txt")
        with open(TEXT, "rb") as f:
            text = f.read()
        with open(big, "wb") as f:
            for _ in range(-(-100_000_000 // len(text))):
                f.write(text)
        mb = os.path.getsize(big) / 1e6
        start = time.monotonic()
        ablate(args, "tokenize", "--tokenizer-file", tokenizer_file, "--out", os.path.join(work, "t100"), big)
        print(f"tokenize: {mb:.0f} MB of text in {time.monotonic() - start:.1f} s "
              f"({mb / (time.monotonic() - start):.1f} MB/s)", flush=True)
        os.remove(big)
        shutil.rmtree(os.path.join(work, "t100"))

        small, large = os.path.join(work, "small"), os.path.join(work, "large")
        n_small = write_shards(tokens, small, 10_000_000, 10_000_000, tokenizer_file)  # 20 MB of uint16
        total_large = int(args.large_gb * 1e9 / 2)
        n_large = write_shards(tokens, large, total_large, 50_000_000, tokenizer_file)  # 100 MB shards
        size = lambda d: sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.startswith("shard_")) / 1e6
        print(f"shards: small {size(small):,.0f} MB in {n_small} shard, large {size(large):,.0f} MB in {n_large} shards",
              flush=True)
        os.sync()  # the 2 GB written back to disk now, not by the kernel while a run is timed

        results = {"small": ([], []), "large": ([], [])}
        specs = {k: spec_for(d, args.steps, work, k) for k, d in (("small", small), ("large", large))}
        for r in range(args.rounds):
            for k in ("small", "large") if r % 2 == 0 else ("large", "small"):
                tps, rss = train(args, *specs[k], os.path.join(work, f"{k}_{r}"))
                results[k][0].append(tps)
                results[k][1].append(rss)
                print(f"round {r + 1} {k}: {tps:,.0f} tokens/s, peak RSS {rss:,.0f} MiB", flush=True)
        med = {k: (statistics.median(v[0]), max(v[1])) for k, v in results.items()}
        print(f"\n| shards | tokens/s (median of {args.rounds}) | peak RSS (max) |\n|---|---:|---:|")
        for k in ("small", "large"):
            print(f"| {k} ({size(small if k == 'small' else large):,.0f} MB) | {med[k][0]:,.0f} | {med[k][1]:,.0f} MiB |")
        ratio = med["large"][0] / med["small"][0]
        print(f"\nlarge / small: tokens/s {ratio:.3f} (target within 3%), peak RSS {med['large'][1] - med['small'][1]:+,.0f} MiB "
              "(target within 50 MiB)")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
