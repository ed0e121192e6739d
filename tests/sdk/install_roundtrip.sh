#!/usr/bin/env bash
# The plugin SDK round trip: install Ablate into a temporary prefix, build the out-of-tree
# example plugins against that install in separate build trees, load schedule/step with the
# installed `ablate` (via ABLATE_PLUGIN_PATH, then installed next to the built-in plugins), check
# installed plugins resolve their libraries, build a task on the installed synthetic helpers, build
# the component examples with their tests (ablate_add_plugin TESTS, the installed test kit), pass
# them with ctest and train the copy task with each, and with the installed rotary and alibi.
# Usage: install_roundtrip.sh <ablate build dir> <examples dir> [--no-training]
# --no-training (the sanitizer build's): everything but the copy-task runs, whose training loops
# the sanitizer suite covers with the built-in plugins.
set -euo pipefail
build=$1
examples=$2
training=1
[ "${3:-}" = --no-training ] && training=0
example=$examples/schedule_step
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
plugin="$work/example-build/schedule_step.so"
[ -f "$plugin" ] || fail "the example did not build $plugin"

check() {  # check <json> <expected path of schedule/step>
  /usr/bin/python3 - "$1" "$2" "$work/prefix" <<'PY'
import json, os, sys
doc, want_path, prefix = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
ids = {(p["kind"], p["name"]): p for p in doc["plugins"]}
step = ids[("schedule", "step")]
assert os.path.realpath(step["path"]) == os.path.realpath(want_path), step["path"]
assert [o["name"] for o in step["options"]] == ["lr", "gamma", "every", "warmup"], step["options"]
assert step["options"][2]["required"] is True
noam = ids[("schedule", "noam")]  # built-ins are found relative to the installed executable
assert os.path.realpath(noam["path"]).startswith(os.path.realpath(prefix)), noam["path"]
assert doc["problems"] == [], doc["problems"]
PY
}

json=$(ABLATE_PLUGIN_PATH="$work/example-build" "$work/prefix/bin/ablate" plugins --json)
check "$json" "$plugin"

cmake --install "$work/example-build" --prefix "$work/prefix" >/dev/null
installed=$(find "$work/prefix" -name schedule_step.so | head -1)
[ -n "$installed" ] || fail "installing the example did not place schedule_step.so"
json=$("$work/prefix/bin/ablate" plugins --json)
check "$json" "$installed"

# Installed plugins resolve every library they link: the built-ins find libablate in lib/ (their
# RUNPATH, from lib/ablate/plugins), and a plugin that links a shared library of its own finds it
# installed beside it, where the scan passes over it with a note rather than an error.
builtin_pe=$(find "$work/prefix" -name positional_encoding_rotary.so | head -1)
if ldd "$builtin_pe" | grep -q "not found"; then ldd "$builtin_pe"; fail "an installed built-in plugin has an unresolved library"; fi
helped=$work/helped_src
mkdir -p "$helped"
cat > "$helped/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(schedule_helped LANGUAGES CXX)
find_package(Ablate REQUIRED)
add_library(helped_rate SHARED rate.cpp)
ablate_add_plugin(schedule_helped SOURCES schedule_helped.cpp LINK_LIBRARIES helped_rate INSTALL)
install(TARGETS helped_rate LIBRARY DESTINATION ${ABLATE_PLUGIN_INSTALL_DIR})
CMAKE
echo 'double helped_rate(long step) { return 1e-3 / (1.0 + static_cast<double>(step)); }' > "$helped/rate.cpp"
cat > "$helped/schedule_helped.cpp" <<'CPP'
#include <ablate/schedule.hpp>
double helped_rate(long step);
namespace schedule_helped {
class Helped final : public ablate::Schedule {
 public:
  double learning_rate(std::int64_t step) const override { return helped_rate(static_cast<long>(step)); }
};
ablate::Component* create(const ablate::Options&) { return new Helped(); }
ABLATE_PLUGIN("schedule", "helped", "0.1.0", "1e-3 / (1 + step), from a library of its own", ablate::kNoOptions, create)
}  // namespace schedule_helped
CPP
cmake -S "$helped" -B "$work/helped-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/helped-build" >/dev/null
cmake --install "$work/helped-build" --prefix "$work/helped-prefix" >/dev/null
helped_so=$(find "$work/helped-prefix" -name schedule_helped.so | head -1)
[ -n "$helped_so" ] || fail "installing the helped plugin did not place schedule_helped.so"
if ldd "$helped_so" | grep -q "not found"; then ldd "$helped_so"; fail "the installed plugin does not find its own library"; fi
ABLATE_PLUGIN_PATH=$(dirname "$helped_so") "$work/prefix/bin/ablate" plugins --kind schedule > "$work/helped.out" 2> "$work/helped.err" ||
  { cat "$work/helped.err"; fail "a plugin's own library beside it made \`ablate plugins\` fail"; }
