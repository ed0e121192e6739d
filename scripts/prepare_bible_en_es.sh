#!/usr/bin/env bash
# Builds a verse-aligned English-Spanish parallel corpus for task/translation from Debian's
# public-domain Bible packages: the World English Bible (sword-text-web) and the Reina-Valera
# 1909 (sword-text-sparv), exported with mod2imp (libsword-utils) and aligned by reference with
# scripts/bible_align.py.
#
#   scripts/prepare_bible_en_es.sh [--out DIR] [--force]
#
# Writes DIR/bible_en_es.tsv (english<TAB>spanish<TAB>reference, e.g. "... <TAB>... <TAB>Gen 1:1")
# and DIR/SOURCE.txt (provenance, licence, counts); DIR defaults to data/bible_en_es in the
# repository (git-ignored). Installs the three Debian packages if they are missing (root or sudo).
# ABLATE_MOD2IMP=PROGRAM uses PROGRAM instead of mod2imp and installs nothing (for tests).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$SCRIPT_DIR")
PY=/usr/bin/python3
ALIGN="$SCRIPT_DIR/bible_align.py"

EN_MODULE=engWEB2015eb EN_PACKAGE=sword-text-web
ES_MODULE=spaRV1909eb ES_PACKAGE=sword-text-sparv
TOOL_PACKAGE=libsword-utils
TSV_NAME=bible_en_es.tsv

me=prepare_bible_en_es
die() { echo "$me: error: $*" >&2; exit 1; }
usage() {
  cat <<EOF
usage: scripts/prepare_bible_en_es.sh [--out DIR] [--force]

Builds DIR/$TSV_NAME (english<TAB>spanish<TAB>reference, one verse pair a line) and
DIR/SOURCE.txt from the Debian packages $EN_PACKAGE (World English Bible) and
$ES_PACKAGE (Reina-Valera 1909), exported with mod2imp ($TOOL_PACKAGE); missing packages
are installed with apt-get (root or sudo).

  --out DIR   output folder (default: data/bible_en_es in the repository)
  --force     replace an existing $TSV_NAME
EOF
}

out="$ROOT/data/bible_en_es"
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { usage >&2; die "--out needs a folder"; }; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[ -n "$out" ] || die "--out needs a folder"

start=$(date +%s.%N)
tsv="$out/$TSV_NAME"
if [ -e "$tsv" ] && [ "$force" -ne 1 ]; then
  die "$tsv exists; pass --force to replace it"
fi
[ -x "$PY" ] || die "$PY not found (Debian package python3)"

# --- the Debian packages ------------------------------------------------------------------
mod2imp=${ABLATE_MOD2IMP:-}
if [ -z "$mod2imp" ]; then
  missing=()
  for p in "$TOOL_PACKAGE" "$EN_PACKAGE" "$ES_PACKAGE"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
      SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
      SUDO=(sudo)
    else
      die "need root (or sudo) to install the missing Debian package(s): ${missing[*]}"
    fi
    echo "$me: installing missing Debian package(s): ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q || die "apt-get update failed"
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" ||
      die "apt-get install ${missing[*]} failed"
  fi
  mod2imp=mod2imp
fi
command -v "$mod2imp" >/dev/null 2>&1 || die "$mod2imp not found (it is in the Debian package $TOOL_PACKAGE)"

