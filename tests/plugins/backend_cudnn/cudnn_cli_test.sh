#!/usr/bin/env bash
# backend/cudnn through the real `ablate`: `ablate plugins` lists it with its options and no
# problem; a spec choosing it validates; and `ablate run` with it either trains (a machine with
# an NVIDIA driver and GPU) or, without one, exits 3 with an error that says there is no GPU and
# what to do, leaving no run behind.
# Usage: cudnn_cli_test.sh <path/to/ablate> <repo root>
set -euo pipefail
ablate=$1
root=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

json=$("$ablate" plugins --json)
/usr/bin/python3 - "$json" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
ids = {(p["kind"], p["name"]): p for p in doc["plugins"]}
cudnn = ids.get(("backend", "cudnn"))
assert cudnn is not None, "backend/cudnn is not listed: %s" % sorted(ids)
opts = {o["name"]: o for o in cudnn["options"]}
assert set(opts) == {"device", "deterministic", "fused_attention", "tf32"}, opts.keys()
assert opts["deterministic"]["default"] == "true" and opts["tf32"]["default"] == "false", opts
assert doc["problems"] == [], doc["problems"]
PY
"$ablate" plugins >"$tmp/plugins"
grep -q "backend/cudnn" "$tmp/plugins" || fail "'ablate plugins' does not show backend/cudnn"

spec="$root/experiments/quickstart.yaml"
"$ablate" validate "$spec" --set backend.plugin=cudnn >/dev/null || fail "a spec choosing cudnn does not validate"

set +e
"$ablate" run "$spec" --set backend.plugin=cudnn --set train.steps=20 --set train.schedule.warmup=5 --out "$tmp/runs" >"$tmp/out" 2>"$tmp/err"
code=$?
set -e
if /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null && [ -e /dev/nvidia0 ]; then
  [ "$code" -eq 0 ] || { cat "$tmp/err" >&2; fail "ablate run with cudnn on a GPU machine exited $code"; }
  grep -q "cuda:" "$tmp/out" || fail "the run does not report its CUDA device"
else
  [ "$code" -eq 3 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "ablate run with cudnn and no GPU exited $code, expected 3"; }
  grep -q "no NVIDIA driver" "$tmp/err" || { cat "$tmp/err" >&2; fail "the error does not say there is no GPU"; }
  grep -q "backend: onednn" "$tmp/err" || { cat "$tmp/err" >&2; fail "the error does not name a CPU backend to use"; }
  if [ -d "$tmp/runs" ] && [ -n "$(find "$tmp/runs" -name '*.h5' -print -quit)" ]; then
    fail "a run that could not start left a run file behind"
  fi
fi
echo "ok"
