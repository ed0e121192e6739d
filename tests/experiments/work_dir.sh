# Sourced by the experiment tests (papers_test.sh, tutorials_test.sh) after setting `here`:
# `. "$here/work_dir.sh" NAME ABLATE_BINARY`. Sets `ablate` and `root`, makes the scratch
# directory `out` (removed on exit), and works from the repository root, which the specs' data
# file paths are relative to.
ablate=$(realpath "$2")
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d "/tmp/ablate-$1.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$root"

# bible_en_es / bible_lm: print the path of the Bible en-es TSV (data/bible_en_es, else prepared
# into $out with scripts/prepare_bible_en_es.sh, Debian's sword packages) / of its English side,
# one verse a line (data/bible_lm/web_en.txt, else cut from the TSV into $out).
bible_en_es() {
  local tsv=data/bible_en_es/bible_en_es.tsv
  if [ ! -f "$tsv" ]; then
    tsv=$out/bible/bible_en_es.tsv
    [ -f "$tsv" ] || scripts/prepare_bible_en_es.sh --out "$out/bible" > "$out/bible.log" 2>&1 ||
      { echo "FAIL: scripts/prepare_bible_en_es.sh (the Bible corpus)" >&2; tail -5 "$out/bible.log" >&2; return 1; }
  fi
  echo "$tsv"
}
bible_lm() {
  local text=data/bible_lm/web_en.txt tsv
  if [ ! -f "$text" ]; then
    text=$out/web_en.txt
    if [ ! -f "$text" ]; then
      tsv=$(bible_en_es) || return 1
      cut -f1 "$tsv" > "$text"
    fi
  fi
  echo "$text"
}
