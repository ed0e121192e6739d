#!/bin/bash
# The leaderboard's pipeline at CI size (experiments/leaderboard, each spec's "# ci:" line): both
# bases run, tuned per arm, compared, and the table and its figures written; then an arm of an
# out-of-tree plugin (examples/ffn_reglu) joins the modern base with `leaderboard.py add -p DIR`,
# reusing the base's runs, and its rank is printed.
# Usage: leaderboard_test.sh ABLATE_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/work_dir.sh" leaderboard "$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

bible=$(bible_lm)
lb=(/usr/bin/python3 experiments/leaderboard/leaderboard.py --profile ci --ablate "$ablate" --out "$out/lb"
  --table "$out/docs/leaderboard.md" --data "$bible")
mkdir -p "$out/docs"
"${lb[@]}" run > "$out/run.log" 2>&1 || { tail -40 "$out/run.log" >&2; fail "leaderboard.py run --profile ci"; }

/usr/bin/python3 - "$out" <<'PY'
import os, re, sys
out = sys.argv[1]
text = open(os.path.join(out, "docs", "leaderboard.md")).read()
for base, arms in (("modern", ["ffn=relu", "optimizer=sgd"]), ("vaswani_2017", ["block=pre_norm", "tokenizer=sentencepiece"])):
    section = text.split("## ")[1 if base == "modern" else 2]
    rows = [l for l in section.splitlines() if l.startswith("| ") and not l.startswith("| rank")]
    assert rows[0].startswith("| base | base |"), rows[0]
    labels = [r.split(" | ")[1] for r in rows[1:]]
    assert sorted(labels) == sorted(arms), (base, labels)
    deltas = [float(r.split(" | ")[3].split()[0]) for r in rows[1:]]
    assert deltas == sorted(deltas), f"{base}: not ranked by Δ: {deltas}"
    for r in rows:
        cells = r.split(" | ")
        assert re.fullmatch(r"\d+", cells[6]) and re.fullmatch(r"\d+", cells[7]), f"parameters, FLOPs/token: {r}"
        assert re.fullmatch(r"[0-9.e-]+", cells[9].rstrip(" |")), f"learning rate: {r}"
    svg = os.path.join(out, "docs", "leaderboard", base + ".svg")
    assert open(svg).read().count("<circle") == len(arms), svg
print("leaderboard table: both bases, ranked by Δ, with parameters, FLOPs/token and the learning rates")
PY

# results/ is not committed: with a base's runs gone (a fresh checkout), `table` writes the same
# document from the summary copied beside the figures; with neither, it says the base is missing.
for f in modern.summary.json modern.sessions.tsv vaswani_2017.summary.json vaswani_2017.sessions.tsv; do
  [ -s "$out/docs/leaderboard/$f" ] || fail "no copy $f beside the figures"
done
cp "$out/docs/leaderboard.md" "$out/table_before.md"
mv "$out/lb/modern" "$out/lb_modern_aside"
"${lb[@]}" table > "$out/table.log" 2>&1 || { cat "$out/table.log" >&2; fail "leaderboard.py table without the modern runs"; }
grep -q "modern base's runs are not in" "$out/table.log" || fail "table does not say where the modern table came from"
cmp "$out/table_before.md" "$out/docs/leaderboard.md" || fail "the table from the copied summary differs from the one from the runs"
mv "$out/docs/leaderboard/modern.summary.json" "$out/modern.summary.json"
"${lb[@]}" table > "$out/table.log" 2>&1 || fail "leaderboard.py table with one base left"
grep -q "Not compared yet" "$out/docs/leaderboard.md" || fail "a base with neither runs nor copy is not marked missing"
mv "$out/modern.summary.json" "$out/docs/leaderboard/modern.summary.json"
mv "$out/lb_modern_aside" "$out/lb/modern"
echo "leaderboard table: written again from the copies when the runs are gone"

# An arm of a plugin of your own: examples/ffn_reglu built out of tree against an install of this
# build (docs/writing-plugins.md); the base's runs are done, so only the new arm's run.
build=$(cd "$(dirname "$ablate")/.." && pwd)
cmake --install "$build" --prefix "$out/prefix" > /dev/null
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S examples/ffn_reglu -B "$out/reglu" "${generator[@]}" -DCMAKE_PREFIX_PATH="$out/prefix" > "$out/reglu.log" 2>&1 &&
  cmake --build "$out/reglu" --target ffn_reglu >> "$out/reglu.log" 2>&1 ||
  { tail -20 "$out/reglu.log" >&2; fail "examples/ffn_reglu did not build against the install"; }
# An arm the sweep refuses (an FFN no plugin provides) fails with the sweep's error and is not kept.
if "${lb[@]}" add --set model.ffn=no_such_ffn > "$out/bad.log" 2>&1; then fail "add of an unknown FFN succeeded"; fi
grep -q "no_such_ffn" "$out/bad.log" || { tail -20 "$out/bad.log" >&2; fail "the refusal does not name the plugin"; }
[ ! -f "$out/lb/modern/added.json" ] || fail "a refused arm was kept in added.json"
"${lb[@]}" add -p "$out/reglu" --set model.ffn=reglu > "$out/add.log" 2>&1 || { tail -40 "$out/add.log" >&2; fail "leaderboard.py add"; }
grep -Eq "ffn=reglu ranks [1-3] of 3 arms of the modern base" "$out/add.log" || { tail -20 "$out/add.log" >&2; fail "no rank line"; }
grep -q '\*\*ffn=reglu\*\* (new)' "$out/add.log" || fail "the new arm is not marked in the table"
/usr/bin/python3 - "$out/add.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
# The base's and the committed arms' runs are done: every run `add` started is the new arm's.
started = re.findall(r"^start +(\S+)", log, re.M)
assert started and all("ffn=reglu" in name for name in started), f"add started other runs than the new arm's: {started}"
print(f"leaderboard add: {len(started)} runs started, all of the new arm; the rest reused")
PY
echo "PASS: the leaderboard runs at CI size, writes its table and figures, and ranks an added arm"
