#!/usr/bin/python3
"""Verse-align two Bibles exported with SWORD's mod2imp into a parallel TSV.

Used by scripts/prepare_bible_en_es.sh (World English Bible -> Reina-Valera 1909), but works on
any two mod2imp exports of OSIS modules:

    bible_align.py EN.imp ES.imp --tsv OUT.tsv [--source-txt SOURCE.txt --about LINE ...]

Output lines are  source<TAB>target<TAB>reference  ("In the beginning, ...<TAB>En el principio ...<TAB>Gen 1:1"),
in the order of the source text: what task/translation reads. The counts go to stdout.

mod2imp writes one entry per key: a line "$$$Genesis 1:1" followed by the verse's raw OSIS
markup. Cleaning a verse (clean_verse):
  * anything after the end of the book or the start of a glossary is cut (the WEB appends its
    glossary to Revelation 22:21);
  * footnotes and cross references (<note>...</note>), section titles and speaker labels are
    dropped with their content; canonical psalm titles (<title type="psalm">) are kept, since the
    RV1909 has them as part of verse 1 too;
  * every other tag is removed keeping its content; where a tag stood between two words (the WEB
    puts footnotes between words without a space: "God<note>...</note><w>created", the RV1909
    writes "allí</w><transChange>también</transChange><w>bdelio") a space is put, but not before
    closing or after opening punctuation ("Dios</w>:", "“<w>Allow", "coins</q> <note>..</note> ?");
  * HTML entities are decoded, the text is NFC-normalised and every run of whitespace and control
    characters (tabs, newlines) becomes one space, so no field holds a TAB or a newline.
With --target-dropcaps the target's drop capitals are undone: the RV1909 writes the first words
of each chapter in capitals ("EN el principio", "Y ACONTECIÓ") -> "En el principio", "Y aconteció".

Alignment is by reference (book, chapter, verse); chapter and verse 0 (introductions) are left
out, and so are chapters only one text has (the WEB's deuterocanonical books). A verse's length
drift is |log(target length / source length) - the median of that log ratio over its book|
(lengths in characters). A chapter both texts have is dropped whole when
  * the two texts do not have text for the same verse numbers: one text merged a verse into its
    neighbour, moved it to the next chapter (the RV1909 follows Spanish chapter boundaries in
    places: Numbers 12:16 is its 13:1) or omits it (the WEB has no Acts 8:37);
  * its mean drift exceeds --max-chapter-drift (0.25): the verses are shifted although the verse
    counts agree (after the RV1909's Numbers 12:16, its Numbers 13 runs one verse behind and
    osis2mod appended the overflowing verse to the last one);
  * 3 consecutive verses have a mean drift over --max-window-drift (0.75): a shift in part of
    the chapter.
Single pairs with a drift over --max-verse-drift (0.7, a length ratio twice or half the usual)
are dropped too: a verse boundary that differs, a verse one text extends (the RV1909's
subscriptions to the epistles). On the WEB/RV1909, aligned chapters stay below a mean drift of
0.21 and a 3-verse drift of 0.63.
"""

import argparse
import html
import json
import math
import re
import statistics
import sys
import unicodedata
from collections import Counter, OrderedDict

# SWORD's English book names (as mod2imp writes them in "$$$" keys) -> OSIS abbreviations.
OSIS_BOOKS = {
    "Genesis": "Gen", "Exodus": "Exod", "Leviticus": "Lev", "Numbers": "Num", "Deuteronomy": "Deut",
    "Joshua": "Josh", "Judges": "Judg", "Ruth": "Ruth", "I Samuel": "1Sam", "II Samuel": "2Sam",
    "I Kings": "1Kgs", "II Kings": "2Kgs", "I Chronicles": "1Chr", "II Chronicles": "2Chr",
    "Ezra": "Ezra", "Nehemiah": "Neh", "Esther": "Esth", "Job": "Job", "Psalms": "Ps",
    "Proverbs": "Prov", "Ecclesiastes": "Eccl", "Song of Solomon": "Song", "Isaiah": "Isa",
    "Jeremiah": "Jer", "Lamentations": "Lam", "Ezekiel": "Ezek", "Daniel": "Dan", "Hosea": "Hos",
    "Joel": "Joel", "Amos": "Amos", "Obadiah": "Obad", "Jonah": "Jonah", "Micah": "Mic",
    "Nahum": "Nah", "Habakkuk": "Hab", "Zephaniah": "Zeph", "Haggai": "Hag", "Zechariah": "Zech",
    "Malachi": "Mal", "Matthew": "Matt", "Mark": "Mark", "Luke": "Luke", "John": "John",
    "Acts": "Acts", "Romans": "Rom", "I Corinthians": "1Cor", "II Corinthians": "2Cor",
    "Galatians": "Gal", "Ephesians": "Eph", "Philippians": "Phil", "Colossians": "Col",
    "I Thessalonians": "1Thess", "II Thessalonians": "2Thess", "I Timothy": "1Tim",
    "II Timothy": "2Tim", "Titus": "Titus", "Philemon": "Phlm", "Hebrews": "Heb", "James": "Jas",
    "I Peter": "1Pet", "II Peter": "2Pet", "I John": "1John", "II John": "2John",
    "III John": "3John", "Jude": "Jude", "Revelation of John": "Rev",
}

