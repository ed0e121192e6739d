#!/usr/bin/env bash
# ctest docs.load_in_torch: a tiny copy run is trained, scored by `ablate eval` and exported by
# `ablate export`; docs/examples/load_in_torch.py rebuilds it in PyTorch (Debian's python3-torch)
# from the exported file and scores the same eval examples teacher-forced: its loss must equal
# scores.json's within 1e-4 relative. The file is read with Python's `safetensors` where
# tests/.venv has it (scripts/setup.sh installs it from PyPI; the venv sees Debian's torch), and
# then must be; else with the example's own reader. Skipped (exit 77) without torch.
#   load_in_torch_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
python=/usr/bin/python3 want_reader="load_in_torch.py's reader"
if "$root/tests/.venv/bin/python" -c 'import safetensors, torch, yaml' 2>/dev/null; then
  python="$root/tests/.venv/bin/python" want_reader="safetensors"
fi
if ! reason=$("$python" -c 'import torch, yaml' 2>&1); then
  echo "SKIP: Debian's python3 cannot import torch and yaml (apt-get install python3-torch python3-yaml): ${reason##*$'\n'}"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/spec.yaml" <<'YAML'
name: load_in_torch
task: {plugin: copy, vocab_size: 9, min_len: 2, max_len: 6, train_examples: 2000, eval_examples: 48}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, dropout: 0.0, block: post_norm}
backend: onednn
train: {steps: 60, batch_size: 16, optimizer: {lr: 3.0e-3}, seed: 7}
log: {every: 20}
eval: {every: 60, batches: 3, metrics: [loss, exact_match]}
YAML
"$ablate" run "$dir/spec.yaml" --out "$dir/run" --progress quiet >/dev/null
"$ablate" eval "$dir/run" --split eval >/dev/null
"$ablate" export "$dir/run" >/dev/null
"$python" "$root/docs/examples/load_in_torch.py" "$dir/run/model.safetensors" \
  --predictions "$dir/run/evals/eval/predictions.tsv" > "$dir/torch.json"
/usr/bin/python3 - "$dir/run/evals/eval/scores.json" "$dir/torch.json" "$want_reader" <<'PY'
import json, sys
ablate = json.load(open(sys.argv[1]))
torch = json.loads(open(sys.argv[2]).read())
a, t = ablate["metrics"]["loss"], torch["loss"]
rel = abs(a - t) / abs(a)
print(f"ablate eval loss {a:.8f}, PyTorch {t:.8f} on {torch['examples']} examples ({torch['torch']}, "
      f"read with {torch['read_with']}): relative difference {rel:.2e}")
assert torch["read_with"].startswith(sys.argv[3]), (torch["read_with"], sys.argv[3])
assert torch["examples"] == ablate["examples"] == 48, (torch["examples"], ablate["examples"])
assert torch["checkpoint_step"] == "60", torch
sys.exit(0 if rel <= 1e-4 else 1)
PY
