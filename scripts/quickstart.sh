#!/usr/bin/env bash
# README command 1, the main job: installs the missing Debian packages, builds Ablate (Release,
# in build/), and runs the quickstart ablation as a sweep: experiments/quickstart.yaml, a small
# encoder-decoder on the copy task (each run stops at 99% exact match), pre-norm vs post-norm x
# sinusoidal vs learned positions x ReLU vs GELU = 8 runs, 2 at a time with one thread each,
# into results/quickstart/. Then the sweep prints the comparison table against the base
# configuration (post-norm, sinusoidal, ReLU), with steps to 90% exact match, and writes
# report.md, summary.csv/json and figures/ there. Running it again skips the finished runs and
# resumes interrupted ones (Ctrl-C stops cleanly), so the second time it only prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

echo
build/bin/ablate --version
start=$(date +%s)
build/bin/ablate sweep experiments/quickstart.yaml --jobs 2 --threads-per-run 1
echo
echo "sweep took $(( $(date +%s) - start )) s; results in results/quickstart/: report.md, report.html, summary.csv, summary.json, table.tex, figures/"
echo "(status of the runs: build/bin/ablate sweep experiments/quickstart.yaml --status)"
