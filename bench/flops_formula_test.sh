#!/usr/bin/env bash
# ctest bench.flops_formula: the training FLOPs a run records (docs/training.md, "Compute": the
# products counted as the model runs them, x3) against bench/compare.py's analytic formula for MFU,
# on configs A (encoder-decoder) and B (decoder-only LM) at toy sizes: one number, two derivations.
#   flops_formula_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
here="$(cd "$(dirname "$0")" && pwd)"
if ! reason=$(/usr/bin/python3 -c 'import h5py, numpy, yaml' 2>&1); then
  echo "SKIP: Debian's python3 cannot import h5py, numpy and yaml: ${reason##*$'\n'}"
  exit 77
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
small=(--set train.steps=2 --set log.every=1 --set eval.every=2 --set train.batch_size=4 --set model.d_model=32
       --set model.heads=2 --set model.d_ff=64 --set backend.threads=1 --progress quiet)
"$ablate" run "$here/configs/A_enc_dec.yaml" "${small[@]}" --set task.vocab_size=40 --set task.min_len=7 \
  --set task.max_len=7 -o "$out/A" >/dev/null
"$ablate" run "$here/configs/B_decoder_lm.yaml" "${small[@]}" --set model.layers=2 --set task.vocab_size=64 \
  --set task.min_len=15 --set task.max_len=15 -o "$out/B" >/dev/null
/usr/bin/python3 - "$here" "$out" <<'PY'
import sys, h5py, yaml
sys.path.insert(0, sys.argv[1])
import compare  # bench/compare.py: flops_per_step, the formula MFU is computed with
failed = False
for name in ("A", "B"):
    with h5py.File(f"{sys.argv[2]}/{name}/run.h5", "r") as f:
        spec = yaml.safe_load(f.attrs["resolved_spec_yaml"])
        flops = f["metrics/train/flops"][:]
    expected = compare.flops_per_step(spec)
    steps = [flops[0], flops[1] - flops[0]]  # each step's own count
    ok = all(abs(s - expected) <= 1e-9 * expected for s in steps)
    print(f"{name}: recorded {steps[0]:.6g} and {steps[1]:.6g} FLOPs per step, bench/compare.py {expected:.6g}:",
          "agree" if ok else "DIFFER")
    failed |= not ok
sys.exit(1 if failed else 0)
PY
