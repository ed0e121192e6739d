#!/usr/bin/env bash
# Builds the English language-model corpus of the World English Bible for task/language_model:
# one verse per line in canonical order (Genesis .. Revelation), from the verse-aligned corpus of
# scripts/prepare_bible_en_es.sh (Debian's sword-text-web; run first if its TSV is absent). With
# a language model's contiguous split (the default) the held-out stretches are the end of the New
# Testament: SOURCE.txt names the books the eval and test stretches cover for the fractions of
# experiments/language_model/bible_web_*.yaml (valid_fraction 0.02, test_fraction 0.02).
#
#   scripts/prepare_bible_lm.sh [--out DIR] [--force]
#
# Writes DIR/web_en.txt and DIR/SOURCE.txt; DIR defaults to data/bible_lm (git-ignored).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$SCRIPT_DIR")
me=prepare_bible_lm
die() { echo "$me: error: $*" >&2; exit 1; }
out="$ROOT/data/bible_lm" force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ "$force" = 1 ] || [ ! -e "$out/web_en.txt" ] || die "$out/web_en.txt exists (use --force to replace it)"
tsv="$ROOT/data/bible_en_es/bible_en_es.tsv"
if [ ! -f "$tsv" ]; then
  "$SCRIPT_DIR/prepare_bible_en_es.sh" || die "scripts/prepare_bible_en_es.sh failed"
fi
mkdir -p "$out"
cut -f1 "$tsv" > "$out/web_en.txt.tmp"
mv "$out/web_en.txt.tmp" "$out/web_en.txt"
/usr/bin/python3 - "$tsv" "$out/SOURCE.txt" <<'PY'
import math, sys
refs = [line.rstrip("\n").split("\t")[2] for line in open(sys.argv[1], encoding="utf-8")]
n = len(refs)
test = math.ceil(0.02 * n)
valid = math.ceil(0.02 * n)
def books(lo, hi):
    names = []
    for r in refs[lo:hi]:
        b = r.rsplit(" ", 1)[0]
        if not names or names[-1] != b:
            names.append(b)
    return f"{refs[lo]} .. {refs[hi - 1]} ({', '.join(names)})"
with open(sys.argv[2], "w") as f:
    f.write("English verses of the World English Bible (public domain; Debian sword-text-web), one per line in\n"
            "canonical order, from scripts/prepare_bible_en_es.sh's verse-aligned corpus.\n")
    f.write(f"{n} verses. With valid_fraction 0.02 and test_fraction 0.02 (split: contiguous):\n")
    f.write(f"  train: {books(0, n - valid - test)}\n  eval:  {books(n - valid - test, n - test)}\n"
            f"  test:  {books(n - test, n)}\n")
print(open(sys.argv[2]).read(), end="")
PY
