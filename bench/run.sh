#!/usr/bin/env bash
# The benchmark in one command (bench/README.md): Ablate against PyTorch on configs A, B and
# B-bf16. Creates bench/.venv with the current PyTorch release from PyPI when missing (unless
# --no-torch-release), builds Ablate in Release into build/ (or uses ABLATE_BIN), then runs
# bench/compare.py with Debian's python3, passing every option on:
#
#   bench/run.sh [--size tiny|full] [--configs A,B,B-bf16] [--rounds 3] [--steps N] [--threads 2] [--no-torch-release]
#   bench/run.sh --gpu [--torch-python python3]   the cudnn backend against CUDA PyTorch (configs B-gpu, C-gpu)
#
# Environment: ABLATE_BIN (an existing ablate executable, ablate_op_bench beside it), BUILD_DIR
# (default build), PIP_ARGS (extra pip arguments, e.g. an --index-url for CPU-only wheels).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

release=1
for a in "$@"; do
  [ "$a" = "--no-torch-release" ] && release=0
  [ "$a" = "--gpu" ] && release=0  # the GPU machine's own CUDA PyTorch (--torch-python), no download
done

if [ "$release" = 1 ] && [ ! -x bench/.venv/bin/python ]; then
  echo "bench: creating bench/.venv with the current PyTorch release from PyPI (a large download)"
  /usr/bin/python3 -m venv bench/.venv
  # shellcheck disable=SC2086  # PIP_ARGS is a list of words
  bench/.venv/bin/pip install ${PIP_ARGS:-} torch numpy h5py pyyaml
fi

if [ -z "${ABLATE_BIN:-}" ]; then
  build="${BUILD_DIR:-build}"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build"
  ABLATE_BIN="$build/bin/ablate"
fi

exec /usr/bin/python3 bench/compare.py --ablate-bin "$ABLATE_BIN" "$@"
