#!/bin/bash
# Runs every paper ablation of experiments/papers at the reduced size its "# ci:" line gives (each
# spec is a sweep), then check_papers.py asserts the trends that hold at that size. The Bible
# corpora come from data/, or are prepared into the work dir (work_dir.sh). Usage: papers_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" papers "$1"

bible=$(bible_en_es)
web_en=$(bible_lm)

# spec_chain SPEC: SPEC and every file its `extends:` chain loads (paths relative to each file), so
# a child spec that names no data file of its own still gets its base's file replaced.
spec_chain() {
  local spec=$1 base
  while [ -n "$spec" ]; do
    echo "$spec"
    base=$(sed -n 's/^extends:[[:space:]]*\([^#[:space:]]*\).*/\1/p' "$spec")
    [ -n "$base" ] && base=$(dirname "$spec")/$base
    spec=$base
  done
}

for spec in experiments/papers/*/*.yaml; do
  group=$(basename "$(dirname "$spec")")
  name=$(basename "$spec" .yaml)
  ci=$(sed -n 's/^# ci://p' "$spec")
  [ -n "$ci" ] || { echo "FAIL: $spec has no '# ci:' line (the reduced-size overrides the test runs it with)" >&2; exit 1; }
  data=()
  mapfile -t chain < <(spec_chain "$spec")
  grep -q 'bible_en_es.tsv' "${chain[@]}" && data=(--set "task.file=$bible")
  grep -q 'web_en.txt' "${chain[@]}" && data=(--set "task.file=$web_en")
  start=$SECONDS
  eval "set -- $ci"  # the ci line: --set arguments, values with spaces in single quotes
  "$ablate" sweep "$spec" "$@" "${data[@]}" --out "$out/$group/$name" --jobs 2 --threads-per-run 1 --progress quiet \
    > "$out/$name.log" 2>&1 || { echo "FAIL: ablate sweep $spec $ci" >&2; tail -30 "$out/$name.log" >&2; exit 1; }
  echo "$group/$name: ran in $((SECONDS - start)) s"
done

/usr/bin/python3 "$here/check_papers.py" "$out" "$ablate"
echo "PASS: every paper ablation runs at CI size and shows the trends that hold there"
