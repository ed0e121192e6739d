#!/usr/bin/env bash
# End to end: `ablate sweep --executor slurm` on a real single-node Slurm cluster on loopback
# (slurm_cluster.sh beside this script). A 2-arm x 2-seed sweep goes in as ONE array job of 4
# tasks; with --wait every run completes, --status counts 4 done, and submitting again finds
# nothing to submit.
# Usage: slurm_sweep_test.sh <path/to/ablate>
# Exit codes: 0 pass; 1 fail; 77 skip (no root or no Slurm/munge installed; a failure instead
# when ABLATE_REQUIRE_SLURM=1).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <path/to/ablate>" >&2; exit 2; }
ablate=$(realpath "$1")
harness=$(dirname "$(realpath "$0")")/slurm_cluster.sh
tmp=$(mktemp -d)
cluster=$tmp/cluster
mkdir "$cluster"
trap '"$harness" stop "$cluster" >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# dump_logs: what a failure needs to be understood.
dump_logs() {
  local f
  for f in "$tmp"/*.log "$tmp"/sweep/slurm/* "$tmp"/sweep/*/ablate.log; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
  done
  echo "--- squeue"; timeout 10 squeue 2>&1 || true
  echo "--- sinfo"; timeout 10 sinfo 2>&1 || true
  for f in slurmctld slurmd; do echo "--- tail of $cluster/log/$f.log"; tail -n 30 "$cluster/log/$f.log" 2>/dev/null || true; done
}
fail() { echo "FAIL: $*" >&2; dump_logs >&2; exit 1; }
# attr <run.h5> <name>: a root attribute of a run file, read with Debian's h5py.
attr() {
  /usr/bin/python3 -c 'import h5py, sys
v = h5py.File(sys.argv[1], "r", swmr=True).attrs[sys.argv[2]]
print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}

set +e; up=$("$harness" start "$cluster" 2>&1); code=$?; set -e
if [ "$code" -eq 77 ]; then
  [ "${ABLATE_REQUIRE_SLURM:-0}" = 1 ] && { echo "FAIL: ABLATE_REQUIRE_SLURM=1 but: $up" >&2; exit 1; }
  echo "SKIP: $up"; exit 77
fi
[ "$code" -eq 0 ] || { echo "$up" >&2; echo "FAIL: the Slurm test cluster did not start" >&2; exit 1; }
echo "$up"
export SLURM_CONF=$cluster/slurm.conf

cat > "$tmp/spec.yaml" <<'YAML'
name: slurm_sweep
task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 512, eval_examples: 64}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64}
backend: reference
train: {steps: 30, batch_size: 16}
log: {every: 10}
eval: {every: 15, batches: 1}
sweep:
  grid: {model.block: [pre_norm, post_norm]}
  seeds: [1, 2]
YAML
sweep=$tmp/sweep
cd "$tmp"  # sbatch runs jobs in the submitting directory; keep it ours

# 1. Submit and wait: one array job of 4 tasks, all 4 runs completed.
set +e
timeout 300 "$ablate" sweep "$tmp/spec.yaml" --out "$sweep" --executor slurm --wait --progress lines > "$tmp/submit.log" 2>&1
code=$?
set -e
[ "$code" -ne 124 ] || fail "ablate sweep --executor slurm --wait: still running after 300 s"
[ "$code" -eq 0 ] || fail "ablate sweep --executor slurm --wait: exit $code"
grep -q 'submitted slurm job [0-9]' "$tmp/submit.log" || fail "no 'submitted slurm job <id>' line"
grep -q 'baseline' "$tmp/submit.log" || fail "--wait printed no comparison table"
[ -z "$(squeue -h -o %A)" ] || fail "--wait returned with jobs still in the queue"
mapfile -t scripts < <(find "$sweep/slurm" -maxdepth 1 -name '*.sbatch')
[ ${#scripts[@]} -eq 1 ] || fail "expected one .sbatch script in $sweep/slurm, found ${#scripts[@]}"
grep -q -- '--array=0-3' "${scripts[0]}" || fail "${scripts[0]} has no --array=0-3"
outputs=$(find "$sweep/slurm" -maxdepth 1 -type f ! -name '*.sbatch' | wc -l)
[ "$outputs" -ge 4 ] || fail "expected the output of 4 array tasks in $sweep/slurm, found $outputs files"
[ -f "$sweep/sweep.yaml" ] || fail "no sweep.yaml manifest"
runs=0
for block in pre_norm post_norm; do
  for seed in 1 2; do
    mapfile -t dirs < <(find "$sweep" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
                          -regex ".*/block=$block,seed=$seed-[0-9a-f]{12}")
    [ ${#dirs[@]} -eq 1 ] || fail "expected one folder block=$block,seed=$seed-<12 hex id>, found ${#dirs[@]}"
    [ -f "${dirs[0]}/ablate.log" ] || fail "${dirs[0]}: no ablate.log"
    status=$(attr "${dirs[0]}/run.h5" status 2>&1) || fail "${dirs[0]}/run.h5 unreadable: $status"
    [ "$status" = completed ] || fail "${dirs[0]}: status '$status', expected completed"
    runs=$((runs + 1))
  done
done
all=$(find "$sweep" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*-[0-9a-f]{12}' | wc -l)
[ "$all" -eq 4 ] || fail "expected 4 run folders in $sweep, found $all"

# 2. --status: one line per run, then the summary.
"$ablate" sweep "$tmp/spec.yaml" --out "$sweep" --status > "$tmp/status.log" 2>&1 || fail "--status: exit $?"
grep -q '4 runs: 4 done' "$tmp/status.log" || fail "--status does not say '4 runs: 4 done'"

# 3. Everything completed: a second submission submits nothing.
timeout 120 "$ablate" sweep "$tmp/spec.yaml" --out "$sweep" --executor slurm --progress lines > "$tmp/resubmit.log" 2>&1 ||
  fail "second --executor slurm: exit $?"
grep -q 'nothing to submit' "$tmp/resubmit.log" || fail "second --executor slurm does not say 'nothing to submit'"
! grep -q 'submitted slurm job' "$tmp/resubmit.log" || fail "second --executor slurm submitted a job"
[ -z "$(squeue -h -o %A)" ] || fail "second --executor slurm left a job in the queue"
[ "$(find "$sweep/slurm" -maxdepth 1 -name '*.sbatch' | wc -l)" -eq 1 ] || fail "second --executor slurm wrote another .sbatch"

echo "PASS: 4 runs through one Slurm array job ($(grep -o 'submitted slurm job [0-9]*' "$tmp/submit.log")), --status, nothing to resubmit"
