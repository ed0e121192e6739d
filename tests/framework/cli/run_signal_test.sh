#!/usr/bin/env bash
# Ctrl-C on a real `ablate run`: the run finishes its step, writes a checkpoint, records status
# "interrupted", exits 130; `--resume` continues from that step. SIGTERM behaves the same. SIGKILL
# leaves a readable run file (status "running") and a resumable checkpoint.
# Usage: run_signal_test.sh <path/to/ablate>
set -euo pipefail
ablate=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# attr <run.h5> <name>: a root attribute of a run file, read with Debian's h5py (SWMR, as a live reader would).
attr() {
  /usr/bin/python3 -c 'import h5py, sys
v = h5py.File(sys.argv[1], "r", swmr=True).attrs[sys.argv[2]]
print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/long.yaml" <<'YAML'
name: long_copy
task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 4000, eval_examples: 64}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, block: pre_norm}
backend: reference
train: {steps: 1000000, batch_size: 16}
log: {every: 5}
eval: {every: 1000000, batches: 1}
YAML

stop_with() {  # stop_with <signal> <out dir> [extra args]: starts a run, signals it once it logs, checks the result
  local sig=$1 out=$2; shift 2
  "$ablate" run "$tmp/long.yaml" --out "$out" --progress lines "$@" > "$out.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do
    [ -f "$out/run.h5" ] && [ "$(attr "$out/run.h5" step 2>/dev/null || echo 0)" -ge 10 ] && break
    sleep 0.2
  done
  [ "$(attr "$out/run.h5" step 2>/dev/null || echo 0)" -ge 10 ] || { kill -9 $pid; fail "the run never logged"; }
  kill "-$sig" $pid
  set +e; wait $pid; local code=$?; set -e
  [ "$code" -eq 130 ] || { cat "$out.log"; fail "SIG$sig: exit $code, expected 130"; }
  [ "$(attr "$out/run.h5" status)" = interrupted ] || fail "SIG$sig: run.h5 status is $(attr "$out/run.h5" status), not interrupted"
  [ -f "$out/checkpoint.bin" ] || fail "SIG$sig: no checkpoint"
  grep -q "continue with --resume" "$out.log" || fail "SIG$sig: no resume hint in the output"
}

stop_with INT "$tmp/run"
step=$(attr "$tmp/run/run.h5" step)
[ "$step" -gt 0 ] || fail "no step recorded"
"$ablate" run "$tmp/long.yaml" --out "$tmp/run" --resume --stop-after 3 --progress quiet > "$tmp/resume.log" 2>&1 ||
  { cat "$tmp/resume.log"; fail "resume failed"; }
grep -q "resuming at step $step " "$tmp/resume.log" || { cat "$tmp/resume.log"; fail "did not resume at step $step"; }
after=$(attr "$tmp/run/run.h5" step)
[ "$after" -eq $((step + 3)) ] || fail "after resume: step $after, expected $((step + 3))"

stop_with TERM "$tmp/term"

# SIGKILL: no chance to clean up. The run file must stay readable (status still "running", the
# rows of the last flushed interval), and the run resumes from its last checkpoint.
"$ablate" run "$tmp/long.yaml" --out "$tmp/kill" --progress lines --set eval.every=10 > "$tmp/kill.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  [ -f "$tmp/kill/checkpoint.bin" ] && [ "$(attr "$tmp/kill/run.h5" step 2>/dev/null || echo 0)" -ge 20 ] && break
  sleep 0.2
done
kill -9 $pid
set +e; wait $pid; set -e
[ "$(attr "$tmp/kill/run.h5" status)" = running ] || fail "SIGKILL: status $(attr "$tmp/kill/run.h5" status), expected running"
"$ablate" inspect "$tmp/kill" > "$tmp/inspect.log" 2>&1 || { cat "$tmp/inspect.log"; fail "inspect cannot read the killed run"; }
grep -q "the run died" "$tmp/inspect.log" || { cat "$tmp/inspect.log"; fail "inspect does not say the run died"; }
"$ablate" run "$tmp/long.yaml" --out "$tmp/kill" --set eval.every=10 --resume --stop-after 3 --progress quiet > "$tmp/kill_resume.log" 2>&1 ||
  { cat "$tmp/kill_resume.log"; fail "resume after SIGKILL failed"; }
[ "$(attr "$tmp/kill/run.h5" status)" = interrupted ] || fail "after resume --stop-after: not interrupted"
echo "ok: interrupted at step $step, resumed to $after; SIGTERM too; SIGKILL leaves a readable, resumable run"
