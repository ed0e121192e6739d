"""Unit tests of scripts/bible_align.py (run by bible_align_test.sh; standard library only)."""
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import bible_align as ba  # noqa: E402


class CleanVerse(unittest.TestCase):
    def test_footnote_between_words_leaves_a_space_and_no_content(self):
        raw = ('<w lemma="strong:H0430">God</w><note placement="foot"><reference type="annotateRef">1:1 </reference>'
               'The Hebrew word “אֱלֹהִ֑ים”.</note><w lemma="strong:H1254">created</w>')
        self.assertEqual(ba.clean_verse(raw), "God created")

    def test_footnote_after_a_comma(self):
        self.assertEqual(ba.clean_verse('<w>Christ</w>,<note placement="foot">x</note><w>the</w> son'), "Christ, the son")

    def test_transchange_between_words(self):
        raw = '<w>hay allí</w><transChange type="added">también</transChange><w>bdelio</w>'
        self.assertEqual(ba.clean_verse(raw), "hay allí también bdelio")

    def test_no_space_before_closing_or_after_opening_punctuation(self):
        self.assertEqual(ba.clean_verse('<w>Dios</w>: “<w>Sea</w> <w>la luz</w>,” ¡<w>OH</w>!'), "Dios: “Sea la luz,” ¡OH!")
        self.assertEqual(ba.clean_verse('coins</q> <note placement="foot">x</note> <q marker="">? Not'), "coins? Not")
        self.assertEqual(ba.clean_verse('penny.</w> <note>x</note> <q>”</q>'), "penny.”")

    def test_cross_references_speakers_and_section_titles_are_dropped(self):
        raw = ('<speaker>Beloved</speaker> <title type="main">A heading</title><l>Let him kiss me</l>'
               '<note type="crossReference"><reference osisRef="Gen.1.1">Genesis 1:1</reference></note>.')
        self.assertEqual(ba.clean_verse(raw), "Let him kiss me.")

    def test_psalm_titles_are_kept(self):
        raw = '<title canonical="true" type="psalm">A Psalm by David.</title> <lg/> <l>Yahweh is my shepherd;</l>'
        self.assertEqual(ba.clean_verse(raw), "A Psalm by David. Yahweh is my shepherd;")

    def test_glossary_and_book_end_are_cut(self):
        raw = ('Amen.  <chapter eID="Rev.22"/><div eID="g1" type="x-p"/> <div canonical="true" eID="g2" osisID="Rev" type="book"/>'
               ' <div sID="g3" type="glossary"/> <title>World English Bible Glossary</title> Abaddon is Hebrew.')
        self.assertEqual(ba.clean_verse(raw), "Amen.")
        self.assertEqual(ba.clean_verse('Amen. <div sID="g3" type="glossary"/> Abba'), "Amen.")

    def test_entities_tabs_and_newlines(self):
        self.assertEqual(ba.clean_verse("Judah &amp; his&#9;brothers\t&quot;x&quot;\nand\r\n &lt;y&gt;"),
                         'Judah & his brothers "x" and <y>')

    def test_empty_verse(self):
        self.assertEqual(ba.clean_verse('<chapter eID="Num.12"/><div eID="gen134" type="x-p"/>'), "")
        self.assertEqual(ba.clean_verse('<note placement="foot">NU omits verse 21.</note>'), "")
        self.assertEqual(ba.clean_verse(""), "")


class ParseImp(unittest.TestCase):
    def test_keys_multiline_entries_and_headings(self):
        lines = ["$$$[ Module Heading ]", "", "$$$Song of Solomon 1:2", "a", "b", "$$$I Samuel 3:0", "x",
                 "$$$Revelation of John 22:21", "end"]
        self.assertEqual(ba.parse_imp(lines), [("Song of Solomon", 1, 2, "a\nb"), ("I Samuel", 3, 0, "x"),
                                               ("Revelation of John", 22, 21, "end")])

    def test_references(self):
        self.assertEqual(ba.reference("Revelation of John", 22, 21), "Rev 22:21")
        self.assertEqual(ba.reference("I Samuel", 3, 1), "1Sam 3:1")
        self.assertEqual(ba.reference("Tobit", 1, 1), "Tobit 1:1")