KEY_RE = re.compile(r"^(.+) (\d+):(\d+)$")

# Markup dropped together with its content.
_DROP_RE = re.compile(
    r"<note\b[^>]*/>"                                   # an empty note
    r"|<note\b[^>]*>.*?</note>"                         # footnotes, cross references
    r"|<speaker\b[^>]*>.*?</speaker>"                   # "Beloved" in the Song of Solomon
    r"|<title\b(?![^>]*\btype=\"psalm\")[^>]*>.*?</title>",  # section titles (not psalm titles)
    re.S)
# Where verse text ends: a glossary or the end of the book (the WEB's Rev 22:21 goes on with its glossary).
_CUT_RE = re.compile(r"<div\b[^>]*\btype=\"glossary\"|<div\b(?=[^>]*\beID=)(?=[^>]*\btype=\"book\")[^>]*>")
_TAG_RE = re.compile(r"<[^>]*>")
_MARK = "\x00"  # stands where a tag was until we know whether a space belongs there
_MARKS_RE = re.compile(r"\s*\x00[\x00\s]*")
_CLOSING = set(".,;:!?)]}”’»…")
_OPENING = set("([{“‘«¡¿")
# Control characters and what plugins/task_translation/tokenizer.cpp treats as whitespace beyond str.split()'s set.
_EXTRA_SPACE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200d\u2060\ufeff]")


def _ends_word(c):
    return c.isalnum() or c in _CLOSING


def _starts_word(c):
    return c.isalnum() or c in _OPENING


def clean_verse(raw):
    """Plain text of one verse's OSIS markup (see the module docstring)."""
    m = _CUT_RE.search(raw)
    if m:
        raw = raw[:m.start()]
    s = _DROP_RE.sub(_MARK, raw)
    s = _TAG_RE.sub(_MARK, s)
    s = html.unescape(s)

    def join(m):
        run = m.group(0)
        left = s[m.start() - 1] if m.start() > 0 else ""
        right = s[m.end()] if m.end() < len(s) else ""
        if not left or not right:
            return ""
        if run.strip(_MARK):  # tags with whitespace around: a space, but not before ? or after “
            return "" if right in _CLOSING or left in _OPENING else " "
        return " " if _ends_word(left) and _starts_word(right) else ""  # tags between characters

    s = _MARKS_RE.sub(join, s)
    s = unicodedata.normalize("NFC", s)
    s = _EXTRA_SPACE_RE.sub(" ", s)
    return " ".join(s.split())


def parse_imp(lines):
    """(book, chapter, verse, raw markup) for each "$$$Book C:V" entry of a mod2imp export, in order.

    Other keys ("[ Module Heading ]") are skipped; an entry's lines are joined with newlines."""
    entries = []
    key, body = None, []

    def flush():
        if key is not None:
            m = KEY_RE.match(key)
            if m:
                entries.append((m.group(1), int(m.group(2)), int(m.group(3)), "\n".join(body)))

    for line in lines:
        line = line.rstrip("\r\n")
        if line.startswith("$$$"):
            flush()
            key, body = line[3:].strip(), []
        elif key is not None:
            body.append(line)
    flush()
    return entries


_WORD_RE = re.compile(r"\w+")


def _is_caps(w):
    return w.isalpha() and w.isupper()