grep -q "schedule/helped" "$work/helped.out" || { cat "$work/helped.out"; fail "schedule/helped is not listed"; }
grep -q "note: skipped .*libhelped_rate.so" "$work/helped.err" || { cat "$work/helped.err"; fail "the helper was not passed over with a note"; }
echo "helped: the installed plugin loads its own library; the scan skips it with a note"

# A synthetic task of one's own from the installed SDK helpers (ablate/synthetic.hpp: the built-in
# tasks' options, validation and Philox streams): the source rotated left by one, trained briefly.
rotl=$work/rotl_src
mkdir -p "$rotl"
cat > "$rotl/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(task_rotate_left LANGUAGES CXX)
find_package(Ablate REQUIRED)
ablate_add_plugin(task_rotate_left SOURCES task_rotate_left.cpp)
CMAKE
cat > "$rotl/task_rotate_left.cpp" <<'CPP'
#include <algorithm>
#include <ablate/synthetic.hpp>
namespace task_rotate_left {
ablate::Component* create(const ablate::Options& o) {
  return new ablate::synthetic::Seq2Seq(o, "task/rotate_left", [](std::vector<std::int32_t> s) {
    std::rotate(s.begin(), s.begin() + 1, s.end());
    return s;
  });
}
ABLATE_PLUGIN("task", "rotate_left", "0.1.0", "Synthetic seq2seq: the source rotated left by one",
              ablate::options_of(ablate::synthetic::kOptions), create)
}  // namespace task_rotate_left
CPP
cmake -S "$rotl" -B "$work/rotl-build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/rotl-build" >/dev/null
cat > "$work/rotl.yaml" <<YAML
name: rotl
task: {plugin: rotate_left, vocab_size: 12, min_len: 2, max_len: 6, train_examples: 200, eval_examples: 16}
model: {arch: encoder_decoder, d_model: 16, heads: 2, layers: 1, d_ff: 24, dropout: 0.0}
train: {steps: 10, batch_size: 8, schedule: {plugin: constant}}
log: {every: 5}
eval: {every: 10, batches: 1}
YAML
ABLATE_PLUGIN_PATH="$work/rotl-build" "$work/prefix/bin/ablate" run "$work/rotl.yaml" --out "$work/rotl_run" \
  --progress quiet > /dev/null || fail "a task built on the installed ablate/synthetic.hpp did not run"
echo "rotate_left: a synthetic task from the installed SDK helpers trains"

# An example of examples/ built against the install, its kit tests (ablate/testing/kit.hpp) passed
# by ctest against the built module and the installed built-ins: example_with_tests NAME [BUILD].
example_with_tests() {
  local name=$1 build=${2:-$work/$1-build}
  cmake -S "$examples/$name" -B "$build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$build"
  ctest --test-dir "$build" --output-on-failure --no-tests=error > "$work/${name}_ctest.log" 2>&1 ||
    { cat "$work/${name}_ctest.log"; fail "the tests of examples/$name failed against the install"; }
  grep -E "^100% tests passed, 0 tests failed out of [1-9]" "$work/${name}_ctest.log" ||
    { cat "$work/${name}_ctest.log"; fail "ctest ran no tests of examples/$name"; }
}

