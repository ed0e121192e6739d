#!/bin/bash
# Runs every tutorial spec of experiments/tutorials end to end at the reduced size its "# ci:"
# line gives (a spec with a sweep runs as `ablate sweep`), then check_tutorials.py asserts what
# each one is meant to show. Usage: tutorials_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" tutorials "$1"

for spec in experiments/tutorials/*.yaml; do
  name=$(basename "$spec" .yaml)
  ci=$(sed -n 's/^# ci://p' "$spec")
  if [ -z "$ci" ]; then
    echo "FAIL: $spec has no '# ci:' line (the reduced-size overrides the test runs it with)" >&2
    exit 1
  fi
  start=$SECONDS
  # shellcheck disable=SC2086  # the ci line is a list of --set arguments
  if grep -q '^sweep:' "$spec"; then
    "$ablate" sweep "$spec" $ci --out "$out/$name" --jobs 1 --threads-per-run 2 --progress lines > "$out/$name.log" 2>&1 ||
      { echo "FAIL: ablate sweep $spec $ci" >&2; tail -30 "$out/$name.log" >&2; exit 1; }
  else
    "$ablate" run "$spec" $ci --out "$out/$name" --progress lines > "$out/$name.log" 2>&1 ||
      { echo "FAIL: ablate run $spec $ci" >&2; tail -30 "$out/$name.log" >&2; exit 1; }
  fi
  echo "$name: ran in $((SECONDS - start)) s"
done

# Figures: the per-head heatmaps and the decode-step cross-attention the specs promise.
"$ablate" plot "$out/d2l_translation" --out "$out/figures_d2l" > /dev/null
ls "$out/figures_d2l" | grep -q '^decode_cross' || { echo "FAIL: no decode_cross figure for d2l_translation" >&2; exit 1; }
lm_run=$(dirname "$(ls "$out"/tiny_causal_lm/*/run.h5 | head -1)")
"$ablate" plot "$lm_run" --out "$out/figures_lm" > /dev/null
ls "$out/figures_lm" | grep -q 'decoder' || { echo "FAIL: no decoder attention heatmaps for tiny_causal_lm" >&2; ls "$out/figures_lm" >&2; exit 1; }

# Using the trained models (docs/training.md): every run scored again, the translation model's
# beam search and translate, its weights exported.
"$ablate" eval "$out" --split eval --limit 16 > "$out/eval.log" 2>&1 ||
  { echo "FAIL: ablate eval over the tutorial runs" >&2; tail -30 "$out/eval.log" >&2; exit 1; }
grep -q '"bleu"' "$out/d2l_translation/evals/eval/scores.json" ||
  { echo "FAIL: no BLEU in d2l_translation's evals/eval/scores.json" >&2; exit 1; }
[ "$(wc -l < "$out/d2l_translation/evals/eval/predictions.tsv")" = 17 ] ||
  { echo "FAIL: d2l_translation's predictions.tsv should hold a header and 16 examples" >&2; exit 1; }
"$ablate" eval "$out/d2l_translation" --split eval --beam 3 --out "$out/d2l_beam3" > /dev/null
grep -q '"decoding": "beam 3, length penalty 1"' "$out/d2l_beam3/scores.json" ||
  { echo "FAIL: ablate eval --beam 3 did not record its decoding" >&2; exit 1; }
printf 'I am a student.\nI am cold.\n' | "$ablate" translate "$out/d2l_translation" --beam 2 > "$out/translated.txt"
[ "$(wc -l < "$out/translated.txt")" = 2 ] || { echo "FAIL: ablate translate: one line per input line" >&2; exit 1; }
"$ablate" export "$out/d2l_translation" --out "$out/d2l.safetensors" > /dev/null
[ -s "$out/d2l.safetensors" ] || { echo "FAIL: ablate export wrote nothing" >&2; exit 1; }

/usr/bin/python3 "$here/check_tutorials.py" "$out"
echo "PASS: every tutorial spec runs at CI size and shows what it reproduces"
