#!/usr/bin/env bash
# ctest bench.peer_agreement: the tiny benchmark configs (bench/compare.py --size tiny), Ablate
# against the PyTorch peer (bench/peer_torch.py check) with Debian's python3-torch 1.13: the
# same losses from the same initial weights and batches; then every other optimizer plugin (sgd,
# lion, muon, adafactor) on tiny B against its peer (torch.optim.SGD; Lion, Muon and Adafactor
# written from their papers in peer_torch.py). Skipped (exit 77) without torch.
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
# rule | train.optimizer | lr. Lion's sign turns rounding differences into whole steps of lr, so
# its trajectories part by ~1e-6 relative a step: a small lr keeps 20 steps within the tolerance.
for case in "sgd|{plugin: sgd, momentum: 0.9, nesterov: true}|0.05" "lion|lion|1e-4" "muon|muon|3e-3" \
            "adafactor|{plugin: adafactor, beta1: 0.9}|1e-2"; do
  IFS='|' read -r rule optimizer lr <<< "$case"
  OMP_WAIT_POLICY=PASSIVE "$ablate" run bench/configs/B_decoder_lm.yaml "${tiny_b[@]}" --set "train.optimizer=$optimizer" \
    --set "train.optimizer.lr=$lr" --out "$out/$rule" --progress quiet --dump-reference "$out/$rule.h5" > "$out/$rule.log" 2>&1 ||
    { cat "$out/$rule.log"; echo "FAIL: ablate run with optimizer $rule"; exit 1; }
  result=$(/usr/bin/python3 bench/peer_torch.py check "$out/$rule.h5" --threads 1 | tail -1)
  echo "optimizer $rule: $result"
  case "$result" in *'"ok": true'*) ;; *) echo "FAIL: optimizer $rule disagrees with its PyTorch peer"; exit 1 ;; esac
done
