#!/usr/bin/env bash
# README command 1, the main job: installs the missing Debian packages, builds Ablate (Release,
# in build/), and runs the quickstart ablation: experiments/quickstart.yaml (a small
# encoder-decoder on the copy task, each run stopping at 99% exact match) with post-norm and
# pre-norm blocks, 3 seeds each, into a fresh directory under results/quickstart/; then compares
# the two arms (table, report.md, summary.csv/json) and draws the figures. Until `ablate sweep`
# exists, the arms x seeds loop is written out here.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

echo
build/bin/ablate --version
sweep="results/quickstart/main-$(date +%Y%m%d-%H%M%S)"  # a new directory each time: results are never overwritten
for block in post_norm pre_norm; do
  for seed in 1 2 3; do
    echo
    echo "== model.block=$block train.seed=$seed"
    build/bin/ablate run experiments/quickstart.yaml --out "$sweep/block=$block,seed=$seed" \
      --set model.block=$block --set train.seed=$seed --set log.attention.every=100 ||
      echo "(exit $?: a diverged or failed run is counted as such by the comparison)"
  done
done

echo
build/bin/ablate compare "$sweep" --baseline model.block=post_norm --threshold 0.9  # + steps to 90% exact match
echo
build/bin/ablate plot "$sweep"
