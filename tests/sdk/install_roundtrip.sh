#!/usr/bin/env bash
# The plugin SDK round trip: install Ablate into a temporary prefix, build the out-of-tree
# example plugin against that install in a separate build tree, and load it with the
# installed `ablate` (via ABLATE_PLUGIN_PATH, then installed next to the built-in plugins).
# Usage: install_roundtrip.sh <ablate build dir> <example source dir>
set -euo pipefail
build=$1
example=$2
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
echo "sdk round trip: installed ablate loads the out-of-tree plugin"
