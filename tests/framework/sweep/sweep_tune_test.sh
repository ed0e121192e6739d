#!/usr/bin/env bash
# `ablate sweep` of a spec with sweep.tune (per-arm learning rates), on the real executable:
#  1. uninterrupted, as the reference: the tuning runs (2 arms x 3 lr x 1 seed) in DIR/tuning, the
#     choices in DIR/tuning/selection.yaml, each confirmation run (2 arms x 2 seeds) at its arm's
#     chosen lr; the comparison's arms are the blocks (lr is no axis), and `ablate compare DIR`
#     never reads the tuning runs (`ablate compare DIR/tuning` does, with lr as an axis);
#  2. SIGKILL in the tuning phase, then the same command: every run of both phases equal to the
#     reference's bit for bit (same_results.py), the same choices;
#  3. SIGKILL in the confirmation phase, then again: the same;
#  4. successive halving: the rungs keep the best third, the cost is what the runs trained, and the
#     same command again trains nothing and chooses the same;
#  5. --dry-run and --status say the phase; a spec whose seeds overlap runs nothing (exit 2).
# Usage: sweep_tune_test.sh <path/to/ablate>
set -euo pipefail
ablate=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sweep_test_lib.sh"
same_choices() {  # two selection.yaml files alike but for the cost's wall time
  cmp -s <(grep -v '^cost:' "$1") <(grep -v '^cost:' "$2")
}

cat > "$tmp/spec.yaml" <<'YAML'
name: tuned_sweep
task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 512, eval_examples: 64}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, dropout: 0.0}
backend: onednn
train: {steps: 60, batch_size: 16, schedule: {plugin: constant}}
log: {every: 10, attention: {every: 0}}
eval: {every: 20, batches: 1}
sweep:
  grid: {model.block: [pre_norm, post_norm]}
  seeds: [2, 3]
  tune:
    grid: {train.optimizer.lr: [3.0e-4, 3.0e-3, 3.0e-2]}
    seeds: [1]
    metric: loss
YAML
sweep() { "$ablate" sweep "$tmp/spec.yaml" --progress lines "$@"; }

# 1. the reference
sweep --out "$tmp/ref" --jobs 2 > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; fail "reference sweep failed"; }
grep -q "tuning phase: 6 runs (2 arms x 3 settings x 1 seeds)" "$tmp/ref.log" || fail "reference: no tuning phase line"
[ "$(find "$tmp/ref/tuning" -maxdepth 2 -name run.h5 | wc -l)" -eq 6 ] || fail "reference: expected 6 tuning run files"
[ "$(find "$tmp/ref" -maxdepth 2 -name run.h5 | wc -l)" -eq 4 ] || fail "reference: expected 4 confirmation run files"
[ -s "$tmp/ref/tuning/selection.yaml" ] || fail "reference: no selection.yaml"
[ -s "$tmp/ref/figures/tuning_sensitivity.png" ] || fail "reference: no sensitivity figure"
# each confirmation run is at its arm's choice, and each arm's choice has the lowest tuning loss
/usr/bin/python3 - "$tmp/ref" <<'PY' || fail "reference: a confirmation run is not at its arm's best tuning lr"
import glob, os, sys
import h5py, yaml
d = sys.argv[1]
best = {}
for f in glob.glob(os.path.join(d, "tuning", "*", "run.h5")):
    with h5py.File(f, "r") as h:
        spec = yaml.safe_load(h.attrs["resolved_spec_yaml"])
        loss = float(h["metrics/eval/loss"][-1])
    arm, lr = spec["model"]["block"]["plugin"], float(spec["train"]["optimizer"]["lr"])
    if arm not in best or loss < best[arm][0]:
        best[arm] = (loss, lr)
