#!/usr/bin/env bash
# ctest python.package: the `ablate` Python package (python/) on a sweep made here (2 arms x 2
# seeds, copy task, early stopping at a target): installs with pip from the checkout (no network:
# --no-build-isolation), docs/examples/notebook.md's first block reproduces `ablate compare`'s arm
# means, and every loader agrees with h5py (check_package.py). Debian's python3 with its h5py,
# numpy, pandas (and PyYAML, to check the package's own spec reader against it).
#   ablate_package_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python=/usr/bin/python3
if ! reason=$("$python" -c 'import h5py, numpy, pandas, yaml' 2>&1); then
  echo "SKIP: Debian's python3 lacks h5py, numpy, pandas or yaml (scripts/setup.sh installs them): ${reason##*$'\n'}"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/spec.yaml" <<'YAML'
name: pandas_package
task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 256, eval_examples: 32}
model: {arch: encoder_decoder, d_model: 16, heads: 2, layers: 1, d_ff: 32, dropout: 0.0}
backend: onednn
train: {steps: 400, batch_size: 16, optimizer: {lr: 1.0e-2}, early_stopping: {metric: exact_match, target: 0.9}}
log: {every: 10, attention: {every: 50, probe_examples: 2}}
eval: {every: 20, batches: 1}
sweep: {grid: {model.ffn: [relu, gelu]}, seeds: [1, 2]}
YAML
"$ablate" sweep "$dir/spec.yaml" --out "$dir/sweep" --jobs 2 --progress quiet > "$dir/sweep.log" 2>&1 \
  || { cat "$dir/sweep.log"; exit 1; }

# pip-installable from the checkout (into a folder, then imported from there only)
cp -r "$root/python" "$dir/src"  # setuptools writes build/ beside the sources: not in the checkout
"$python" -m pip install -q --no-build-isolation --no-deps --no-index --target "$dir/site" "$dir/src" > "$dir/pip.log" 2>&1 \
  || { cat "$dir/pip.log"; exit 1; }
PYTHONPATH="$dir/site" "$python" "$here/check_package.py" "$dir/sweep" "$root/docs/examples/notebook.md"
echo PASS
