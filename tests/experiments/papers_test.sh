#!/bin/bash
# Runs every paper ablation of experiments/papers at the reduced size its "# ci:" line gives (each
# spec is a sweep), then check_papers.py asserts the trends that hold at that size. The Bible
# en-es corpus comes from data/bible_en_es, or is prepared into the work dir
# (scripts/prepare_bible_en_es.sh, Debian's sword packages). Usage: papers_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" papers "$1"

bible=data/bible_en_es/bible_en_es.tsv
if [ ! -f "$bible" ]; then
  scripts/prepare_bible_en_es.sh --out "$out/bible" > "$out/bible.log" 2>&1 ||
    { echo "FAIL: scripts/prepare_bible_en_es.sh (the Bible corpus the translation ablations use)" >&2; tail -5 "$out/bible.log" >&2; exit 1; }
  bible=$out/bible/bible_en_es.tsv
fi

for spec in experiments/papers/*/*.yaml; do
  group=$(basename "$(dirname "$spec")")
  name=$(basename "$spec" .yaml)
  ci=$(sed -n 's/^# ci://p' "$spec")
  [ -n "$ci" ] || { echo "FAIL: $spec has no '# ci:' line (the reduced-size overrides the test runs it with)" >&2; exit 1; }
  data=()
  grep -q 'bible_en_es.tsv' "$spec" && data=(--set "task.file=$bible")
  if grep -q 'web_en.txt' "$spec"; then  # the English side, one verse a line (scripts/prepare_bible_lm.sh)
    [ -f "$out/web_en.txt" ] || cut -f1 "$bible" > "$out/web_en.txt"
    data=(--set "task.file=$out/web_en.txt")
  fi
  start=$SECONDS
  eval "set -- $ci"  # the ci line: --set arguments, values with spaces in single quotes
  "$ablate" sweep "$spec" "$@" "${data[@]}" --out "$out/$group/$name" --jobs 2 --threads-per-run 1 --progress quiet \
    > "$out/$name.log" 2>&1 || { echo "FAIL: ablate sweep $spec $ci" >&2; tail -30 "$out/$name.log" >&2; exit 1; }
  echo "$group/$name: ran in $((SECONDS - start)) s"
done

/usr/bin/python3 "$here/check_papers.py" "$out" "$ablate"
echo "PASS: every paper ablation runs at CI size and shows the trends that hold there"
