#!/usr/bin/env bash
# Runs the real `ablate` executable: documented exit codes, `plugins --json` output that a JSON
# parser (Debian's python3) accepts with the expected structure, and the OpenMP wait policy it
# starts itself with (GOMP_SPINCOUNT=1000 unless the user set one).
# Usage: cli_executable_test.sh <path/to/ablate> <fixture dir>
set -euo pipefail
ablate=$1
fixtures=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_code() {  # expect_code <code> <args...>
  local want=$1; shift
  set +e; "$ablate" "$@" >/dev/null 2>&1; local got=$?; set -e
  [ "$got" -eq "$want" ] || fail "ablate $* exited $got, expected $want"
}

expect_code 0 --version
expect_code 0 --help
expect_code 2
expect_code 2 no-such-command
expect_code 2 plugins --no-such-option
expect_code 0 plugins
expect_code 3 plugins --plugin-path "$fixtures/fixture_api_mismatch"
expect_code 3 plugins --plugin-path /nonexistent/dir
ABLATE_PLUGIN_PATH="$fixtures/not_a_plugin" expect_code 0 plugins  # a plain library beside plugins: skipped, with a note
ABLATE_PLUGIN_PATH="$fixtures/not_a_plugin/not_a_plugin.so" expect_code 3 plugins  # named as a plugin file: refused

json=$(ABLATE_PLUGIN_PATH="$fixtures/fixture_good" "$ablate" plugins --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
ids = {(p["kind"], p["name"]): p for p in doc["plugins"]}
assert ("schedule", "noam") in ids, ids.keys()
echo = ids[("fixture", "echo")]
opts = {o["name"]: o for o in echo["options"]}
assert opts["count"]["required"] is True and opts["count"]["default"] is None, opts["count"]
assert opts["mode"]["choices"] == ["fast", "slow", "exact"], opts["mode"]
assert opts["scale"]["type"] == "float" and opts["scale"]["default"] == "0.5"
assert echo["path"].endswith("fixture_good.so")
assert doc["problems"] == [], doc["problems"]
assert len(doc["search_path"]) == 2, doc["search_path"]
PY
# The wait policy: a training process has GOMP_SPINCOUNT=1000 in its environment when the user set
# neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT, and the user's setting otherwise.
here=$(cd "$(dirname "$0")" && pwd)
spec="$here/../../../bench/configs/A_enc_dec.yaml"
environ_of_run() {  # environ_of_run <env args...>: the environment of a running `ablate run`, one per line
  local out; out=$(mktemp -d)
  env "$@" "$ablate" run "$spec" --out "$out/run" --progress quiet --set train.steps=200 >/dev/null 2>&1 &
  local pid=$!
  sleep 0.5
  tr '\0' '\n' < "/proc/$pid/environ" || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$out"
}
environ_of_run -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT | grep -qx "GOMP_SPINCOUNT=1000" \
  || fail "ablate did not start itself with GOMP_SPINCOUNT=1000"
theirs=$(environ_of_run -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE)
echo "$theirs" | grep -qx "OMP_WAIT_POLICY=PASSIVE" || fail "the user's OMP_WAIT_POLICY is not in the run's environment"
echo "$theirs" | grep -q "^GOMP_SPINCOUNT=" && fail "ablate set GOMP_SPINCOUNT although the user chose OMP_WAIT_POLICY"
echo "cli executable: all checks passed"
