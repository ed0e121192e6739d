#!/usr/bin/env bash
# ctest plugins.translation_sacrebleu: Ablate's scores (task/translation) against the sacrebleu
# package's, each within 0.01.
# 1. Token BLEU (`bleu`): the tutorial d2l_translation model is trained 12 steps (BLEU in the 30s
#    on its eval split), scored by `ablate eval`, and sacrebleu.corpus_bleu(tokenize='none') is
#    computed on predictions.tsv, the target's characters as its tokens (the spec's target_tokens:
#    char), a hypothesis <unk> never matching (Ablate's rule).
# 2. sacreBLEU and chrF on text (`sacrebleu`, `chrf`): a word-level en->es model of the plugin's
#    fixture (14 pairs with punctuation, accents and inverted marks) and the d2l model (Chinese
#    characters, its spec's sacrebleu_tokenize: zh) score the fixture files with `ablate eval --data`,
#    and sacrebleu.corpus_bleu (tokenize 13a, the default, and zh) and corpus_chrf score the
#    predictions against the files' targets as written.
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

# 2. sacreBLEU and chrF on the text as written.
fixture="$root/plugins/task_translation/tests/data/translation_eng_spa.tsv"
cat > "$dir/spa.yaml" <<YAML
name: sacrebleu_spa
task: {plugin: translation, file: $fixture, source_tokens: word, target_tokens: word, max_len: 12,
       valid_fraction: 0.0, test_fraction: 0.0}
model: {arch: encoder_decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, dropout: 0.0}
backend: {plugin: onednn, threads: 1}
train: {steps: 60, batch_size: 14, optimizer: {lr: 3.0e-3}}
log: {every: 60}
eval: {every: 60, batches: 1}
YAML
"$ablate" run "$dir/spa.yaml" --out "$dir/spa" --progress quiet > /dev/null
"$ablate" eval "$dir/spa" --data "$fixture" --out "$dir/spa_eval" > /dev/null
"$ablate" eval "$dir/run" --data experiments/data/tutorial_eng_cmn.tsv --out "$dir/cmn_eval" > /dev/null
"$python" - "$dir/spa_eval" "$fixture" "$dir/cmn_eval" experiments/data/tutorial_eng_cmn.tsv <<'PY'
import json, sys
import sacrebleu
ok = True
for d, data, tokenize in [(sys.argv[1], sys.argv[2], "13a"), (sys.argv[3], sys.argv[4], "zh")]:
    refs = [line.rstrip("\n").split("\t")[1] for line in open(data, encoding="utf-8") if line.strip()]
    rows = [line.rstrip("\n").split("\t") for line in open(d + "/predictions.tsv", encoding="utf-8")][1:]
    assert len(rows) == len(refs), f"{data}: {len(rows)} predictions for {len(refs)} lines (a pair was dropped)"
    hyps = [r[3] if len(r) > 3 else "" for r in rows]
    metrics = json.load(open(d + "/scores.json"))["metrics"]
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize=tokenize).score
    chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
    print(f"{data} ({tokenize}): ablate sacrebleu {metrics['sacrebleu']:.6f} chrf {metrics['chrf']:.6f}; "
          f"sacrebleu {sacrebleu.__version__} {bleu:.6f} chrf {chrf:.6f} on {len(refs)} sentences")
    ok = ok and abs(metrics["sacrebleu"] - bleu) <= 0.01 and abs(metrics["chrf"] - chrf) <= 0.01
    assert 1.0 < chrf < 99.0, f"chrF {chrf}: the check needs a model between nothing and perfect"
sys.exit(0 if ok else 1)
PY