def undo_dropcap(text, word_counts):
    """Undo the drop capital of a chapter's first verse: the first run of all-capitals words
    (one of them 2+ letters long) that is followed by a word with lower-case letters, as in
    "EN el principio", "¡CÓMO está", "Salmo de David. JEHOVÁ es", "Y ACONTECIÓ", "DE OCHO años".
    Each word of the run is written the way the text writes it most often elsewhere (word_counts:
    word form -> count; lower case on a tie), except that a run's first word starting a sentence
    is capitalised: "En el", "Y aconteció", "Y Jehová", "De ocho años"."""
    words = list(_WORD_RE.finditer(text))
    i = 0
    while i < len(words):
        if not _is_caps(words[i].group(0)):
            i += 1
            continue
        j = i + 1  # the run: all-capitals words separated by spaces only
        while (j < len(words) and _is_caps(words[j].group(0))
               and not text[words[j - 1].end():words[j].start()].strip()):
            j += 1
        run = words[i:j]
        nxt = words[j].group(0) if j < len(words) else ""
        if any(len(m.group(0)) >= 2 for m in run) and any(c.islower() for c in nxt):
            out, pos = [], 0
            for n, m in enumerate(run):
                w = m.group(0)
                lower, capitalised = w.lower(), w[0] + w[1:].lower()
                before = text[:m.start()].rstrip()
                if n == 0 and (not before or not before[-1].isalnum()):
                    new = capitalised
                else:
                    new = capitalised if word_counts.get(capitalised, 0) > word_counts.get(lower, 0) else lower
                out.append(text[pos:m.start()] + new)
                pos = m.end()
            return "".join(out) + text[pos:]
        i = j
    return text


_MID_SENTENCE_WORD_RE = re.compile(r"(?:(?<=[\w,;] )|(?<=[,;]))\b\w+")


def mid_sentence_word_counts(texts):
    """How often each word form occurs right after a word or a comma (texts are cleaned: single
    spaces): how the text writes a word when nothing else forces a capital."""
    counts = Counter()
    for t in texts:
        counts.update(_MID_SENTENCE_WORD_RE.findall(t))
    return counts


def load_text(lines, dropcaps=False):
    """OrderedDict (book, chapter) -> {verse: cleaned text} of a mod2imp export; chapter and verse 0
    (book and chapter introductions) are left out, empty verses kept as ""."""
    chapters = OrderedDict()
    for book, chapter, verse, raw in parse_imp(lines):
        if chapter == 0 or verse == 0:
            continue
        chapters.setdefault((book, chapter), {})[verse] = clean_verse(raw)
    if dropcaps:
        counts = mid_sentence_word_counts(t for verses in chapters.values() for v, t in verses.items() if v != 1)
        for verses in chapters.values():
            if verses.get(1):
                verses[1] = undo_dropcap(verses[1], counts)
    return chapters


def reference(book, chapter, verse):
    return "%s %d:%d" % (OSIS_BOOKS.get(book, book), chapter, verse)