sel = yaml.safe_load(open(os.path.join(d, "tuning", "selection.yaml")))
chosen = {a["arm"].split("=")[1]: float(a["chosen"]["train.optimizer.lr"]) for a in sel["arms"]}
for f in glob.glob(os.path.join(d, "*", "run.h5")):
    with h5py.File(f, "r") as h:
        spec = yaml.safe_load(h.attrs["resolved_spec_yaml"])
    arm, lr, seed = spec["model"]["block"]["plugin"], float(spec["train"]["optimizer"]["lr"]), spec["train"]["seed"]
    assert seed in (2, 3), f"{f}: seed {seed} is a tuning seed"
    assert lr == best[arm][1] == chosen[arm], f"{f}: lr {lr}, best {best[arm]}, chosen {chosen[arm]}"
PY
grep -q "^arms by model.block; baseline" "$tmp/ref.log" || fail "reference: the arms are not the blocks alone"
grep -q "^tuned_keys: \[train.optimizer.lr\]" "$tmp/ref/sweep.yaml" || fail "sweep.yaml lacks tuned_keys"
grep -Eq "^arm  *lr \(tuned\)  *n" "$tmp/ref.log" || fail "the comparison has no column of each arm's tuned lr"
grep -Eq "^- tuning \(sweep.tune; .*/tuning/selection.yaml\): each arm chose its setting by .* on tuning seeds 1 \(.*train.optimizer.lr .*\); the cost: 6 tuning runs, [0-9]+ steps, [0-9.e+-]+ s of run time" \
  "$tmp/ref/report.md" || fail "report.md does not say each arm's choice and the tuning's cost"
"$ablate" compare "$tmp/ref" --out "$tmp/cmp" > "$tmp/compare.log" 2>&1 || fail "compare of the directory failed"
grep -q "^arms by model.block; baseline" "$tmp/compare.log" || fail "compare: lr is an arm axis, or the tuning runs were read"
[ "$(grep -Ec '^[a-z_]+ +[0-9.e-]+ +2  ' "$tmp/compare.log")" -eq 2 ] || fail "compare: expected 2 arms of 2 runs (no tuning run)"
"$ablate" compare "$tmp/ref/tuning" --out "$tmp/cmp_tuning" > "$tmp/compare_tuning.log" 2>&1 || fail "compare of the tuning runs failed"
grep -q "^arms by model.block · train.optimizer.lr" "$tmp/compare_tuning.log" || fail "compare of DIR/tuning: lr should be an axis"

# 2. SIGKILL in the tuning phase
setsid "$ablate" sweep "$tmp/spec.yaml" --out "$tmp/k1" --jobs 2 --progress lines --no-compare > "$tmp/k1a.log" 2>&1 &
pid=$!
for _ in $(seq 1 6000); do [ "$(max_step "$tmp/k1/tuning")" -ge 30 ] && break; sleep 0.02; done
kill -KILL -- -"$pid"
wait "$pid" 2>/dev/null || true
gone "$tmp/k1/" || fail "the killed runs did not exit"
sweep --out "$tmp/k1" --status > "$tmp/k1_status.log" 2>&1
grep -q "confirmation phase: waits for tuning" "$tmp/k1_status.log" || { cat "$tmp/k1_status.log"; fail "SIGKILL came after tuning"; }
sweep --out "$tmp/k1" --jobs 2 --no-compare > "$tmp/k1b.log" 2>&1 || { cat "$tmp/k1b.log"; fail "the sweep after SIGKILL in tuning failed"; }
same_results "$tmp/ref/tuning" "$tmp/k1/tuning" || fail "tuning runs after SIGKILL differ"
same_results "$tmp/ref" "$tmp/k1" || fail "confirmation runs after SIGKILL in tuning differ"
same_choices "$tmp/ref/tuning/selection.yaml" "$tmp/k1/tuning/selection.yaml" || fail "other choices after SIGKILL in tuning"

