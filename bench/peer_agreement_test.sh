#!/usr/bin/env bash
# ctest bench.peer_agreement: the tiny benchmark configs (bench/compare.py --size tiny), Ablate
# against the PyTorch peer (bench/peer_torch.py check) with Debian's python3-torch 1.13: the
# same losses from the same initial weights and batches; then every other optimizer plugin (sgd,
# lion, muon, adafactor) on tiny B against its peer (torch.optim.SGD; Lion, Muon and Adafactor
# written from their papers in peer_torch.py), and ALiBi at up to 512 tokens. Skipped (exit 77) without torch.
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

cd "$here/.."
tiny_b=(--set task.vocab_size=40 --set task.min_len=4 --set task.max_len=15 --set model.d_model=32 --set model.heads=4
        --set model.layers=2 --set model.d_ff=64 --set train.batch_size=4 --set model.dropout=0 --set model.attention_dropout=0
        --set model.embedding_dropout=0 --set train.steps=20 --set log.every=20 --set eval.every=20 --set backend.threads=1)
# One Ablate run on tiny B with the given --set options against the peer from the same weights and
# batches, each step's loss within the relative tolerance: agree NAME TOLERANCE OPTIONS...
agree() {
  local name="$1" tolerance="$2"; shift 2
  OMP_WAIT_POLICY=PASSIVE "$ablate" run bench/configs/B_decoder_lm.yaml "${tiny_b[@]}" "$@" \
    --out "$out/$name" --progress quiet --dump-reference "$out/$name.h5" > "$out/$name.log" 2>&1 ||
    { cat "$out/$name.log"; echo "FAIL: ablate run ($name)"; exit 1; }
  result=$(/usr/bin/python3 bench/peer_torch.py check "$out/$name.h5" --threads 1 --tolerance "$tolerance" | tail -1)
  echo "$name: $result"
  case "$result" in *'"ok": true'*) ;; *) echo "FAIL: $name disagrees with its PyTorch peer"; exit 1 ;; esac
}
# rule | train.optimizer | lr. Lion's sign turns rounding differences into whole steps of lr, so
# its trajectories part by ~1e-6 relative a step: a small lr keeps 20 steps within the tolerance.
for case in "sgd|{plugin: sgd, momentum: 0.9, nesterov: true}|0.05" "lion|lion|1e-4" "muon|muon|3e-3" \
            "adafactor|{plugin: adafactor, beta1: 0.9}|1e-2"; do
  IFS='|' read -r rule optimizer lr <<< "$case"
  agree "optimizer $rule" 2e-4 --set "train.optimizer=$optimizer" --set "train.optimizer.lr=$lr"
done
# ALiBi (the peer's slopes and biases written from Press et al. 2022, not from the plugin) on
# sequences up to 512 tokens of varying length: biases down to -m_h * 511 with padding masks, the
# lengths at which experiments/papers/length_extrapolation scores its models. On these sequences
# positions matter little to the loss: slopes 5% off part the losses by 1.5e-4 relative (measured),
# within the 2e-4 that A's drift needs, while the right slopes agree to 2e-7; so 1e-5 here.
agree "positions alibi" 1e-5 --set model.positional_encoding=alibi --set task.min_len=300 --set task.max_len=511 --set model.heads=4