def align(src, tgt, max_chapter_drift=0.25, max_window_drift=0.75, max_verse_drift=0.7, window=3,
          source_name="source", target_name="target"):
    """Pairs (source, target, reference) of the chapters both texts have, and a report (dict).

    The length tests use each verse's drift: |log(target/source length in characters) - the
    median of that log ratio over the book|; 0.7 is a ratio twice (or half) the usual one."""
    common = [k for k in src if k in tgt]
    dropped = []  # (chapter, reason, number of source verses)
    dropped_pairs = []  # (reference, drift)
    pairs = []

    book_logs = {}
    for k in common:
        for v, s in src[k].items():
            t = tgt[k].get(v, "")
            if s and t:
                book_logs.setdefault(k[0], []).append(math.log(len(t) / len(s)))
    book_median = {b: statistics.median(x) for b, x in book_logs.items()}

    for k in common:
        verses = sorted(v for v, x in src[k].items() if x)
        t_verses = sorted(v for v, x in tgt[k].items() if x)
        name = "%s %d" % (OSIS_BOOKS.get(k[0], k[0]), k[1])
        if verses != t_verses:
            only_s = sorted(set(verses) - set(t_verses))
            only_t = sorted(set(t_verses) - set(verses))
            why = "verse numbers differ (%d vs %d verses" % (len(verses), len(t_verses))
            if only_s:
                why += "; only in %s: %s" % (source_name, _ranges(only_s))
            if only_t:
                why += "; only in %s: %s" % (target_name, _ranges(only_t))
            dropped.append((name, why + ")", len(verses)))
            continue
        if not verses:
            continue
        drift = [abs(math.log(len(tgt[k][v]) / len(src[k][v])) - book_median[k[0]]) for v in verses]
        mean = sum(drift) / len(drift)
        if mean > max_chapter_drift:
            dropped.append((name, "verse lengths disagree (mean drift %.2f > %.2f): verses shifted"
                            % (mean, max_chapter_drift), len(verses)))
            continue
        n = min(window, len(drift))
        worst, at = max((sum(drift[i:i + n]) / n, i) for i in range(len(drift) - n + 1))
        if worst > max_window_drift:
            dropped.append((name, "verse lengths disagree at %d-%d (drift %.2f > %.2f over %d verses): verses shifted"
                            % (verses[at], verses[at + n - 1], worst, max_window_drift, n), len(verses)))
            continue
        for v, d in zip(verses, drift):
            ref = reference(k[0], k[1], v)
            if d > max_verse_drift:
                dropped_pairs.append((ref, d))
            else:
                pairs.append((src[k][v], tgt[k][v], ref))

    tgt_books = {b for b, _ in tgt}
    src_books = {b for b, _ in src}
    report = OrderedDict([
        ("source_chapters", len(src)),
        ("target_chapters", len(tgt)),
        ("source_verses", sum(1 for c in src.values() for t in c.values() if t)),
        ("target_verses", sum(1 for c in tgt.values() for t in c.values() if t)),
        ("common_chapters", len(common)),
        ("source_only_chapters", sum(1 for k in src if k not in tgt)),
        ("target_only_chapters", sum(1 for k in tgt if k not in src)),
        ("source_only_books", _unique(b for b, _ in src if b not in tgt_books)),
        ("target_only_books", _unique(b for b, _ in tgt if b not in src_books)),
        ("common_verses", sum(1 for k in common for v, t in src[k].items() if t and tgt[k].get(v))),
        ("dropped_chapters", [OrderedDict([("chapter", n), ("reason", r), ("source_verses", c)]) for n, r, c in dropped]),
        ("dropped_chapter_verses", sum(c for _, _, c in dropped)),
        ("max_verse_drift", max_verse_drift),
        ("dropped_pairs", [OrderedDict([("reference", r), ("drift", round(d, 2))]) for r, d in dropped_pairs]),
        ("pairs", len(pairs)),
    ])
    return pairs, report


def _unique(xs):
    out = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


def _ranges(vs):
    parts, start, prev = [], None, None
    for v in vs + [None]:
        if start is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        start = prev = v
    return ",".join(parts)


# tokenizer.cpp's is_space / is_punctuation as regular-expression character classes.
_SPACE = "\\s\u0085\u00a0\u1680\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"
_PUNCT = ("!-/:-@\\[-`{-~\u00a1\u00a7\u00ab\u00b6\u00b7\u00bb\u00bf\u037e\u0387\u3030\u303d\u30fb"
          "\u2010-\u2027\u2030-\u205e\u2e00-\u2e7f\u3001-\u3003\u3008-\u3011\u3014-\u301f"
          "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65")
_W = "[^%s%s]" % (_SPACE, _PUNCT)
_TOKEN_RE = re.compile("(?:%s|(?<=%s)['\u2019\\-\u2010](?=%s)|(?<=[0-9])[.,:](?=[0-9]))+|[%s]" % (_W, _W, _W, _PUNCT))


def tokens(text):
    """Word tokens as task/translation counts them by default (tokenizer.cpp at word level with
    lowercase and split_punctuation): punctuation characters are tokens of their own, except an
    apostrophe or hyphen between word characters and '.', ',' or ':' between digits."""
    return _TOKEN_RE.findall(text.lower())


def length_stats(pairs):
    src = [len(tokens(s)) for s, _, _ in pairs]
    tgt = [len(tokens(t)) for _, t, _ in pairs]

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)] if xs else 0

    return OrderedDict([
        ("source_tokens_median", pct(src, 0.5)), ("source_tokens_p90", pct(src, 0.9)),
        ("target_tokens_median", pct(tgt, 0.5)), ("target_tokens_p90", pct(tgt, 0.9)),
        ("pairs_max_len_20", sum(1 for a, b in zip(src, tgt) if max(a, b) <= 20)),
        ("pairs_max_len_30", sum(1 for a, b in zip(src, tgt) if max(a, b) <= 30)),
    ])


def check_field(text, ref):
    if not text or "\t" in text or "\n" in text or "\r" in text:
        raise ValueError("bad field at %s: %r" % (ref, text[:80]))


def write_tsv(path, pairs):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for s, t, ref in pairs:
            check_field(s, ref)
            check_field(t, ref)
            f.write("%s\t%s\t%s\n" % (s, t, ref))


