#!/usr/bin/env bash
# The plugin SDK round trip: install Ablate into a temporary prefix, build the out-of-tree
# example plugins against that install in separate build trees, load schedule/linear with the
# installed `ablate` (via ABLATE_PLUGIN_PATH, then installed next to the built-in plugins), and
# train the copy task with positional_encoding/rotary (positions inside attention).
# Usage: install_roundtrip.sh <ablate build dir> <examples dir>
set -euo pipefail
build=$1
example=$2/schedule_linear
rotary=$2/positional_encoding_rotary
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
[ -x "$work/prefix/bin/ablate" ] || fail "install did not put bin/ablate in the prefix"
"$work/prefix/bin/ablate" --version

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$example" -B "$work/example-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example-build"
plugin="$work/example-build/schedule_linear.so"
[ -f "$plugin" ] || fail "the example did not build $plugin"

check() {  # check <json> <expected path of schedule/linear>
  /usr/bin/python3 - "$1" "$2" "$work/prefix" <<'PY'
import json, os, sys
doc, want_path, prefix = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
ids = {(p["kind"], p["name"]): p for p in doc["plugins"]}
linear = ids[("schedule", "linear")]
assert os.path.realpath(linear["path"]) == os.path.realpath(want_path), linear["path"]
assert [o["name"] for o in linear["options"]] == ["lr", "warmup", "total_steps"], linear["options"]
assert linear["options"][2]["required"] is True
noam = ids[("schedule", "noam")]  # built-ins are found relative to the installed executable
assert os.path.realpath(noam["path"]).startswith(os.path.realpath(prefix)), noam["path"]
assert doc["problems"] == [], doc["problems"]
PY
}

json=$(ABLATE_PLUGIN_PATH="$work/example-build" "$work/prefix/bin/ablate" plugins --json)
check "$json" "$plugin"

cmake --install "$work/example-build" --prefix "$work/prefix" >/dev/null
installed=$(find "$work/prefix" -name schedule_linear.so | head -1)
[ -n "$installed" ] || fail "installing the example did not place schedule_linear.so"
json=$("$work/prefix/bin/ablate" plugins --json)
check "$json" "$installed"

# positional_encoding/rotary: built out of tree, it trains an encoder-decoder on the copy task.
cmake -S "$rotary" -B "$work/rotary-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/rotary-build"
cat > "$work/rotary_copy.yaml" <<'YAML'
name: rotary_copy
task: {plugin: copy, vocab_size: 12, min_len: 2, max_len: 6, train_examples: 2000, eval_examples: 64}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, dropout: 0.0, block: pre_norm, positional_encoding: rotary}
train: {steps: 300, batch_size: 32, schedule: {plugin: constant}, optimizer: {lr: 3.0e-3}}
log: {every: 100}
eval: {every: 300, batches: 2}
YAML
ABLATE_PLUGIN_PATH="$work/rotary-build" "$work/prefix/bin/ablate" run "$work/rotary_copy.yaml" --out "$work/rotary_run" \
  --progress quiet || fail "the copy task with the out-of-tree rotary positions did not train"
/usr/bin/python3 - "$work/rotary_run/run.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    plugins = [p.decode() if isinstance(p, bytes) else p for p in f.attrs["plugins"]]
    assert any(p.startswith("positional_encoding/rotary 1.0.0") for p in plugins), plugins
    assert f.attrs["status"] in ("completed", b"completed"), f.attrs["status"]
    acc = f["metrics/eval/token_accuracy"][-1]
    assert acc > 0.5, f"token accuracy {acc} after 300 steps: rotary positions did not let it learn to copy (chance 0.08)"
print(f"rotary copy: token accuracy {acc:.3f}")
PY
echo "sdk round trip: installed ablate loads the out-of-tree plugins; rotary positions train the copy task"
