#!/usr/bin/env bash
# README command 1, the main job: installs the missing Debian packages, builds Ablate (Release,
# in build/), and trains experiments/quickstart.yaml (the copy task to 99% exact match) into a
# fresh run directory under results/quickstart/. The default ablation sweep replaces the single
# run once `ablate sweep` exists.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

echo
build/bin/ablate --version
echo
out="results/quickstart/main-$(date +%Y%m%d-%H%M%S)"  # a new directory each time: results are never overwritten
build/bin/ablate run experiments/quickstart.yaml --out "$out"
echo
echo "run directory: $out (run.h5: metrics, attention, statistics; checkpoint.bin)"
