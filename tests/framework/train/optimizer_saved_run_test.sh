#!/usr/bin/env bash
# Adam and AdamW as plugins train bit for bit as the framework's built-in Adam did: the fixture
# tests/fixtures/optimizer_before/spec.yaml rerun under adam (L2 decay), adamw (betas 0.9/0.95)
# and adamw in bf16 must log the same per-step train loss and grad norm, to the last bit, as the
# build before optimizers became plugins saved in losses.txt (commit 808cf4b, the reference backend).
# The reference runs without its optional ops (optional_ops: none), as ops.cpp's compositions: its
# fused linear_dropout (plugin API 24) keeps act' as f32 where that build's linear and dropout
# kept it in double (1e-8 apart); every other fusion since equals its composition bit for bit.
# Usage: optimizer_saved_run_test.sh <path/to/ablate>
set -euo pipefail
ablate=$1
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../../fixtures/optimizer_before
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=PASSIVE

run() {  # run NAME --set ...
  local name=$1
  shift
  "$ablate" run "$fixture/spec.yaml" --out "$tmp/$name" --progress quiet --set backend.optional_ops=none "$@" > "$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log"; echo "FAIL: the $name run exited non-zero"; exit 1; }
}
run adam --set train.optimizer.weight_decay=0.01
run adamw --set train.optimizer=adamw --set train.optimizer.weight_decay=0.1 --set train.optimizer.beta2=0.95
run adamw_bf16 --set train.optimizer=adamw --set train.optimizer.weight_decay=0.1 --set precision=bf16

/usr/bin/python3 - "$tmp" "$fixture/losses.txt" <<'PY'
import sys
import h5py
tmp, saved = sys.argv[1], sys.argv[2]
want = {}
for line in open(saved):
    if line.startswith("#") or not line.strip():
        continue
    variant, step, loss, norm = line.split()
    want.setdefault(variant, []).append((int(step), float.fromhex(loss), float.fromhex(norm)))
bad = 0
for variant, rows in want.items():
    g = h5py.File(f"{tmp}/{variant}/run.h5", "r")["metrics/train"]
    got = list(zip((int(s) for s in g["step"][:]), (float(x) for x in g["loss"][:]), (float(x) for x in g["grad_norm"][:])))
    if got != rows:
        first = next((i for i, (a, b) in enumerate(zip(got, rows)) if a != b), min(len(got), len(rows)))
        print(f"FAIL: {variant}: step {first + 1} differs from the saved run: got {got[first:first + 1]}, saved {rows[first:first + 1]}")
        bad += 1
    else:
        print(f"ok: {variant}: {len(rows)} steps, loss and grad norm bit for bit as saved")
sys.exit(1 if bad else 0)
PY