# 3. SIGKILL in the confirmation phase
setsid "$ablate" sweep "$tmp/spec.yaml" --out "$tmp/k2" --jobs 2 --progress lines --no-compare > "$tmp/k2a.log" 2>&1 &
pid=$!
for _ in $(seq 1 12000); do [ "$(max_step "$tmp/k2")" -ge 30 ] && break; sleep 0.02; done
kill -KILL -- -"$pid"
wait "$pid" 2>/dev/null || true
gone "$tmp/k2/" || fail "the killed runs did not exit"
sweep --out "$tmp/k2" --status > "$tmp/k2_status.log" 2>&1
grep -q "^confirmation phase: 2 arms x 2 seeds" "$tmp/k2_status.log" || { cat "$tmp/k2_status.log"; fail "status: no confirmation phase"; }
grep -q "4 runs: 4 done" "$tmp/k2_status.log" && fail "SIGKILL came after the confirmation runs"
sweep --out "$tmp/k2" --jobs 2 --no-compare > "$tmp/k2b.log" 2>&1 || { cat "$tmp/k2b.log"; fail "the sweep after SIGKILL in confirmation failed"; }
grep -q "0 to run (0 resumed), 6 already done" "$tmp/k2b.log" || { cat "$tmp/k2b.log"; fail "tuning ran again"; }
same_results "$tmp/ref/tuning" "$tmp/k2/tuning" || fail "tuning runs differ"
same_results "$tmp/ref" "$tmp/k2" || fail "confirmation runs after SIGKILL differ"

# 4. successive halving (eta 3 from step 20: rungs 20, then 60): each arm keeps one of its three
#    settings at step 20; 4 runs stop there, 2 train on; the same command again trains nothing more
halving() { sweep --out "$tmp/half" --jobs 2 --no-compare --set sweep.tune.eta=3 --set sweep.tune.first_rung=20; }
halving > "$tmp/half1.log" 2>&1 || { cat "$tmp/half1.log"; fail "the halving sweep failed"; }
grep -q "tuning rung at step 20: kept 2 of 6 settings" "$tmp/half1.log" || fail "halving: not 2 of 6 kept at step 20"
grep -q "tuning cost: 6 runs, 200 steps trained in all" "$tmp/half1.log" || fail "halving: expected 4 x 20 + 2 x 60 steps"
[ "$(grep -c 'pruned_at: 20' "$tmp/half/tuning/selection.yaml")" -eq 4 ] || fail "halving: 4 settings pruned at 20 expected"
[ "$(find "$tmp/half" -maxdepth 2 -name run.h5 | wc -l)" -eq 4 ] || fail "halving: expected 4 confirmation runs"
cp "$tmp/half/tuning/selection.yaml" "$tmp/half_selection.yaml"
halving > "$tmp/half2.log" 2>&1 || { cat "$tmp/half2.log"; fail "the halving sweep run again failed"; }
[ "$(grep -c '^  0 to run' "$tmp/half2.log")" -eq 3 ] || { cat "$tmp/half2.log"; fail "halving again: something ran"; }
same_choices "$tmp/half/tuning/selection.yaml" "$tmp/half_selection.yaml" || fail "halving again: other choices"

# 5. --dry-run; seeds that overlap run nothing
sweep --out "$tmp/dry" --dry-run > "$tmp/dry.log" 2>&1 || fail "dry run failed"
grep -q "confirmation phase: 2 arms x 2 seeds at each arm's chosen setting" "$tmp/dry.log" || fail "dry run: no confirmation line"
[ ! -e "$tmp/dry" ] || fail "dry run wrote the directory"
sed 's/    seeds: \[1\]/    seeds: [1, 2]/' "$tmp/spec.yaml" > "$tmp/overlap.yaml"
set +e; "$ablate" sweep "$tmp/overlap.yaml" --out "$tmp/overlap" > "$tmp/overlap.log" 2>&1; code=$?; set -e
[ "$code" -eq 2 ] || { cat "$tmp/overlap.log"; fail "overlapping seeds: exit $code, expected 2"; }
grep -q "seed 2 is also in sweep.seeds" "$tmp/overlap.log" || fail "overlapping seeds: not named"
[ ! -e "$tmp/overlap" ] || fail "overlapping seeds: something was written"
echo PASS
