#!/usr/bin/env bash
# ctest results.tensorboard: log.tensorboard's event files read back by TensorBoard's own
# EventAccumulator (tests/.venv, scripts/setup.sh installs tensorboard from PyPI; skipped without):
#  1. a run written with log.tensorboard: every train/eval metric, per-layer statistic and
#     attention entropy equals run.h5's row (float32), the spec and decoded samples are texts;
#  2. `ablate export --format tensorboard` of the same run.h5 holds exactly what was written live,
#     and a second export into the same folder is refused;
#  3. a run read while it trains, then killed (SIGKILL) and resumed: its event file, like run.h5,
#     shows each step once, equal to run.h5's rows;
#  4. a sweep links its runs under SWEEP/tensorboard/ by arm and seed.
#   tensorboard_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
python="$root/tests/.venv/bin/python"
if ! reason=$("$python" -c 'import tensorboard, h5py, numpy' 2>&1); then
  echo "SKIP: tests/.venv has no tensorboard (scripts/setup.sh installs it from PyPI): ${reason##*$'\n'}"
  exit 77
fi
dir="$(mktemp -d)"
trap 'pkill -KILL -f -- "--out $dir/" 2>/dev/null || true; rm -rf "$dir"' EXIT
check() { "$python" "$here/tensorboard_check.py" "$@"; }

cat > "$dir/spec.yaml" <<YAML
name: tensorboard
task: {plugin: translation, file: $root/plugins/task_translation/tests/data/translation_eng_spa.tsv,
       source_tokens: word, target_tokens: word, max_len: 12}
model: {arch: encoder_decoder, d_model: 16, heads: 2, layers: 1, d_ff: 32, dropout: 0.0}
backend: onednn
train: {steps: 60, batch_size: 4}
log: {every: 10, tensorboard: true}
eval: {every: 20, batches: 1}
YAML

# 1. written live
"$ablate" run "$dir/spec.yaml" --out "$dir/run" --progress quiet > /dev/null
ls "$dir"/run/events.out.tfevents.* > /dev/null
check run "$dir/run" "$dir/run"

# 2. exported from run.h5
"$ablate" export "$dir/run" --format tensorboard --out "$dir/exported" > "$dir/export.log"
grep -q "tensorboard --logdir $dir/exported" "$dir/export.log" || { cat "$dir/export.log"; exit 1; }
check same "$dir/run" "$dir/exported"
set +e; "$ablate" export "$dir/run" --format tensorboard > "$dir/again.log" 2>&1; code=$?; set -e
[ "$code" -eq 2 ] && grep -q "already holds a TensorBoard event file" "$dir/again.log" || { cat "$dir/again.log"; echo "FAIL: a second export was not refused (exit $code)"; exit 1; }

# 3. read live, killed, resumed
"$ablate" run "$dir/spec.yaml" --set train.steps=100000 --set eval.every=500 --out "$dir/long" --progress quiet > /dev/null 2>&1 &
pid=$!
check live "$dir/long" 1500 300
kill -0 "$pid" 2> /dev/null || { echo "FAIL: the run ended before its event file was read live"; exit 1; }
kill -KILL "$pid"
wait "$pid" 2> /dev/null || true
"$ablate" run "$dir/spec.yaml" --set train.steps=100000 --set eval.every=500 --out "$dir/long" --resume --stop-after 40 \
  --progress quiet > /dev/null
check run "$dir/long" "$dir/long"

# 4. a sweep's links by arm and seed
cat > "$dir/sweep.yaml" <<YAML
extends: $dir/spec.yaml
name: tensorboard_sweep
train: {steps: 10}
eval: {every: 10}
sweep: {grid: {model.block: [pre_norm, post_norm]}, seeds: [1]}
YAML
"$ablate" sweep "$dir/sweep.yaml" --out "$dir/sweep" --no-compare --progress quiet > /dev/null
check runs "$dir/sweep/tensorboard" "block=pre_norm,seed=1" "block=post_norm,seed=1"
echo PASS
