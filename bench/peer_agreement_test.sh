#!/usr/bin/env bash
# ctest bench.peer_agreement: the tiny benchmark configs (bench/compare.py --size tiny), Ablate
# against the PyTorch peer (bench/peer_torch.py check) with Debian's python3-torch 1.13: the
# same losses from the same initial weights and batches. Skipped (exit 77) without torch.
#   peer_agreement_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
here="$(cd "$(dirname "$0")" && pwd)"

if ! reason=$(/usr/bin/python3 -c 'import torch, h5py, numpy, yaml' 2>&1); then
  echo "SKIP: Debian's python3 cannot import torch, h5py, numpy and yaml (apt-get install python3-torch" \
       "libopenblas0-openmp python3-h5py python3-yaml): ${reason##*$'\n'}"
  exit 77
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$here/compare.py" --ablate-bin "$ablate" --size tiny --no-torch-release --out "$out"