# The copy task trained with the installed ablate (plugin path PATH): copy_run NAME PATH PLUGIN STEPS
# MIN_ACCURACY 'MODEL KEYS' [LR]; the run must record PLUGIN ("kind/name version") and reach
# MIN_ACCURACY token accuracy on eval (chance 0.08).
copy_run() {
  local name=$1 path=$2 plugin=$3 steps=$4 min_acc=$5 model=$6 lr=${7:-3.0e-3}
  if [ "$training" -eq 0 ]; then echo "$name copy: not trained (--no-training)"; return; fi
  cat > "$work/${name}_copy.yaml" <<YAML
name: ${name}_copy
task: {plugin: copy, vocab_size: 12, min_len: 2, max_len: 6, train_examples: 2000, eval_examples: 64}
model: {arch: encoder_decoder, d_model: 32, heads: 2, d_ff: 64, dropout: 0.0, $model}
train: {steps: $steps, batch_size: 32, schedule: {plugin: constant}, optimizer: {lr: $lr}}
log: {every: $steps}
eval: {every: $steps, batches: 2}
YAML
  ABLATE_PLUGIN_PATH="$path" "$work/prefix/bin/ablate" run "$work/${name}_copy.yaml" --out "$work/${name}_run" \
    --progress quiet > /dev/null || fail "the copy task with $plugin did not train"
  /usr/bin/python3 - "$work/${name}_run/run.h5" "$plugin" "$min_acc" "$name" <<'PY'
import sys, h5py
path, plugin, min_acc, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
with h5py.File(path, "r") as f:
    plugins = [p.decode() if isinstance(p, bytes) else p for p in f.attrs["plugins"]]
    assert any(p == plugin or p.startswith(plugin + " ") for p in plugins), plugins
    assert f.attrs["status"] in ("completed", b"completed"), f.attrs["status"]
    acc = f["metrics/eval/token_accuracy"][-1]
    assert acc > min_acc, f"token accuracy {acc}: {plugin} did not learn to copy (chance 0.08)"
print(f"{name} copy: token accuracy {acc:.3f}")
PY
}

# examples/ffn_reglu: an out-of-tree FFN; examples/positional_encoding_xpos: an encoding that
# treats q and k apart (rotate_queries / rotate_keys); examples/attention_gated: an attention
# variant composed from ablate::AttentionProjections (only its gate is its own);
# examples/block_deepnorm: a block that scales its sublayers' initial weights (Block::init_sublayers);
# examples/attention_differential: two maps over a v wider than q and k (ops::attention, API 19);
# examples/positional_encoding_yarn: rotary frequencies by parts (ops::rope with a table, API 19).
for name in ffn_reglu positional_encoding_xpos positional_encoding_yarn attention_gated block_deepnorm \
  attention_differential; do
  example_with_tests "$name"
done
copy_run reglu "$work/ffn_reglu-build" "ffn/reglu 1.0.0" 10 -1 "layers: 1, ffn: reglu"
copy_run gated "$work/attention_gated-build" "attention/gated 1.0.0" 300 0.4 "layers: 1, attention: gated"
copy_run differential "$work/attention_differential-build" "attention/differential 1.0.0" 300 0.4 \
  "layers: 1, attention: differential"
copy_run deepnorm "$work/block_deepnorm-build" "block/deepnorm 1.0.0" 300 0.3 "layers: 4, block: deepnorm" 1.0e-3
# Positions inside attention: the installed built-in rotary (q/k rotated) and alibi (logits biased
# by distance), and the out-of-tree xpos.
for pe in rotary alibi xpos; do
  copy_run "$pe" "$work/positional_encoding_xpos-build" "positional_encoding/$pe" 300 0.4 \
    "layers: 1, block: pre_norm, positional_encoding: $pe"
done
copy_run yarn "$work/positional_encoding_yarn-build" "positional_encoding/yarn 1.0.0" 300 0.4 \
  "layers: 1, block: pre_norm, positional_encoding: {plugin: yarn, scale: 2}"
trained="and train the copy task, as do the installed rotary and alibi"
[ "$training" -eq 1 ] || trained="(copy task not trained: --no-training)"
echo "sdk round trip: installed ablate loads the out-of-tree plugins; ffn/reglu, xpos, yarn, gated, differential and deepnorm pass their" \
  "kit tests $trained"
