#!/bin/bash
# Runs every paper ablation of experiments/papers at the reduced size its "# ci:" line gives (each
# spec is a sweep), then check_papers.py asserts the trends that hold at that size. The Bible
# corpora come from data/, or are prepared into the work dir (work_dir.sh). Usage: papers_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" papers "$1"

# The specs read data/bible_en_es/bible_en_es.tsv and data/bible_lm/web_en.txt relative to the
# directory ablate runs in (directly or through the spec they extend): run from a scratch directory
# whose data/ links to the corpora, so every spec reads them by the path it was committed with (and
# check_papers.py's `ablate eval` of a run by the path its run recorded).
bible=$(realpath "$(bible_en_es)")
web_en=$(realpath "$(bible_lm)")
mkdir -p "$out/cwd/data/bible_en_es" "$out/cwd/data/bible_lm"
ln -s "$bible" "$out/cwd/data/bible_en_es/bible_en_es.tsv"
ln -s "$web_en" "$out/cwd/data/bible_lm/web_en.txt"

for spec in experiments/papers/*/*.yaml; do
  group=$(basename "$(dirname "$spec")")
  name=$(basename "$spec" .yaml)
  ci=$(sed -n 's/^# ci://p' "$spec")
  [ -n "$ci" ] || { echo "FAIL: $spec has no '# ci:' line (the reduced-size overrides the test runs it with)" >&2; exit 1; }
  start=$SECONDS
  eval "set -- $ci"  # the ci line: --set arguments, values with spaces in single quotes
  (cd "$out/cwd" && "$ablate" sweep "$root/$spec" "$@" --out "$out/$group/$name" --jobs 2 --threads-per-run 1 --progress quiet) \
    > "$out/$name.log" 2>&1 || { echo "FAIL: ablate sweep $spec $ci" >&2; tail -30 "$out/$name.log" >&2; exit 1; }
  echo "$group/$name: ran in $((SECONDS - start)) s"
done

(cd "$out/cwd" && /usr/bin/python3 "$here/check_papers.py" "$out" "$ablate")  # its evals read the runs' data too
echo "PASS: every paper ablation runs at CI size and shows the trends that hold there"