def summary_lines(report, lengths, source_name="source", target_name="target"):
    r = report
    lines = [
        "%s: %d verses in %d chapters; %s: %d verses in %d chapters"
        % (source_name, r["source_verses"], r["source_chapters"], target_name, r["target_verses"], r["target_chapters"]),
        "chapters in both: %d; only in %s: %d%s; only in %s: %d%s"
        % (r["common_chapters"], source_name, r["source_only_chapters"],
           " (%s)" % ", ".join(r["source_only_books"]) if r["source_only_books"] else "",
           target_name, r["target_only_chapters"],
           " (%s)" % ", ".join(r["target_only_books"]) if r["target_only_books"] else ""),
        "dropped chapters: %d (%d %s verses)%s"
        % (len(r["dropped_chapters"]), r["dropped_chapter_verses"], source_name, ":" if r["dropped_chapters"] else ""),
    ]
    lines += ["  %s: %s" % (d["chapter"], d["reason"]) for d in r["dropped_chapters"]]
    lines.append("dropped single pairs (length drift > %.2f): %d%s"
                 % (r["max_verse_drift"], len(r["dropped_pairs"]), ": " + ", ".join(d["reference"] for d in r["dropped_pairs"])
                    if r["dropped_pairs"] else ""))
    lines.append("aligned pairs: %d" % r["pairs"])
    if lengths:
        lines.append("tokens per verse (task/translation word tokens): %s median %d, p90 %d; %s median %d, p90 %d"
                     % (source_name, lengths["source_tokens_median"], lengths["source_tokens_p90"],
                        target_name, lengths["target_tokens_median"], lengths["target_tokens_p90"]))
        lines.append("pairs with both sides <= 20 tokens: %d; <= 30 tokens: %d"
                     % (lengths["pairs_max_len_20"], lengths["pairs_max_len_30"]))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source_imp", help="mod2imp export of the source-side module (e.g. the WEB)")
    p.add_argument("target_imp", help="mod2imp export of the target-side module (e.g. the RV1909)")
    p.add_argument("--tsv", required=True, help="output TSV: source<TAB>target<TAB>reference")
    p.add_argument("--source-name", default="source", help="what to call the source text in messages")
    p.add_argument("--target-name", default="target", help="what to call the target text in messages")
    p.add_argument("--target-dropcaps", action="store_true",
                   help="undo the target text's drop capitals in each chapter's first verse")
    p.add_argument("--max-chapter-drift", type=float, default=0.25,
                   help="drop a chapter whose verses' mean length drift exceeds this (default 0.25)")
    p.add_argument("--max-window-drift", type=float, default=0.75,
                   help="drop a chapter with 3 consecutive verses whose mean drift exceeds this (default 0.75)")
    p.add_argument("--max-verse-drift", type=float, default=0.7,
                   help="drop a single pair whose drift exceeds this (default 0.7: a length ratio 2x off)")
    p.add_argument("--stats-json", help="also write the counts as JSON here")
    p.add_argument("--source-txt", help="also write a README-like description here")
    p.add_argument("--about", action="append", default=[],
                   help="a line for the top of --source-txt (repeatable)")
    a = p.parse_args(argv)

    try:
        with open(a.source_imp, encoding="utf-8") as f:
            src = load_text(f)
        with open(a.target_imp, encoding="utf-8") as f:
            tgt = load_text(f, dropcaps=a.target_dropcaps)
    except (OSError, UnicodeDecodeError) as e:
        sys.exit("bible_align: %s" % e)
    if not src or not tgt:
        sys.exit("bible_align: no verses in %s" % (a.source_imp if not src else a.target_imp))
    pairs, report = align(src, tgt, a.max_chapter_drift, a.max_window_drift, a.max_verse_drift,
                         source_name=a.source_name, target_name=a.target_name)
    if not pairs:
        sys.exit("bible_align: no aligned verses")
    lengths = length_stats(pairs)
    write_tsv(a.tsv, pairs)
    summary = summary_lines(report, lengths, a.source_name, a.target_name)
    if a.stats_json:
        with open(a.stats_json, "w", encoding="utf-8") as f:
            json.dump(OrderedDict(list(report.items()) + list(lengths.items())), f, indent=2, ensure_ascii=False)
            f.write("\n")
    if a.source_txt:
        with open(a.source_txt, "w", encoding="utf-8") as f:
            for line in a.about:
                f.write(line + "\n")
            f.write("\nCounts\n" + "\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
