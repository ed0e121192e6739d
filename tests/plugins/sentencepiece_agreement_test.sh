#!/usr/bin/env bash
# ctest plugins.sentencepiece_agreement: tokenizer/sentencepiece's ids against Python's
# sentencepiece package on the same model. `ablate tokenize` trains a joint 8k BPE (and a 4k
# unigram with byte_fallback) on 20,000 English and Spanish Bible verses and encodes 1,000 other
# verses of each language into a shard; Python loads the model from the tokenizer file beside the
# shard, encodes the same lines (each with its line break, as Ablate reads a file) and must give
# the shard's ids exactly. The Bible corpus comes from data/bible_en_es, or is prepared
# (scripts/prepare_bible_en_es.sh, Debian's sword packages); sentencepiece is installed from PyPI
# into tests/.venv by scripts/setup.sh. Skips (exit 77) without either.
#   sentencepiece_agreement_test.sh ABLATE_BIN
set -euo pipefail
ablate=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
python=""
for p in "$root/tests/.venv/bin/python" "$root/bench/.venv/bin/python" /usr/bin/python3; do
  if [ -x "$p" ] && "$p" -c 'import sentencepiece, numpy' 2>/dev/null; then python="$p"; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: no Python here imports sentencepiece (scripts/setup.sh installs it into tests/.venv from PyPI)"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
bible="$root/data/bible_en_es/bible_en_es.tsv"
if [ ! -f "$bible" ]; then
  if ! "$root/scripts/prepare_bible_en_es.sh" --out "$dir/bible" > "$dir/bible.log" 2>&1; then
    echo "SKIP: no Bible corpus (scripts/prepare_bible_en_es.sh needs Debian's sword packages)"; tail -3 "$dir/bible.log"
    exit 77
  fi
  bible="$dir/bible/bible_en_es.tsv"
fi
head -n 20000 "$bible" | cut -f1 > "$dir/train.txt"
head -n 20000 "$bible" | cut -f2 >> "$dir/train.txt"
sed -n '20001,21000p' "$bible" | cut -f1 > "$dir/held.txt"
sed -n '20001,21000p' "$bible" | cut -f2 >> "$dir/held.txt"
export ABLATE_CACHE_DIR="$dir/cache"
check() {  # check OUT_DIR: the shard's ids equal Python's for held.txt
  "$python" - "$1" "$dir/held.txt" <<'PY'
import sys
import numpy as np
import sentencepiece as spm
out, held = sys.argv[1], sys.argv[2]
header = np.fromfile(out + "/held.bin", dtype=np.int32, count=256)
assert header[0] == 20240520 and header[1] == 1, header[:3]
ours = np.fromfile(out + "/held.bin", dtype=np.uint16, offset=1024)
assert len(ours) == header[2], (len(ours), header[2])
model = open(out + "/tokenizer-text.bin", "rb").read().split(b"\n", 2)[2]
sp = spm.SentencePieceProcessor(model_proto=model)
lines = open(held, encoding="utf-8").read().split("\n")[:-1]
theirs = np.array([i for line in lines for i in sp.encode(line + "\n")], dtype=np.int64)
same = len(theirs) == len(ours) and bool((theirs == ours).all())
print(f"{out}: {len(lines)} lines, {len(ours)} ids in the shard, sentencepiece {spm.__version__}: "
      f"{len(theirs)} ids, {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
}
"$ablate" tokenize --tokenizer '{plugin: sentencepiece, vocab_size: 8000}' --train "$dir/train.txt" \
  --out "$dir/bpe" "$dir/held.txt"
check "$dir/bpe"
"$ablate" tokenize --tokenizer '{plugin: sentencepiece, vocab_size: 4000, model_type: unigram, byte_fallback: true}' \
  --train "$dir/train.txt" --out "$dir/unigram" "$dir/held.txt"
check "$dir/unigram"
