#!/bin/bash
# Runs the subword specs on the Bible corpus at the reduced size their "# ci:" line gives:
# experiments/translation/bible_en_es_bpe.yaml (a joint SentencePiece BPE) and
# experiments/language_model/bible_web_bpe.yaml (an 8k BPE over the WEB verses, held out by
# lines). Each must complete with its tokenizer stored in the run folder and its test scores
# recorded (sacreBLEU and chrF on detokenized text; perplexity). The corpus comes from
# data/bible_en_es, or is prepared into the work dir (scripts/prepare_bible_en_es.sh, Debian's
# sword packages). Usage: real_data_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" real_data "$1"
export ABLATE_CACHE_DIR="$out/cache"

bible=$(bible_en_es)
web_en=$(bible_lm)

run() {  # run SPEC FILE TOKENIZER_FILE TEST_PATTERN: the spec at its ci size on FILE
  local spec=$1 file=$2 stored=$3 pattern=$4 name
  name=$(basename "$spec" .yaml)
  eval "set -- $(sed -n 's/^# ci://p' "$spec")"
  [ $# -gt 0 ] || { echo "FAIL: $spec has no '# ci:' line" >&2; exit 1; }
  local start=$SECONDS
  "$ablate" run "$spec" "$@" --set "task.file=$file" --out "$out/$name" --progress lines > "$out/$name.log" 2>&1 ||
    { echo "FAIL: ablate run $spec" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  [ -f "$out/$name/$stored" ] || { echo "FAIL: $spec: no $stored in its run folder" >&2; exit 1; }
  grep -Eq "$pattern" "$out/$name.log" ||
    { echo "FAIL: $spec: no test scores matching '$pattern'" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
  echo "$name: ran in $((SECONDS - start)) s: $(grep -E '^test @' "$out/$name.log")"
}
run experiments/translation/bible_en_es_bpe.yaml "$bible" tokenizer-joint.bin \
  '^test @ [0-9]+: .*chrf [0-9.]+ .*sacrebleu [0-9.]+'
run experiments/language_model/bible_web_bpe.yaml "$web_en" tokenizer-text.bin '^test @ [0-9]+: .*perplexity [0-9.]+'
echo "PASS: the subword specs run at CI size and record their test scores"