class DropCaps(unittest.TestCase):
    counts = {"aconteció": 5, "Jehová": 9, "jehová": 0, "ocho": 3, "Ocho": 1, "yo": 4}

    def check(self, text, expected):
        self.assertEqual(ba.undo_dropcap(text, self.counts), expected)

    def test_first_word_of_the_chapter(self):
        self.check("EN el principio crió Dios", "En el principio crió Dios")
        self.check("¡CÓMO está sentada sola", "¡Cómo está sentada sola")
        self.check("LIBRO de la generación", "Libro de la generación")

    def test_after_another_word_the_usual_spelling(self):
        self.check("Y ACONTECIÓ en los días", "Y aconteció en los días")
        self.check("Y JEHOVÁ dijo", "Y Jehová dijo")
        self.check("DE OCHO años era Josías", "De ocho años era Josías")
        self.check("Y YO me paré", "Y yo me paré")
        self.check("Y TORNÉME, y alcé", "Y tornéme, y alcé")  # unseen word: lower case

    def test_after_a_title_or_heading(self):
        self.check("Salmo de David. JEHOVÁ es mi pastor", "Salmo de David. Jehová es mi pastor")
        self.check("ALEPH. BIENAVENTURADOS los perfectos", "ALEPH. Bienaventurados los perfectos")

    def test_only_the_first_run(self):
        self.check("EN el monte JEHOVÁ", "En el monte JEHOVÁ")
        self.check("Y dijo Dios á Moisés: YO SOY EL QUE SOY.", "Y dijo Dios á Moisés: YO SOY EL QUE SOY.")

    def test_mid_sentence_counts(self):
        c = ba.mid_sentence_word_counts(["Y aconteció que Jehová habló. Aconteció, aconteció"])
        self.assertEqual((c["aconteció"], c["Aconteció"], c["Jehová"], c["Y"]), (2, 0, 1, 0))


def chapters(*verses):
    """{(book, chapter): {verse: text}} from (book, chapter, verse, text) tuples."""
    out = {}
    for b, c, v, t in verses:
        out.setdefault((b, c), {})[v] = t
    return out


def text(n):
    return "x" * n


