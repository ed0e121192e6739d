#!/usr/bin/env bash
# The OpenMP wait policy's effect on training speed (docs/training.md, "Waiting threads"): bench
# config A's tokens/s under Ablate's own policy (no variable set), libgomp's default spin
# (GOMP_SPINCOUNT=300000) and OMP_WAIT_POLICY=PASSIVE, on an idle machine and with a busy loop on
# one core; the settings alternate, ROUNDS times. Usage: bench/wait_policy.sh [path/to/ablate] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/bin/ablate}
rounds=${2:-2}
tmp=$(mktemp -d)
trap 'pkill -f "while :; do :; done" 2>/dev/null || true; rm -rf "$tmp"' EXIT
tokens_per_s() {  # target tokens (2048 per step) between the first and last train rows, over their elapsed seconds
  /usr/bin/python3 -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r'); s = f['metrics/train/step'][:]; e = f['metrics/train/elapsed_s'][:]
print(round((s[-1] - s[0]) * 2048 / (e[-1] - e[0])))" "$1/run.h5"
}
echo "| round | load | setting | tokens/s |"
echo "|---|---|---|---:|"
for round in $(seq "$rounds"); do
  for load in idle busy; do
    for setting in ablate libgomp_default PASSIVE; do
      out="$tmp/${round}_${load}_${setting}"
      if [ "$load" = busy ]; then (timeout 120 sh -c 'while :; do :; done' &); sleep 0.5; fi
      case $setting in
        ablate) envs=(-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT) ;;
        libgomp_default) envs=(-u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000) ;;
        PASSIVE) envs=(-u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE) ;;
      esac
      env "${envs[@]}" "$bin" run "$here/configs/A_enc_dec.yaml" --out "$out" --progress quiet > /dev/null
      pkill -f "while :; do :; done" 2>/dev/null || true
      echo "| $round | $load | $setting | $(tokens_per_s "$out") |"
    done
  done
done