version() {  # the installed version of a Debian package, or "not installed"
  local v
  v=$(dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true)
  case "$v" in
    "install ok installed "*) echo "${v#install ok installed }" ;;
    *) echo "not installed" ;;
  esac
}
module_version() {  # Version= of a SWORD module's .conf under /usr/share/sword, or nothing
  local conf
  conf=$(grep -lis "^\[$1\]" /usr/share/sword/mods.d/*.conf 2>/dev/null | head -n 1 || true)
  { [ -n "$conf" ] && sed -n 's/^Version=//p' "$conf" | head -n 1 | tr -d '\r'; } || true
}

# --- export -----------------------------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")
staging=
cleanup() {
  rm -rf "$tmp"
  if [ -n "$staging" ]; then rm -rf "$staging"; fi
}
trap cleanup EXIT

export_module() {  # module package file
  if ! LC_ALL=C "$mod2imp" "$1" >"$3" 2>"$tmp/err"; then
    die "$mod2imp could not export the SWORD module $1 ($(grep -m1 . "$tmp/err" || echo "no message")); it comes with the Debian package $2 and is looked up in /usr/share/sword, ~/.sword and \$SWORD_PATH"
  fi
  grep -q '^\$\$\$' "$3" || die "$mod2imp $1 wrote no entries; is the SWORD module $1 ($2) complete?"
}
echo "$me: exporting $EN_MODULE and $ES_MODULE with $mod2imp"
export_module "$EN_MODULE" "$EN_PACKAGE" "$tmp/en.imp"
export_module "$ES_MODULE" "$ES_PACKAGE" "$tmp/es.imp"

# --- align and write --------------------------------------------------------------------------
mkdir -p "$out" || die "cannot create $out"
staging=$(mktemp -d "$out/.staging.XXXXXX")

en_version=$(version "$EN_PACKAGE") es_version=$(version "$ES_PACKAGE") tool_version=$(version "$TOOL_PACKAGE")
en_mod_version=$(module_version "$EN_MODULE") es_mod_version=$(module_version "$ES_MODULE")
os_name=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null | head -n 1 || true)
about=(
  "English-Spanish Bible, verse-aligned: $TSV_NAME"
  "Built by scripts/prepare_bible_en_es.sh on $(date -u +%Y-%m-%d). Not part of the repository; rebuild it with that script."
  ""
  "Format: UTF-8, one verse pair a line: english<TAB>spanish<TAB>reference (OSIS book, chapter:verse, e.g. \"Gen 1:1\"), in canonical order."
  ""
  "Sources (Debian packages${os_name:+ of $os_name}, exported with mod2imp from $TOOL_PACKAGE $tool_version):"
  "  English: World English Bible (WEB), SWORD module $EN_MODULE ${en_mod_version:-(version unknown)}, package $EN_PACKAGE $en_version"
  "  Spanish: Reina-Valera 1909 (RV1909), SWORD module $ES_MODULE ${es_mod_version:-(version unknown)}, package $ES_PACKAGE $es_version"
  ""
  "Licence: both texts are in the public domain (Debian copyright files /usr/share/doc/$EN_PACKAGE/copyright"
  "and /usr/share/doc/$ES_PACKAGE/copyright: \"License: public-domain\"). \"World English Bible\" is a trademark of"
  "eBible.org, which asks that a changed text not be called the World English Bible: this file is derived from it"
  "(footnotes, headings and the glossary removed), not the World English Bible itself."
  ""
  "Processing (scripts/bible_align.py): OSIS markup stripped (footnotes, cross references, section headings and"
  "speaker labels dropped with their content; canonical psalm titles kept, the RV1909 has them in verse 1 too),"
  "HTML entities decoded, whitespace normalised, the WEB glossary after Revelation 22:21 cut, the RV1909's drop"
  "capitals (\"EN el principio\") undone. Verses paired by reference; the WEB's deuterocanonical books have no"
  "Spanish counterpart. A chapter is dropped whole where the two texts number its verses differently (one merged"
  "or moved a verse; the RV1909 follows Spanish numbering in places) or where verse lengths show a shift; single"
  "pairs whose length ratio is over twice the usual are dropped too. Verse boundaries can still differ slightly."
)
about_args=()
for line in "${about[@]}"; do about_args+=(--about "$line"); done

"$PY" "$ALIGN" "$tmp/en.imp" "$tmp/es.imp" --source-name English --target-name Spanish --target-dropcaps \
  --tsv "$staging/$TSV_NAME" --source-txt "$staging/SOURCE.txt" \
  "${about_args[@]}" || die "bible_align.py failed"

if [ -e "$tsv" ] && [ "$force" -ne 1 ]; then  # appeared while we worked
  die "$tsv exists; pass --force to replace it"
fi
mv -f "$staging/SOURCE.txt" "$out/SOURCE.txt"
mv -f "$staging/$TSV_NAME" "$tsv"

end=$(date +%s.%N)
pairs=$(wc -l <"$tsv")
printf '%s: wrote %s (%d pairs) and %s in %s s\n' "$me" "$tsv" "$pairs" "$out/SOURCE.txt" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
