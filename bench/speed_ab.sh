#!/usr/bin/env bash
# Is one build of Ablate slower than another? Trains benchmark configs A and B with the two
# executables, alternating process by process for ROUNDS rounds of STEPS steps, and prints each run's
# median train tokens/s (the first logged row, warm-up, left out) and last loss. Run on a quiet machine.
# Usage: bench/speed_ab.sh OLD_ABLATE NEW_ABLATE [ROUNDS=3] [STEPS=40]
# OLD_CONFIGS=DIR: the old build's copy of bench/configs, where its spec keys differ (an old
# checkout's bench/configs; the configs should differ in nothing else).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/speed_ab.sh OLD_ABLATE NEW_ABLATE [ROUNDS] [STEPS]" >&2; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); rounds=${3:-3}; steps=${4:-40}
old_configs=$(realpath "${OLD_CONFIGS:-bench/configs}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for cfg in A_enc_dec B_decoder_lm; do
  for r in $(seq "$rounds"); do
    for which in old new; do
      bin=$old configs=$old_configs
      [ "$which" = new ] && bin=$new configs=bench/configs
      out="$work/$cfg-$which-$r"
      "$bin" run "$configs/$cfg.yaml" --set train.steps="$steps" --set log.every=5 --set eval.every=100000 \
        --out "$out" --progress quiet > "$out.log" 2>&1 || { echo "$cfg $which round $r failed:"; tail -3 "$out.log"; exit 1; }
      /usr/bin/python3 - "$out/run.h5" "$cfg" "$which" "$r" <<'PY'
import sys
import h5py, numpy as np
path, cfg, which, r = sys.argv[1:]
with h5py.File(path, "r") as f:
    tps, loss = f["metrics/train/tokens_per_s"][()], f["metrics/train/loss"][()]
print(f"{cfg} {which} round {r}: median {np.median(tps[1:]):.0f} tok/s ({len(tps) - 1} rows), last loss {loss[-1]:.6f}")
PY
    done
  done
done