class Align(unittest.TestCase):
    def test_pairs_by_reference_and_unmatched_books(self):
        src = chapters(("Genesis", 1, 1, "a b"), ("Genesis", 1, 2, "c d"), ("Tobit", 1, 1, "t"))
        tgt = chapters(("Genesis", 1, 1, "A B"), ("Genesis", 1, 2, "C D"))
        pairs, r = ba.align(src, tgt)
        self.assertEqual(pairs, [("a b", "A B", "Gen 1:1"), ("c d", "C D", "Gen 1:2")])
        self.assertEqual((r["source_only_books"], r["source_only_chapters"], r["dropped_chapters"]), (["Tobit"], 1, []))

    def test_chapter_with_other_verse_numbers_is_dropped(self):
        src = chapters(("Numbers", 12, 1, "a"), ("Numbers", 12, 2, "b"), ("Numbers", 12, 3, "c"), ("Numbers", 13, 1, "d"))
        tgt = chapters(("Numbers", 12, 1, "A"), ("Numbers", 12, 2, "B"), ("Numbers", 12, 3, ""), ("Numbers", 13, 1, "D"))
        pairs, r = ba.align(src, tgt, source_name="English", target_name="Spanish")
        self.assertEqual([p[2] for p in pairs], ["Num 13:1"])
        self.assertEqual(r["dropped_chapters"][0]["chapter"], "Num 12")
        self.assertEqual(r["dropped_chapters"][0]["reason"], "verse numbers differ (3 vs 2 verses; only in English: 3)")
        self.assertEqual(r["dropped_chapter_verses"], 3)

    def test_empty_in_both_is_not_a_difference(self):
        src = chapters(("III John", 1, 14, "a"), ("III John", 1, 15, ""))
        tgt = chapters(("III John", 1, 14, "A"))
        pairs, r = ba.align(src, tgt)
        self.assertEqual([p[2] for p in pairs], ["3John 1:14"])

    def test_shifted_chapter_is_dropped(self):
        lens = [(20, 20), (60, 60), (20, 20), (60, 60)]
        shifted = [(20, 60), (60, 20), (20, 60), (60, 20)]
        src = chapters(*[("Job", c, v + 1, text(a)) for c, ls in ((1, lens), (2, shifted), (3, lens)) for v, (a, _) in enumerate(ls)])
        tgt = chapters(*[("Job", c, v + 1, text(b)) for c, ls in ((1, lens), (2, shifted), (3, lens)) for v, (_, b) in enumerate(ls)])
        pairs, r = ba.align(src, tgt)
        self.assertEqual([d["chapter"] for d in r["dropped_chapters"]], ["Job 2"])
        self.assertIn("mean drift 1.10 > 0.25", r["dropped_chapters"][0]["reason"])
        self.assertEqual(len(pairs), 8)

    def test_partly_shifted_chapter_is_dropped(self):
        # 12 aligned verses, then 3 shifted ones: the mean stays low, a 3-verse window does not.
        good = [(40, 40), (80, 80)] * 6
        src = chapters(*[("Judges", 14, v + 1, text(a)) for v, (a, _) in enumerate(good + [(30, 90), (90, 30), (30, 90)])])
        tgt = chapters(*[("Judges", 14, v + 1, text(b)) for v, (_, b) in enumerate(good + [(30, 90), (90, 30), (30, 90)])])
        pairs, r = ba.align(src, tgt)
        self.assertEqual(pairs, [])
        self.assertEqual(r["dropped_chapters"][0]["reason"],
                         "verse lengths disagree at 13-15 (drift 1.10 > 0.75 over 3 verses): verses shifted")

    def test_single_outlier_pair_is_dropped(self):
        ls = [(50, 50)] * 7 + [(50, 130)]
        src = chapters(*[("Romans", 14, v + 1, text(a)) for v, (a, _) in enumerate(ls)])
        tgt = chapters(*[("Romans", 14, v + 1, text(b)) for v, (_, b) in enumerate(ls)])
        pairs, r = ba.align(src, tgt)
        self.assertEqual(len(pairs), 7)
        self.assertEqual(r["dropped_pairs"], [{"reference": "Rom 14:8", "drift": round(math.log(130 / 50), 2)}])
        self.assertEqual(r["dropped_chapters"], [])

    def test_length_ratio_is_relative_to_the_book(self):
        # Spanish 30% longer throughout: no drift.
        src = chapters(*[("Acts", 1, v, text(40 + 10 * v)) for v in range(1, 6)])
        tgt = chapters(*[("Acts", 1, v, text(int(1.3 * (40 + 10 * v)))) for v in range(1, 6)])
        pairs, r = ba.align(src, tgt)
        self.assertEqual((len(pairs), r["dropped_chapters"], r["dropped_pairs"]), (5, [], []))


class Tokens(unittest.TestCase):
    def test_like_task_translation(self):
        self.assertEqual(ba.tokens("Don’t stop—now, 3.5 or 10,000 at 12:30! twenty-one ¿Qué? «SÍ» “Let”"),
                         ["don’t", "stop", "—", "now", ",", "3.5", "or", "10,000", "at", "12:30", "!", "twenty-one",
                          "¿", "qué", "?", "«", "sí", "»", "“", "let", "”"])

    def test_length_stats(self):
        pairs = [("a b", "a", "r1"), ("a " * 25, "b", "r2"), ("a " * 40, "c " * 40, "r3")]
        s = ba.length_stats(pairs)
        self.assertEqual((s["source_tokens_median"], s["pairs_max_len_20"], s["pairs_max_len_30"]), (25, 1, 2))


class WriteTsv(unittest.TestCase):
    def test_refuses_tabs_and_newlines(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.tsv")
            ba.write_tsv(path, [("a", "b", "Gen 1:1")])
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "a\tb\tGen 1:1\n")
            for bad in ("a\tb", "a\nb", ""):
                with self.assertRaises(ValueError):
                    ba.write_tsv(path, [(bad, "b", "Gen 1:1")])


if __name__ == "__main__":
    unittest.main()
