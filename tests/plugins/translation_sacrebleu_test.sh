#!/usr/bin/env bash
# ctest plugins.translation_sacrebleu: Ablate's corpus BLEU (task/translation) against sacrebleu's
# on the same tokens. The tutorial d2l_translation model is trained 12 steps (BLEU in the 30s on
# its eval split), scored by `ablate eval`, and sacrebleu.corpus_bleu(tokenize='none') is computed
# on predictions.tsv, the target's characters as its tokens (the spec's target_tokens: char),
# a hypothesis <unk> never matching (Ablate's rule): the two must agree within 0.01.
# sacrebleu is not a Debian package: scripts/setup.sh installs it from PyPI into tests/.venv; the
# test runs with the first Python that has it (tests/.venv, bench/.venv), else skips (exit 77).
#   translation_sacrebleu_test.sh ABLATE_BIN
set -euo pipefail
ablate=$(realpath "$1")
root="$(cd "$(dirname "$0")/../.." && pwd)"
python=""
for p in "$root/tests/.venv/bin/python" "$root/bench/.venv/bin/python" /usr/bin/python3; do
  if [ -x "$p" ] && "$p" -c 'import sacrebleu' 2>/dev/null; then python="$p"; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: no Python here imports sacrebleu (scripts/setup.sh installs it into tests/.venv from PyPI)"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$root"  # the spec names its data file relative to the repository root
"$ablate" run experiments/tutorials/d2l_translation.yaml --set train.steps=12 --set eval.every=12 \
  --set log.attention.every=0 --out "$dir/run" --progress quiet > /dev/null
"$ablate" eval "$dir/run" --split eval > /dev/null
"$python" - "$dir/run/evals/eval" <<'PY'
import json, sys
import sacrebleu
d = sys.argv[1]
rows = [line.rstrip("\n").split("\t") for line in open(d + "/predictions.tsv", encoding="utf-8")][1:]
def chars(text, unk):  # the target's tokens are characters; "<unk>" is one token
    return " ".join(unk if t == "\x00" else t for t in text.replace("<unk>", "\x00"))
refs = [chars(r[2], "<unk>") for r in rows]
hyps = [chars(r[3] if len(r) > 3 else "", "<unk-in-hypothesis>") for r in rows]
ablate = json.load(open(d + "/scores.json"))["metrics"]["bleu"]
theirs = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score
print(f"ablate BLEU {ablate:.6f}, sacrebleu {sacrebleu.__version__} {theirs:.6f} on {len(rows)} sentences")
assert 1.0 < ablate < 99.0, f"BLEU {ablate}: the check needs a model between nothing and perfect"
sys.exit(0 if abs(ablate - theirs) <= 0.01 else 1)
PY
