#!/usr/bin/env bash
# scripts/bible_align.py and scripts/prepare_bible_en_es.sh on hand-written mod2imp fixtures
# (fixtures/bible/): unit tests, the exact TSV and counts, and the shell script's contract
# (--out, refusing to overwrite without --force, errors for a missing module or exporter, nothing
# left behind). Needs only /usr/bin/python3: a fake mod2imp serves the fixtures (ABLATE_MOD2IMP),
# so no SWORD package is needed or installed.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FIX="$HERE/fixtures/bible"
PREPARE="$ROOT/scripts/prepare_bible_en_es.sh"
export PYTHONDONTWRITEBYTECODE=1
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Unit tests.
/usr/bin/python3 "$HERE/test_bible_align.py" -q 2>"$tmp/unit.log" || { cat "$tmp/unit.log" >&2; fail "unit tests"; }

# 2. bible_align.py on the fixtures: exact TSV and counts.
/usr/bin/python3 "$ROOT/scripts/bible_align.py" "$FIX/en.imp" "$FIX/es.imp" --source-name English --target-name Spanish \
  --target-dropcaps --tsv "$tmp/direct.tsv" >"$tmp/direct.out"
diff -u "$FIX/expected.tsv" "$tmp/direct.tsv" || fail "bible_align.py: TSV differs from fixtures/bible/expected.tsv"
diff -u "$FIX/expected_summary.txt" "$tmp/direct.out" || fail "bible_align.py: counts differ from fixtures/bible/expected_summary.txt"
/usr/bin/python3 - "$tmp/direct.tsv" <<'PY' || fail "TSV fields"
import sys
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    fields = line.rstrip("\n").split("\t")
    assert len(fields) == 3 and all(f and f == " ".join(f.split()) for f in fields), (n, line)
PY

# 3. prepare_bible_en_es.sh with a fake mod2imp that serves the fixtures.
cat >"$tmp/mod2imp" <<EOF
#!/usr/bin/env bash
[ "\${FAKE_EMPTY:-}" != "\$1" ] || { echo '\$\$\$[ Module Heading ]'; exit 0; }
case "\$1" in
  engWEB2015eb) [ "\${FAKE_MISSING:-}" = "\$1" ] || exec cat "$FIX/en.imp" ;;
  spaRV1909eb) [ "\${FAKE_MISSING:-}" = "\$1" ] || exec cat "$FIX/es.imp" ;;
esac
echo "" >&2; echo "mod2imp: Couldn't find module: \$1" >&2; exit 255
EOF
chmod +x "$tmp/mod2imp"
export ABLATE_MOD2IMP="$tmp/mod2imp"
export TMPDIR="$tmp/tmpdir"  # where the script's temporary folder goes: checked empty at the end
mkdir "$TMPDIR"
out="$tmp/out dir"  # a space in the path

"$PREPARE" --out "$out" >"$tmp/run1.log" 2>&1 || { cat "$tmp/run1.log" >&2; fail "first run"; }
diff -u "$FIX/expected.tsv" "$out/bible_en_es.tsv" || fail "prepare: TSV differs"
grep -q "^aligned pairs: 21$" "$tmp/run1.log" || fail "prepare: no count of aligned pairs in its output"
grep -q "^dropped chapters: 3 " "$tmp/run1.log" || fail "prepare: no count of dropped chapters"
grep -Eq "wrote .*bible_en_es.tsv \(21 pairs\).* in [0-9.]+ s$" "$tmp/run1.log" || fail "prepare: no final line with the time"
grep -q "public domain" "$out/SOURCE.txt" || fail "SOURCE.txt: no licence note"
grep -q "^aligned pairs: 21$" "$out/SOURCE.txt" || fail "SOURCE.txt: no counts"
grep -q "sword-text-web" "$out/SOURCE.txt" || fail "SOURCE.txt: no package name"
[ "$(ls -A "$out")" = "$(printf 'SOURCE.txt\nbible_en_es.tsv')" ] || fail "prepare left other files in --out: $(ls -A "$out")"

# An existing TSV is kept without --force, replaced with it.
echo "keep me" >"$out/bible_en_es.tsv"
if "$PREPARE" --out "$out" >"$tmp/run2.log" 2>&1; then fail "overwrote an existing TSV without --force"; fi
grep -q "exists; pass --force" "$tmp/run2.log" || fail "no hint at --force: $(cat "$tmp/run2.log")"
[ "$(cat "$out/bible_en_es.tsv")" = "keep me" ] || fail "the existing TSV was changed"
"$PREPARE" --out "$out" --force >"$tmp/run3.log" 2>&1 || { cat "$tmp/run3.log" >&2; fail "--force run"; }
diff -q "$FIX/expected.tsv" "$out/bible_en_es.tsv" >/dev/null || fail "--force did not rewrite the TSV"

# A missing module: a clear error, non-zero, the previous output untouched, nothing left behind.
echo "keep me" >"$out/bible_en_es.tsv"
if FAKE_MISSING=spaRV1909eb "$PREPARE" --out "$out" --force >"$tmp/run4.log" 2>&1; then fail "succeeded without the Spanish module"; fi
grep -q "could not export the SWORD module spaRV1909eb (mod2imp: Couldn't find module: spaRV1909eb).*sword-text-sparv" "$tmp/run4.log" ||
  fail "unclear error for a missing module: $(cat "$tmp/run4.log")"
[ "$(cat "$out/bible_en_es.tsv")" = "keep me" ] || fail "a failed run changed the TSV"
[ -z "$(find "$out" -name '.staging.*')" ] || fail "a failed run left a staging folder"

# A failure after the staging folder exists (an export without verses): cleaned up as well.
if FAKE_EMPTY=engWEB2015eb "$PREPARE" --out "$out" --force >"$tmp/run4b.log" 2>&1; then fail "succeeded on an empty export"; fi
grep -q "no verses in" "$tmp/run4b.log" || fail "unclear error for an empty export: $(cat "$tmp/run4b.log")"
[ "$(cat "$out/bible_en_es.tsv")" = "keep me" ] || fail "a failed run changed the TSV"
[ -z "$(find "$out" -name '.staging.*')" ] || fail "a failed run left a staging folder"

# A missing exporter, a bad argument.
if ABLATE_MOD2IMP="$tmp/no-such-mod2imp" "$PREPARE" --out "$tmp/o2" >"$tmp/run5.log" 2>&1; then fail "succeeded without mod2imp"; fi
grep -q "no-such-mod2imp not found (it is in the Debian package libsword-utils)" "$tmp/run5.log" || fail "unclear error without mod2imp: $(cat "$tmp/run5.log")"
[ ! -e "$tmp/o2" ] || fail "a run without mod2imp created --out"
if "$PREPARE" --bogus >"$tmp/run6.log" 2>&1; then fail "accepted --bogus"; fi
grep -q "unknown argument '--bogus'" "$tmp/run6.log" || fail "no error for --bogus"
"$PREPARE" --help | grep -q -- "--force" || fail "--help"

[ -z "$(ls -A "$TMPDIR")" ] || fail "left temporary files behind: $(ls -A "$TMPDIR")"
echo "bible_align_test: ok"
