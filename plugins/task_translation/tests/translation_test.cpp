// Tests for plugin task/translation's own code, on the public SDK and its test kit: tokenizer,
// vocabularies, BLEU against hand-computed values, splits, TSV reading, and the task as `ablate`
// loads it (the built plugin, made by name). Trained end to end: tests/plugins/task_translation_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/plugin.hpp"
#include "ablate/task.hpp"
#include "ablate/testing/kit.hpp"
#include "bleu.hpp"
#include "parallel_corpus.hpp"
#include "sacrebleu.hpp"
#include "text/deferred_task.hpp"
#include "text/splits.hpp"
#include "text/text_test_util.hpp"
#include "text/tokenizer.hpp"
#include "translation_task.hpp"
#include "text/vocabulary.hpp"

ABLATE_DECLARE_PLUGIN(task_translation)

namespace task_translation {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;
using Ids = std::vector<std::int32_t>;
using ablate::Split;
using namespace ablate_text;  // the shared text handling (plugins/common/text) it is built on
using ablate_text::testing::error_of;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

// The fixture TSVs beside this file.
fs::path data(const std::string& name) { return fs::path(__FILE__).parent_path() / "data" / name; }

Words tokens(std::string_view text, TokenizerOptions o = {}) { return Tokenizer(o).tokenize(text); }

// ---------------------------------------------------------------------------------------------
// Tokenizer

TEST(TranslationTokenizer, WordLevelLowercasesAndSplitsPunctuation) {
  EXPECT_EQ(tokens("Hello, world!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(tokens("  Go.\tNow  "), (Words{"go", ".", "now"})) << "any run of whitespace separates words";
  EXPECT_EQ(tokens("Wait... (really?)"), (Words{"wait", ".", ".", ".", "(", "really", "?", ")"}))
      << "each punctuation character is its own token";
  EXPECT_TRUE(tokens(" \t ").empty());
}

TEST(TranslationTokenizer, SpanishAccentsAndInvertedMarksAreUtf8Safe) {
  EXPECT_EQ(tokens("¿Dónde está?"), (Words{"¿", "dónde", "está", "?"}));
  EXPECT_EQ(tokens("¡ÁNGEL, ÉL Y ÑANDÚ ÜBER ÍO ÓLE!"), (Words{"¡", "ángel", ",", "él", "y", "ñandú", "über", "ío", "óle", "!"}));
  EXPECT_EQ(tokens("«Bonjour…» “Hi” — ‘ok’"), (Words{"«", "bonjour", "…", "»", "“", "hi", "”", "—", "‘", "ok", "’"}));
}

TEST(TranslationTokenizer, ContractionsHyphenatedWordsAndNumbersStayWhole) {
  EXPECT_EQ(tokens("Don't stop, it's twenty-one at 3.5 km/h, 10,000 at 12:30."),
            (Words{"don't", "stop", ",", "it's", "twenty-one", "at", "3.5", "km", "/", "h", ",", "10,000", "at", "12:30", "."}));
  EXPECT_EQ(tokens("don’t"), (Words{"don’t"})) << "the typographic apostrophe too";
  EXPECT_EQ(tokens("'quoted' -5 end."), (Words{"'", "quoted", "'", "-", "5", "end", "."}))
      << "an apostrophe or hyphen at a word's edge is punctuation";
}

TEST(TranslationTokenizer, OptionsTurnLowercasingAndPunctuationSplittingOff) {
  TokenizerOptions keep_case;
  keep_case.lowercase = false;
  EXPECT_EQ(tokens("Hello, Ángela!", keep_case), (Words{"Hello", ",", "Ángela", "!"}));
  TokenizerOptions whitespace_only;
  whitespace_only.split_punctuation = false;
  EXPECT_EQ(tokens("Hello, world! ¿Qué?", whitespace_only), (Words{"hello,", "world!", "¿qué?"}));
}

TEST(TranslationTokenizer, LowercasesAsciiLatin1LatinExtendedAGreekAndCyrillic) {
  EXPECT_EQ(to_lower("ABC xyz ÁÉÍÓÚ ÑÜ ÀÇÈÔ ÆØÅÞ"), "abc xyz áéíóú ñü àçèô æøåþ");
  EXPECT_EQ(to_lower("ŁÓDŹ ŚĆŻ ČŘŠŽ ĞŞ Ő Ű Œ Ÿ İ"), "łódź śćż čřšž ğş ő ű œ ÿ i");
  EXPECT_EQ(to_lower("ΑΘΗΝΑ Ά МОСКВА Ё"), "αθηνα ά москва ё");
  EXPECT_EQ(to_lower("× ß ı 123 ¿?"), "× ß ı 123 ¿?") << "no case: unchanged (× is not a letter)";
}

TEST(TranslationTokenizer, CharLevelGivesOneTokenPerCodePointWithoutSpaces) {
  TokenizerOptions chars;
  chars.level = Level::Char;
  EXPECT_EQ(tokens("我们走吧。", chars), (Words{"我", "们", "走", "吧", "。"}));
  EXPECT_EQ(tokens("你在哪儿？ 好！", chars), (Words{"你", "在", "哪", "儿", "？", "好", "！"}));
  EXPECT_EQ(tokens("Sí, 😀", chars), (Words{"s", "í", ",", "😀"})) << "2- and 4-byte characters stay whole, lower-cased";
  EXPECT_EQ(Tokenizer(chars).detokenize({"我", "们", "走", "吧", "。"}), "我们走吧。");
  EXPECT_EQ(Tokenizer().detokenize({"hello", ",", "world", "!"}), "hello , world !");
}

TEST(TranslationTokenizer, Utf8DecodingNeverSplitsCharactersAndFlagsInvalidBytes) {
  std::size_t pos = 0;
  const std::string s = "a\xC3\xA9\xE6\x88\x91\xF0\x9F\x98\x80";  // a é 我 😀: 1, 2, 3 and 4 bytes
  EXPECT_EQ(next_code_point(s, pos), U'a');
  EXPECT_EQ(next_code_point(s, pos), U'\u00E9');
  EXPECT_EQ(pos, 3u);
  EXPECT_EQ(next_code_point(s, pos), U'\u6211');
  EXPECT_EQ(next_code_point(s, pos), U'\U0001F600');
  EXPECT_EQ(pos, s.size());
  EXPECT_EQ(find_invalid_utf8(s), std::string::npos);
  EXPECT_EQ(find_invalid_utf8("ok\xC3"), 2u) << "truncated 2-byte sequence";
  EXPECT_EQ(find_invalid_utf8("\xE6\x88"), 0u) << "truncated 3-byte sequence";
  EXPECT_EQ(find_invalid_utf8("x\xC0\xAF"), 1u) << "overlong '/'";
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u) << "a UTF-16 surrogate";
  EXPECT_EQ(find_invalid_utf8("caf\xE9"), 3u) << "Latin-1, not UTF-8";
  EXPECT_EQ(find_invalid_utf8("\xEF\xBF\xBD"), std::string::npos) << "U+FFFD itself is valid";
  // Invalid bytes become U+FFFD tokens; the valid characters around them are intact.
  TokenizerOptions chars;
  chars.level = Level::Char;
  EXPECT_EQ(tokens("\xE6\x88 我", chars), (Words{"\xEF\xBF\xBD", "\xEF\xBF\xBD", "我"}));
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

Vocabulary vocabulary_of(const std::vector<Words>& sentences, std::int64_t min_freq) {
  Vocabulary::Builder b;
  for (const Words& s : sentences) b.add(s);
  return b.build(min_freq);
}

TEST(TranslationVocabulary, ReservedIdsThenDescendingFrequencyThenLexicographic) {
  // counts: the 3, cat 2, dog 2, a 1, sat 1
  const Vocabulary v = vocabulary_of({{"the", "cat", "sat"}, {"the", "dog"}, {"a", "dog", "the", "cat"}}, 1);
  ASSERT_EQ(v.size(), 9);
  const Words expected = {"<pad>", "<bos>", "<eos>", "<unk>", "the", "cat", "dog", "a", "sat"};
  for (std::int32_t id = 0; id < 9; ++id) EXPECT_EQ(v.token(id), expected[static_cast<std::size_t>(id)]) << id;
  EXPECT_EQ(Vocabulary::kPad, ablate::TaskInfo::kPad);
  EXPECT_EQ(Vocabulary::kBos, ablate::TaskInfo::kBos);
  EXPECT_EQ(Vocabulary::kEos, ablate::TaskInfo::kEos);
  EXPECT_EQ(v.id("cat"), 5);
  EXPECT_EQ(v.encode({"a", "cat", "unseen"}), (Ids{7, 5, Vocabulary::kUnk}));
}

TEST(TranslationVocabulary, MinFreqSendsRareTokensToUnk) {
  const Vocabulary v = vocabulary_of({{"the", "cat", "sat"}, {"the", "dog"}, {"a", "dog", "the", "cat"}}, 2);
  EXPECT_EQ(v.size(), 4 + 3);  // the, cat, dog
  EXPECT_EQ(v.encode({"the", "sat", "dog", "a"}), (Ids{4, 3, 6, 3}));
  EXPECT_EQ(vocabulary_of({{"x"}}, 5).size(), 4) << "only the reserved ids";
}

TEST(TranslationVocabulary, DecodeDropsControlIdsAndReservedSpellingsAreUnk) {
  const Vocabulary v = vocabulary_of({{"hola", "<pad>", "<eos>", "<unk>"}}, 1);
  EXPECT_EQ(v.size(), 5) << "text spelled like a reserved token is not a content token";
  EXPECT_EQ(v.encode({"<pad>", "<bos>", "<eos>", "<unk>", "hola"}), (Ids{3, 3, 3, 3, 4}))
      << "text can never produce pad/bos/eos ids";
  EXPECT_EQ(v.decode({1, 4, 3, 0, 2, 99, -1}), (Words{"hola", "<unk>", "<unk>", "<unk>"}))
      << "pad/bos/eos dropped; unk and ids outside the table rendered <unk>";
}

// ---------------------------------------------------------------------------------------------
// BLEU

TEST(TranslationBleu, D2lSentenceBleuMatchesHandComputedValues) {
  // pred "a b d" vs label "a b c d", k = 2:
  //   penalty exp(min(0, 1 - 4/3)) = exp(-1/3)
  //   n=1: a, b, d all in the label: p1 = 3/3 -> 1^(1/2) = 1
  //   n=2: pred bigrams {a b, b d}, label bigrams {a b, b c, c d}: p2 = 1/2 -> (1/2)^(1/4)
  //   score = exp(-1/3) * 0.5^0.25 = 0.716531 * 0.840896 = 0.602529
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"a", "b", "d"}, {"a", "b", "c", "d"}, 2), std::exp(-1.0 / 3) * std::pow(0.5, 0.25),
              1e-12);
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"a", "b", "d"}, {"a", "b", "c", "d"}, 2), 0.602529, 1e-6);
  // Clipping: pred "a a b" vs label "a b b" (same length: penalty 1).
  //   n=1: a x2 in pred, x1 in label -> 1; b x1 -> 1: p1 = 2/3 -> (2/3)^(1/2) = 0.816497
  //   n=2: pred {a a, a b}, label {a b, b b}: p2 = 1/2 -> (1/2)^(1/4) = 0.840896
  //   k=1: 0.816497; k=2: 0.816497 * 0.840896 = 0.686589
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"a", "a", "b"}, {"a", "b", "b"}, 1), std::sqrt(2.0 / 3), 1e-12);
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"a", "a", "b"}, {"a", "b", "b"}, 2), 0.686589, 1e-6);
  // Longer than the label: no penalty (min(0, 1 - 2/3) = 0); "the the the" vs "the cat": p1 = 1/3,
  // p2 = 0/2 ("the the" x2, label only has "the cat") -> 0.
  EXPECT_EQ(d2l_sentence_bleu<std::string>({"the", "the", "the"}, {"the", "cat"}, 2), 0.0);
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"the", "the", "the"}, {"the", "cat"}, 1), std::sqrt(1.0 / 3), 1e-12);
  EXPECT_EQ(d2l_sentence_bleu<std::string>({"ve", "."}, {"ve", "."}, 2), 1.0) << "exact: 1";
  EXPECT_EQ(d2l_sentence_bleu<std::int32_t>({7, 8, 9}, {7, 8, 9}, 4), 1.0) << "ids; k above the length";
}

TEST(TranslationBleu, D2lSentenceBleuOfShortAndEmptyPredictions) {
  // D2L loops n = 1 .. min(k, len_pred): pred "a" vs label "a b", k = 2 only has n = 1:
  //   penalty exp(1 - 2/1) = exp(-1) = 0.367879; p1 = 1/1 -> score exp(-1).
  EXPECT_NEAR(d2l_sentence_bleu<std::string>({"a"}, {"a", "b"}, 2), std::exp(-1.0), 1e-12);
  EXPECT_EQ(d2l_sentence_bleu<std::string>({"x"}, {"a", "b"}, 2), 0.0) << "p1 = 0";
  EXPECT_EQ(d2l_sentence_bleu<std::string>({}, {"a", "b"}, 2), 0.0) << "an empty prediction scores 0";
  EXPECT_EQ(d2l_sentence_bleu<std::string>({"a"}, {}, 2), 0.0) << "nothing to match";
}

TEST(TranslationBleu, CorpusBleuOfPerfectDisjointAndShortCorpora) {
  const std::vector<Words> refs = {{"the", "cat", "sat", "on", "the", "mat"}, {"a", "dog", "runs", "in", "the", "park"}};
  EXPECT_NEAR(corpus_bleu(refs, refs), 100.0, 1e-12);
  EXPECT_EQ(corpus_bleu<std::string>({{"x", "y", "z", "w"}}, {{"a", "b", "c", "d"}}), 0.0);
  // Exact but shorter than 4 tokens: no 4-grams at all, p4 undefined -> 0 (sacrebleu without smoothing).
  EXPECT_EQ(corpus_bleu<std::string>({{"hello", "there"}}, {{"hello", "there"}}), 0.0);
  EXPECT_EQ(corpus_bleu<std::string>({}, {}), 0.0);
  EXPECT_THROW(corpus_bleu<std::string>({{"a"}}, {}), std::invalid_argument);
}

TEST(TranslationBleu, CorpusBleuWithPartialMatchesAndBrevityPenalty) {
  // hyp "the cat sat on the mat" (c = 6) vs ref "the cat sat on the red mat" (r = 7):
  //   p1: the x2, cat, sat, on, mat all in ref           = 6/6
  //   p2: the cat, cat sat, sat on, on the | not the mat  = 4/5
  //   p3: the cat sat, cat sat on, sat on the | not on the mat = 3/4
  //   p4: the cat sat on, cat sat on the | not sat on the mat  = 2/3
  //   geometric mean (1 * 4/5 * 3/4 * 2/3)^(1/4) = 0.4^(1/4) = 0.795271
  //   BP = exp(1 - 7/6) = exp(-1/6) = 0.846482     -> BLEU = 100 * 0.846482 * 0.795271 = 67.3182
  const Words hyp = {"the", "cat", "sat", "on", "the", "mat"}, ref = {"the", "cat", "sat", "on", "the", "red", "mat"};
  EXPECT_NEAR(corpus_bleu<std::string>({hyp}, {ref}), 100.0 * std::exp(-1.0 / 6) * std::pow(0.4, 0.25), 1e-9);
  EXPECT_NEAR(corpus_bleu<std::string>({hyp}, {ref}), 67.3182, 1e-4);
  // Corpus level sums the counts (not a mean of sentence scores): add the exact pair
  // "hello there" / "hello there" (2 tokens: 2 unigrams, 1 bigram, no 3- or 4-grams):
  //   p1 = (6+2)/(6+2) = 1, p2 = (4+1)/(5+1) = 5/6, p3 = 3/4, p4 = 2/3; c = 8, r = 9
  //   BLEU = 100 * exp(1 - 9/8) * (5/6 * 3/4 * 2/3)^(1/4) = 100 * 0.882497 * 0.803428 = 70.9023
  const Words hello = {"hello", "there"};
  EXPECT_NEAR(corpus_bleu<std::string>({hyp, hello}, {ref, hello}), 70.9023, 1e-4);
  // The same with ids.
  EXPECT_NEAR(corpus_bleu<std::int32_t>({{4, 5, 6, 7, 4, 8}}, {{4, 5, 6, 7, 4, 9, 8}}), 67.3182, 1e-4);
  // Clipping: "the the the the" vs "the cat": p1 = 1/4 (clipped), p2 = 0 -> 0.
  EXPECT_EQ(corpus_bleu<std::string>({{"the", "the", "the", "the"}}, {{"the", "cat"}}), 0.0);
}

// The sacreBLEU tokenizer and scores: the expected values are what sacrebleu 2.6.0 (Python) gives
// for the same text (its Tokenizer13a, corpus_bleu and corpus_chrf with their defaults);
// tests/plugins/translation_sacrebleu_test.sh compares trained models' scores with the package live.
TEST(TranslationSacreBleu, Tokenizer13aSplitsAsSacrebleuDoes) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), (Words{"Hello", ",", "world", "!"}));
  EXPECT_EQ(tokenize_13a("¡Hola, mundo!"), (Words{"¡Hola", ",", "mundo", "!"})) << "only ASCII symbols split off";
  EXPECT_EQ(tokenize_13a("It costs $3.50, or 1,000 yen."), (Words{"It", "costs", "$", "3.50", ",", "or", "1,000", "yen", "."}))
      << "a period or comma inside a number stays";
  EXPECT_EQ(tokenize_13a("a-b 3-4 x.y 2."), (Words{"a-b", "3", "-", "4", "x", ".", "y", "2", "."}));
  EXPECT_EQ(tokenize_13a("&quot;Quoted&quot; &amp; <tag>"), (Words{"\"", "Quoted", "\"", "&", "<", "tag", ">"}));
  EXPECT_EQ(tokenize_13a("café.  Über,naïve"), (Words{"café", ".", "Über", ",", "naïve"}));
  EXPECT_EQ(tokenize_13a("e.g. U.S.A..."), (Words{"e", ".", "g", ".", "U", ".", "S", ".", "A", ".", ".", "."}));
  EXPECT_EQ(tokenize_13a("tab\there\u00a0nbsp\u3000ideo"), (Words{"tab", "here", "nbsp", "ideo"})) << "Unicode spaces split";
  EXPECT_TRUE(tokenize_13a("").empty());
}

TEST(TranslationSacreBleu, TokenizerZhSplitsEveryChineseCharacterAsSacrebleuDoes) {
  EXPECT_EQ(tokenize_zh("我是学生。"), (Words{"我", "是", "学", "生", "。"}));
  EXPECT_EQ(tokenize_zh("他说：“你好！”"), (Words{"他", "说", "：", "“", "你", "好", "！", "”"}));
  EXPECT_EQ(tokenize_zh("I have 3.5 apples, 我有苹果."), (Words{"I", "have", "3.5", "apples", ",", "我", "有", "苹", "果", "."}));
  EXPECT_EQ(tokenize_zh("Hello—world… ok"), (Words{"Hello", "—", "world", "…", "ok"}))
      << "sacrebleu's range (U+2000, U+2A6D], read from its five-digit escape, holds the dash and the ellipsis";
  EXPECT_EQ(tokenize_zh("ＡＢＣ１２３ test"), (Words{"Ａ", "Ｂ", "Ｃ", "１", "２", "３", "test"}));
  SacreBleu zh(BleuTokenizer::Zh), t13a;
  const std::vector<std::string> hyp = {"我是学生。", "他是老师。", "我们喜欢茶"},
                                 ref = {"我是学生。", "她是医生。", "我们喜欢喝茶。"};
  for (std::size_t i = 0; i < hyp.size(); ++i) zh.add(hyp[i], ref[i]), t13a.add(hyp[i], ref[i]);
  EXPECT_NEAR(zh.score(), 52.51340016554336, 1e-9);
  EXPECT_LT(t13a.score(), 20.0) << "13a keeps an unsegmented sentence whole";
}

TEST(TranslationSacreBleu, CorpusScoresEqualSacrebleusDefaults) {
  const std::vector<std::string> hyp = {"El gato duerme.", "¿Dónde está la estación?", "Tengo hambre"},
                                 ref = {"El gato duerme.", "¿Dónde está el tren?", "Tengo mucha hambre."};
  SacreBleu bleu;
  Chrf chrf;
  for (std::size_t i = 0; i < hyp.size(); ++i) bleu.add(hyp[i], ref[i]), chrf.add(hyp[i], ref[i]);
  EXPECT_NEAR(bleu.score(), 40.29275918693655, 1e-9);
  EXPECT_NEAR(chrf.score(), 62.278610353264284, 1e-9);
  // Exponential smoothing: no 4-gram matches, p4 = 100 / (2 * 1); sacrebleu's "none" gives 0.
  SacreBleu one;
  one.add("a b c d", "a b c e");
  EXPECT_NEAR(one.score(), 59.460355750136046, 1e-9);
  EXPECT_EQ(corpus_bleu<std::string>({{"a", "b", "c", "d"}}, {{"a", "b", "c", "e"}}), 0.0);
  EXPECT_EQ(SacreBleu().score(), 0.0);
  EXPECT_EQ(Chrf().score(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Splits

TEST(TranslationSplits, ShuffleIsDeterministicDisjointAndSized) {
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xE220A8397B1DCDAFull) << "the reference splitmix64 output for seed 0";
  const SplitIndices a = split_indices(100, 0.05, 0.1, 7), b = split_indices(100, 0.05, 0.1, 7);
  EXPECT_EQ(a.test.size(), 10u);
  EXPECT_EQ(a.eval.size(), 5u);
  EXPECT_EQ(a.train.size(), 85u);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.eval, b.eval);
  EXPECT_EQ(a.test, b.test);
  std::set<std::int64_t> all;
  for (const auto* part : {&a.train, &a.eval, &a.test}) all.insert(part->begin(), part->end());
  EXPECT_EQ(all.size(), 100u) << "disjoint";
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 99);
  EXPECT_NE(split_indices(100, 0.05, 0.1, 8).test, a.test) << "the seed changes the split";
  EXPECT_FALSE(std::is_sorted(a.train.begin(), a.train.end())) << "shuffled";
  // Sizes round up: ceil(0.05 * 21) = 2; 0.07 * 100 = 7.000000000000001 counts as 7.
  EXPECT_EQ(split_indices(21, 0.05, 0.05, 1).eval.size(), 2u);
  EXPECT_EQ(split_indices(100, 0.07, 0.0, 1).eval.size(), 7u);
  EXPECT_TRUE(split_indices(100, 0.07, 0.0, 1).test.empty());
  EXPECT_THROW(split_indices(2, 0.05, 0.05, 1), ablate::Error) << "no train pairs left";
  const SplitIndices toy = split_indices(10, 0.0, 0.2, 1);  // valid_fraction 0: eval on the train examples
  EXPECT_EQ(toy.train.size(), 8u);
  EXPECT_EQ(toy.eval, toy.train);
  EXPECT_EQ(toy.test.size(), 2u);
  EXPECT_THROW(split_indices(100, -0.1, 0.05, 1), ablate::Error);
  EXPECT_THROW(split_indices(100, 0.5, 1.0, 1), ablate::Error);
}

// ---------------------------------------------------------------------------------------------
// Reading TSV files

Corpus read(const std::string& text, CorpusOptions o = {}) {
  std::istringstream in(text);
  return read_parallel_tsv(in, "mem.tsv", o);
}

TEST(TranslationCorpus, ReadsTatoebaLinesCrlfBomAndBlankLines) {
  const Corpus c = read("\xEF\xBB\xBFGo.\tVe.\tCC-BY 2.0 (France) Attribution: x\r\n\r\nHi.\t\xC2\xA1Hola!\r\n");
  ASSERT_EQ(c.pairs.size(), 2u);
  EXPECT_EQ(c.pairs[0], (TokenizedPair{{"go", "."}, {"ve", "."}, 1, "Ve.", "Go."})) << "BOM and the third column ignored";
  EXPECT_EQ(c.pairs[1], (TokenizedPair{{"hi", "."}, {"¡", "hola", "!"}, 3, "¡Hola!", "Hi."}))
      << "CR stripped, blank line skipped; the target as written kept";
  EXPECT_EQ(c.lines_read, 3);
  const Corpus empty_side = read("Go.\t\nOk.\t...\n \tAlgo.\n\t\nYes.\tS\xC3\xAD.\n");
  ASSERT_EQ(empty_side.pairs.size(), 2u) << "pairs with an empty side are dropped, whitespace-only lines skipped";
  EXPECT_EQ(empty_side.dropped_empty, 2);
  EXPECT_EQ(empty_side.pairs[0].tgt, (Words{".", ".", "."}));
}

TEST(TranslationCorpus, FilterDropsAndTruncateCutsLongPairs) {
  const std::string text = "a b c\tx y\na b c d e\tx\na\tv w x y z\nq\tr\n";
  CorpusOptions o;
  o.max_len = 3;
  const Corpus filtered = read(text, o);
  ASSERT_EQ(filtered.pairs.size(), 2u);
  EXPECT_EQ(filtered.pairs[0].line, 1);
  EXPECT_EQ(filtered.pairs[1].line, 4);
  EXPECT_EQ(filtered.dropped_long, 2);
  o.long_examples = LongExamples::Truncate;
  const Corpus cut = read(text, o);
  ASSERT_EQ(cut.pairs.size(), 4u);
  EXPECT_EQ(cut.truncated, 2);
  EXPECT_EQ(cut.pairs[1], (TokenizedPair{{"a", "b", "c"}, {"x"}, 2, "x", "a b c d e"}));
  EXPECT_EQ(cut.pairs[2], (TokenizedPair{{"a"}, {"v", "w", "x"}, 3, "v w x y z", "a"})) << "the reference text is never cut";
  o.long_examples = LongExamples::Filter;
  o.max_examples = 1;
  const Corpus first = read(text, o);
  ASSERT_EQ(first.pairs.size(), 1u);
  EXPECT_EQ(first.pairs[0].line, 1);
  o.max_examples = 2;
  EXPECT_EQ(read(text, o).pairs[1].line, 4) << "the first N pairs after filtering";
}

TEST(TranslationCorpus, ErrorsNameTheFileAndLine) {
  const std::string missing_tab = error_of([] { read("Go.\tVe.\nno tab here\n"); });
  EXPECT_NE(missing_tab.find("mem.tsv:2: no tab; expected 'source<TAB>target'"), std::string::npos) << missing_tab;
  const std::string latin1 = error_of([] { read("Go.\tVe.\n\nCaf\xE9.\tCaf\xE9.\n"); });
  EXPECT_NE(latin1.find("mem.tsv:3: invalid UTF-8 at byte 4"), std::string::npos) << latin1;
  const std::string file = data("translation_missing_tab.tsv").string();
  const std::string fixture = error_of([&] { read_parallel_tsv_file(file, {}); });
  EXPECT_NE(fixture.find(file + ":3: no tab"), std::string::npos) << fixture;
  const std::string absent = error_of([] { read_parallel_tsv_file("no/such/file.tsv", {}); });
  EXPECT_NE(absent.find("cannot read 'no/such/file.tsv'"), std::string::npos) << absent;
  EXPECT_NE(absent.find("relative to the current directory"), std::string::npos) << absent;
}

// ---------------------------------------------------------------------------------------------
// The task

class TranslationTaskTest : public ::testing::Test {
 protected:
  // The task made by the built plugin (ctest puts its directory on ABLATE_PLUGIN_PATH), as its class.
  std::shared_ptr<TranslationTask> make(std::map<std::string, std::string> options) {
    auto t = ablate_text::built_as<TranslationTask>(kit::make_task("translation", options));
    EXPECT_NE(t, nullptr);
    return t;
  }
  std::shared_ptr<TranslationTask> spanish(std::map<std::string, std::string> extra = {}) {
    extra["file"] = data("translation_eng_spa.tsv").string();
    return make(extra);
  }
  // The original lines of the fixture (1-based: lines[0] is unused).
  static std::vector<std::string> lines_of(const std::string& name) {
    std::ifstream in(data(name));
    std::vector<std::string> lines(1);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  static std::string column(const std::string& line, int i) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    return cols.at(static_cast<std::size_t>(i));
  }
};

TEST_F(TranslationTaskTest, ThePluginsHintReachesTheCaller) {
  try {
    spanish({{"valid_fraction", "0.6"}, {"test_fraction", "0.5"}});
    FAIL() << "fractions leaving no train pairs must be refused";
  } catch (const ablate::PluginError& e) {  // make_component keeps the plugin's hint
    EXPECT_NE(std::string(e.what()).find("leave no training data"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("lower valid_fraction"), std::string::npos) << "hint: " << e.hint();
  }
}

// encode() tokenizes each side as the file was and looks its tokens up in that side's
// vocabulary: the source text of every example reads back as its ids.
TEST_F(TranslationTaskTest, EncodeReadsBackEachSideOfEveryExample) {
  const auto t = spanish();
  int checked = 0;
  for (std::int64_t i = 0; i < t->size(ablate::Split::Train); ++i) {
    const ablate::Example e = t->example(ablate::Split::Train, i);
    const auto unk = [](const std::vector<std::int32_t>& ids) {
      return std::count(ids.begin(), ids.end(), ablate_text::Vocabulary::kUnk);
    };
    if (unk(e.src) || unk(e.tgt)) continue;  // "<unk>" as text is not read back as the id
    std::int64_t unknown = -1;
    EXPECT_EQ(t->encode(t->text(e.src, false), false, &unknown), e.src) << t->text(e.src, false);
    EXPECT_EQ(unknown, 0);
    EXPECT_EQ(t->encode(t->text(e.tgt, true), true, nullptr), e.tgt) << t->text(e.tgt, true);
    ++checked;
  }
  EXPECT_GE(checked, 10);
  std::int64_t unknown = 0;
  const auto ids = t->encode("zzzqqq xxyyzz", false, &unknown);
  EXPECT_EQ(ids, (std::vector<std::int32_t>{ablate_text::Vocabulary::kUnk, ablate_text::Vocabulary::kUnk}));
  EXPECT_EQ(unknown, 2);
}

TEST_F(TranslationTaskTest, DeclaresItsOptionsAndScores) {
  const ablate::OptionList& declared = task_translation::plugin_info.options;
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < declared.size; ++i) names.push_back(declared.data[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"file", "source_tokens", "target_tokens", "lowercase", "split_punctuation",
                                             "min_freq", "max_len", "long_examples", "max_examples", "valid_fraction",
                                             "test_fraction", "split_seed", "bleu_k", "joint_vocabulary", "sacrebleu_tokenize"}));
  EXPECT_THROW(kit::make_component<ablate::Task>("translation"), ablate::Error) << "file is required";
  EXPECT_EQ(spanish()->score_names(), (std::vector<std::string>{"exact_match", "token_accuracy", "bleu", "sacrebleu", "chrf",
                                                                "sentence_bleu", "n_bleu_gt_0", "n_bleu_gt_0_8", "n_sentences"}));
}

TEST_F(TranslationTaskTest, ReadsATatoebaFileIntoSplitsThatAreStableAndDisjoint) {
  const auto a = spanish(), b = spanish();
  // 14 pairs: test ceil(0.05 * 14) = 1, eval ceil(0.05 * 14) = 1, train 12.
  EXPECT_EQ(a->size(Split::Test), 1);
  EXPECT_EQ(a->size(Split::Eval), 1);
  EXPECT_EQ(a->size(Split::Train), 12);
  std::set<std::int64_t> lines;
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < a->size(s); ++i) {
      EXPECT_EQ(a->example(s, i), b->example(s, i)) << "the same examples in a second construction";
      EXPECT_EQ(a->line_of(s, i), b->line_of(s, i));
      lines.insert(a->line_of(s, i));
    }
  EXPECT_EQ(lines.size(), 14u) << "every line in exactly one split";
  EXPECT_THROW(a->example(Split::Eval, 1), ablate::Error);
  EXPECT_THROW(a->example(Split::Train, -1), ablate::Error);
  const auto c = spanish({{"split_seed", "2"}, {"valid_fraction", "0.3"}, {"test_fraction", "0.2"}});
  EXPECT_EQ(c->size(Split::Test), 3);  // ceil(2.8)
  EXPECT_EQ(c->size(Split::Eval), 5);  // ceil(4.2)
  EXPECT_EQ(c->size(Split::Train), 6);
  const auto info = a->info();
  EXPECT_EQ(info.type, ablate::TaskType::Seq2Seq);
  EXPECT_EQ(info.max_src_len, 20);
  EXPECT_EQ(info.max_tgt_len, 20);
  EXPECT_EQ(info.vocab_size, std::max(a->source_vocabulary().size(), a->target_vocabulary().size()));
  EXPECT_NE(a->source_vocabulary().size(), a->target_vocabulary().size()) << "separate vocabularies";
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < a->size(s); ++i) {
      const ablate::Example e = a->example(s, i);
      for (const Ids* side : {&e.src, &e.tgt})
        for (std::int32_t id : *side) {
          EXPECT_GE(id, Vocabulary::kUnk);
          EXPECT_LT(id, info.vocab_size);
        }
    }
}

TEST_F(TranslationTaskTest, VocabulariesComeFromTheTrainSplitOnly) {
  // A large held-out part, so that some held-out words never occur in train.
  const auto t = spanish({{"valid_fraction", "0.3"}, {"test_fraction", "0.3"}});
  const auto lines = lines_of("translation_eng_spa.tsv");
  std::set<std::string> train_src, train_tgt;
  const Tokenizer tok;
  for (std::int64_t i = 0; i < t->size(Split::Train); ++i) {
    for (const auto& w : tok.tokenize(column(lines[static_cast<std::size_t>(t->line_of(Split::Train, i))], 0)))
      train_src.insert(w);
    for (const auto& w : tok.tokenize(column(lines[static_cast<std::size_t>(t->line_of(Split::Train, i))], 1)))
      train_tgt.insert(w);
    const Ids tgt = t->example(Split::Train, i).tgt;
    EXPECT_EQ(std::count(tgt.begin(), tgt.end(), Vocabulary::kUnk), 0) << "every train token is in the vocabulary";
  }
  EXPECT_EQ(t->source_vocabulary().size(), 4 + static_cast<std::int64_t>(train_src.size()));
  EXPECT_EQ(t->target_vocabulary().size(), 4 + static_cast<std::int64_t>(train_tgt.size()));
  int unknown = 0;
  for (Split s : {Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < t->size(s); ++i) {
      const Words words = tok.tokenize(column(lines[static_cast<std::size_t>(t->line_of(s, i))], 1));
      const Ids ids = t->example(s, i).tgt;
      ASSERT_EQ(words.size(), ids.size());
      for (std::size_t k = 0; k < words.size(); ++k) {
        const bool seen = train_tgt.count(words[k]) > 0;
        EXPECT_EQ(ids[k] == Vocabulary::kUnk, !seen) << words[k];
        unknown += seen ? 0 : 1;
      }
    }
  EXPECT_GT(unknown, 0) << "the fixture has held-out-only words";
  // min_freq 2: a word seen once in train is <unk> even there.
  const auto frequent = spanish({{"min_freq", "2"}});
  EXPECT_LT(frequent->target_vocabulary().size(), spanish({})->target_vocabulary().size());
  // On the small train split above, min_freq 2 leaves most tokens <unk>: refused, saying how many.
  const std::string refused = error_of([&] {
    spanish({{"valid_fraction", "0.3"}, {"test_fraction", "0.3"}, {"min_freq", "2"}});
  });
  EXPECT_NE(refused.find("% of the train split's source tokens <unk>; expected most tokens known"), std::string::npos) << refused;
  EXPECT_NE(refused.find("lower min_freq"), std::string::npos) << refused;
}

TEST_F(TranslationTaskTest, FilterTruncateAndMaxExamples) {
  // Token counts of the fixture (source / target), e.g. line 13 "the cat and the dog sleep ." = 7
  // and "el gato y el perro duermen ." = 7; every other side has at most 6 tokens.
  const auto filtered = spanish({{"max_len", "6"}});
  EXPECT_EQ(filtered->corpus_stats().dropped_long, 1);
  EXPECT_EQ(filtered->size(Split::Train) + filtered->size(Split::Eval) + filtered->size(Split::Test), 13);
  const auto cut = spanish({{"max_len", "6"}, {"long_examples", "truncate"}});
  EXPECT_EQ(cut->corpus_stats().truncated, 1);
  EXPECT_EQ(cut->size(Split::Train) + cut->size(Split::Eval) + cut->size(Split::Test), 14);
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < cut->size(s); ++i) {
      EXPECT_LE(cut->example(s, i).src.size(), 6u);
      if (cut->line_of(s, i) == 13) {
        EXPECT_EQ(cut->text(cut->example(s, i).tgt, true), "el gato y el perro duermen");
      }
    }
  const auto first = spanish({{"max_examples", "10"}, {"valid_fraction", "0.1"}, {"test_fraction", "0.1"}});
  std::set<std::int64_t> lines;
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < first->size(s); ++i) lines.insert(first->line_of(s, i));
  EXPECT_EQ(lines, (std::set<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})) << "the first 10 pairs of the file";
}

TEST_F(TranslationTaskTest, TextRoundTripsBothSides) {
  const auto t = spanish({{"valid_fraction", "0.3"}, {"test_fraction", "0.3"}});
  const auto lines = lines_of("translation_eng_spa.tsv");
  const Tokenizer tok;
  for (std::int64_t i = 0; i < t->size(Split::Train); ++i) {
    const std::string& line = lines[static_cast<std::size_t>(t->line_of(Split::Train, i))];
    const ablate::Example e = t->example(Split::Train, i);
    EXPECT_EQ(t->text(e.src, false), tok.detokenize(tok.tokenize(column(line, 0))));
    EXPECT_EQ(t->text(e.tgt, true), tok.detokenize(tok.tokenize(column(line, 1))));
  }
  // Control ids render as nothing, <unk> as itself.
  const Ids hola = {ablate::TaskInfo::kBos, t->target_vocabulary().id("¡"), Vocabulary::kUnk, ablate::TaskInfo::kEos,
                    ablate::TaskInfo::kPad};
  EXPECT_EQ(t->text(hola, true), "¡ <unk>");
  // Lower-casing off: capitals are their own tokens, and text() shows them.
  const auto cased = spanish({{"lowercase", "false"}});
  EXPECT_NE(cased->target_vocabulary().id("Dónde"), Vocabulary::kUnk);
  EXPECT_EQ(cased->target_vocabulary().id("dónde"), Vocabulary::kUnk);
  bool found = false;
  for (std::int64_t i = 0; i < cased->size(Split::Train); ++i)
    if (cased->line_of(Split::Train, i) == 2) {
      EXPECT_EQ(cased->text(cased->example(Split::Train, i).tgt, true), "¿ Dónde está la estación ?");
      EXPECT_EQ(cased->text(cased->example(Split::Train, i).src, false), "Where is the station ?");
      found = true;
    }
  EXPECT_TRUE(found) << "line 2 is in the train split (12 of the 14 lines are, under split_seed 1)";
}

TEST_F(TranslationTaskTest, CharacterLevelChineseTargets) {
  const auto t = make({{"file", data("translation_eng_cmn.tsv").string()},
                       {"target_tokens", "char"},
                       {"valid_fraction", "0.1"},
                       {"test_fraction", "0.1"}});
  const auto lines = lines_of("translation_eng_cmn.tsv");
  EXPECT_EQ(t->size(Split::Train), 8);
  std::map<std::string, int> counts;
  for (std::int64_t i = 0; i < t->size(Split::Train); ++i) {
    const std::string line = lines[static_cast<std::size_t>(t->line_of(Split::Train, i))];
    const ablate::Example e = t->example(Split::Train, i);
    for (std::size_t pos = 0; pos < column(line, 1).size();) {
      const std::string text = column(line, 1);
      const std::size_t at = pos;
      next_code_point(text, pos);
      ++counts[text.substr(at, pos - at)];
    }
    EXPECT_EQ(t->text(e.tgt, true), column(line, 1)) << "characters concatenate back to the sentence";
    if (column(line, 1) == "我们走吧。") {
      EXPECT_EQ(e.tgt.size(), 5u);
    }
  }
  // One entry per distinct train character; ids by descending count, ties in byte order.
  EXPECT_EQ(t->target_vocabulary().size(), 4 + static_cast<std::int64_t>(counts.size()));
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [c, n] : counts) order.emplace_back(-n, c);
  std::sort(order.begin(), order.end());
  for (std::size_t k = 0; k < order.size(); ++k)
    EXPECT_EQ(t->target_vocabulary().token(static_cast<std::int32_t>(4 + k)), order[k].second) << k;
  EXPECT_TRUE(order[0].second == "。" || order[0].second == "我") << "the commonest: " << order[0].second;
}

TEST_F(TranslationTaskTest, BadOptionsAndFilesAreErrorsNamingThePlugin) {
  const std::string file = data("translation_eng_spa.tsv").string();
  const auto error = [&](std::map<std::string, std::string> o) { return error_of([&] { make(o); }); };
  EXPECT_NE(error({{"file", file}, {"max_len", "0"}}).find("task/translation: max_len must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"min_freq", "0"}}).find("min_freq must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"bleu_k", "0"}}).find("bleu_k must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"valid_fraction", "0.6"}, {"test_fraction", "0.5"}}).find("leave no training data"),
            std::string::npos);
  EXPECT_NE(error({{"file", file}, {"max_len", "1"}}).find("no pairs left"), std::string::npos);
  const std::string bad = data("translation_missing_tab.tsv").string();
  EXPECT_NE(error({{"file", bad}}).find("task/translation: " + bad + ":3: no tab"), std::string::npos) << error({{"file", bad}});
  EXPECT_NE(error({{"file", "/no/such.tsv"}}).find("task/translation: cannot read '/no/such.tsv'"), std::string::npos);
}

TEST_F(TranslationTaskTest, ScoreAddsCorpusAndSentenceBleu) {
  const auto t = spanish({{"bleu_k", "2"}});
  const auto names = t->score_names();
  // Two references of target ids; BLEU looks at ids only, so any ids >= 4 of the vocabulary do.
  const std::vector<ablate::Example> refs = {{{4}, {4, 5, 6, 7, 4, 8}}, {{4}, {9, 10, 11, 12}}};
  {  // Perfect predictions: every score at its best.
    const auto s = t->score(refs, {refs[0].tgt, refs[1].tgt});
    std::vector<std::string> keys;
    for (const auto& [k, v] : s) keys.push_back(k);
    std::vector<std::string> sorted_names = names;
    std::sort(sorted_names.begin(), sorted_names.end());
    EXPECT_EQ(keys, sorted_names) << "score() returns exactly score_names()";
    EXPECT_EQ(s.at("exact_match"), 1.0);
    EXPECT_EQ(s.at("token_accuracy"), 1.0);
    EXPECT_NEAR(s.at("bleu"), 100.0, 1e-9);
    EXPECT_EQ(s.at("sentence_bleu"), 1.0);
    EXPECT_EQ(s.at("n_bleu_gt_0"), 2.0);
    EXPECT_EQ(s.at("n_bleu_gt_0_8"), 2.0);
    EXPECT_EQ(s.at("n_sentences"), 2.0);
  }
  {  // Sentence 1: "a b d" style partial (see D2lSentenceBleuMatchesHandComputedValues): pred {4,5,7}
     // vs {4,5,6,7,4,8}: penalty exp(1 - 6/3) = exp(-1); p1 = 3/3; p2: {4 5} matches, {5 7} not = 1/2
     // -> exp(-1) * 0.5^0.25 = 0.309348. Sentence 2: nothing matches -> 0. Corpus BLEU: p4 has no
     // match -> 0. Mean sentence BLEU 0.154674.
    const auto s = t->score(refs, {{4, 5, 7}, {13, 14, 15, 16}});
    EXPECT_EQ(s.at("exact_match"), 0.0);
    EXPECT_EQ(s.at("bleu"), 0.0);
    EXPECT_NEAR(s.at("sentence_bleu"), std::exp(-1.0) * std::pow(0.5, 0.25) / 2, 1e-12);
    EXPECT_EQ(s.at("n_bleu_gt_0"), 1.0);
    EXPECT_EQ(s.at("n_bleu_gt_0_8"), 0.0);
  }
  {  // <unk> never matches, not even a reference's <unk>: reference {4, 3, 5, 6}, prediction equal.
     // Sentence BLEU (k=2): p1 = 3/4, p2: {4 3}, {3 5} contain unk -> only {5 6} = 1/3:
     // (3/4)^(1/2) * (1/3)^(1/4) = 0.866025 * 0.759836 = 0.658037.
    const std::vector<ablate::Example> with_unk = {{{4}, {4, 3, 5, 6}}};
    const auto s = t->score(with_unk, {{4, 3, 5, 6}});
    EXPECT_EQ(s.at("exact_match"), 1.0) << "the default exact match compares ids";
    EXPECT_NEAR(s.at("sentence_bleu"), std::sqrt(0.75) * std::pow(1.0 / 3, 0.25), 1e-12);
    EXPECT_EQ(s.at("bleu"), 0.0) << "the only 4-gram contains <unk>";
  }
  EXPECT_THROW(t->score(refs, {{4}}), ablate::Error) << "one prediction per reference";
}

// sacrebleu and chrf read text: each example carries its target as written in the file, and the
// scores are those of the detokenized predictions against it (not against the reference's tokens
// detokenized, which lose case and hold <unk>). A lower-cased model pays for the lost case.
TEST_F(TranslationTaskTest, TextScoresReadTheTargetAsWritten) {
  const auto lines = lines_of("translation_eng_spa.tsv");
  std::map<bool, double> perfect_sacrebleu;
  for (const bool lowercase : {false, true}) {
    const auto t = spanish({{"lowercase", lowercase ? "true" : "false"}, {"valid_fraction", "0"}, {"test_fraction", "0"}});
    std::vector<ablate::Example> refs;
    std::vector<std::vector<std::int32_t>> perfect;
    SacreBleu as_written, as_tokens;
    Chrf chrf_as_written;
    for (std::int64_t i = 0; i < t->size(Split::Eval); ++i) {
      const ablate::Example e = t->example(Split::Eval, i);
      const std::string& line = lines[static_cast<std::size_t>(t->line_of(Split::Eval, i))];
      const std::size_t tab = line.find('\t');
      EXPECT_EQ(e.reference, line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1)) << "eval example " << i;
      refs.push_back(e);
      perfect.push_back(e.tgt);
      as_written.add(t->text(e.tgt, true), e.reference);
      as_tokens.add(t->text(e.tgt, true), t->text(e.tgt, true));
      chrf_as_written.add(t->text(e.tgt, true), e.reference);
    }
    ASSERT_EQ(refs.size(), 14u);
    const auto s = t->score(refs, perfect);
    EXPECT_NEAR(s.at("bleu"), 100.0, 1e-9) << "valid_fraction 0: every eval token is known";
    EXPECT_NEAR(s.at("sacrebleu"), as_written.score(), 1e-12);
    EXPECT_NEAR(s.at("chrf"), chrf_as_written.score(), 1e-12);
    EXPECT_NEAR(as_tokens.score(), 100.0, 1e-9);
    EXPECT_LT(s.at("sacrebleu"), 99.0) << "word tokens joined by spaces are not the text as written (¿Dónde, ¡Hola)";
    perfect_sacrebleu[lowercase] = s.at("sacrebleu");
  }
  EXPECT_LT(perfect_sacrebleu[true], perfect_sacrebleu[false] - 10.0) << "lower-cased hypotheses against cased references";
  const std::vector<ablate::Example> no_text = {{{4}, {4, 5, 6, 7}}};
  EXPECT_NEAR(spanish()->score(no_text, {{4, 5, 6, 7}}).at("sacrebleu"), 100.0, 1e-9)
      << "an example without its text is scored on its tokens detokenized";
}

// ---------------------------------------------------------------------------------------------
// The task's own vocabularies kept by the host (TaskContext::keep_tokenizer)

// The task over the fixture with a host that keeps each table (their save() bytes in `saved`)
// and loads `held[role]` where it has one.
std::shared_ptr<TranslationTask> kept_by_host(std::map<std::string, std::string> options,
                                              std::map<std::string, std::string>& saved,
                                              const std::map<std::string, std::string>& held = {}) {
  options["file"] = data("translation_eng_spa.tsv").string();
  ablate::TaskContext context;
  context.keep_tokenizer = [&saved, held](const std::string& role, const std::shared_ptr<ablate::Tokenizer>& own) {
    const auto it = held.find(role);
    if (it != held.end()) own->load(it->second);
    saved[role] = own->save();
    return it != held.end();
  };
  return ablate_text::built_as<TranslationTask>(kit::make_task("translation", options, context));
}

TEST(TranslationOwnVocabularies, EachSideIsKeptAndAHeldTableIsWhatTheTaskReadsWith) {
  std::map<std::string, std::string> saved;
  const auto counted = kept_by_host({}, saved);
  ASSERT_EQ(saved.size(), 2u);
  const std::string source = saved.at("source"), target = saved.at("target");
  EXPECT_NE(source.find("5:hello"), std::string::npos) << "the source words, lower-cased";
  // A run's tables: the source one with two words only (the file now holds more than it knew).
  const std::string two_words = "ablate-vocabulary 1\n5:hello1:,";
  saved.clear();
  const auto held = kept_by_host({}, saved, {{"source", two_words}, {"target", target}});
  EXPECT_EQ(held->source_vocabulary().size(), 6) << "4 reserved ids and the two words, not what the file counts";
  EXPECT_EQ(held->encode("hello , world", false, nullptr), (std::vector<std::int32_t>{4, 5, ablate_text::Vocabulary::kUnk}));
  EXPECT_EQ(held->target_vocabulary().tokens(), counted->target_vocabulary().tokens());
  for (std::int64_t i = 0; i < held->size(Split::Train); ++i)
    for (std::int32_t id : held->example(Split::Train, i).src) EXPECT_LT(id, 6) << "every example read with the held table";
  EXPECT_EQ(saved.at("source"), two_words) << "what the host holds is what the task reads with";

  saved.clear();
  const auto joint = kept_by_host({{"joint_vocabulary", "true"}, {"target_tokens", "char"}}, saved);
  EXPECT_EQ(saved.size(), 1u) << "one table of both sides";
  saved.clear();
  const auto joint_held = kept_by_host({{"joint_vocabulary", "true"}, {"target_tokens", "char"}}, saved, {{"joint", two_words}});
  EXPECT_EQ(joint_held->encode(",h", true, nullptr), (std::vector<std::int32_t>{5, ablate_text::Vocabulary::kUnk}))
      << "the target reads characters with the held joint table";
  EXPECT_EQ(joint_held->target_vocabulary().size(), 6);
  EXPECT_GT(joint->target_vocabulary().size(), 6);
}

// ---------------------------------------------------------------------------------------------
// With a tokenizer plugin (task.tokenizer)

// The task made by the plugin over the fixture, prepared with tokenizer/char (whitespace kept);
// `roles` receives the roles it asked for.
std::shared_ptr<TranslationTask> with_chars(std::map<std::string, std::string> options, std::vector<std::string>& roles) {
  options["file"] = data("translation_eng_spa.tsv").string();
  ablate::TaskContext context;
  context.tokenizer = [&roles](const std::string& role) {
    roles.push_back(role);
    return kit::make_component<ablate::Tokenizer>("char");
  };
  return ablate_text::built_as<TranslationTask>(kit::make_task("translation", options, context));
}

TEST(TranslationWithATokenizer, OneTokenizerPerSideOrOneJointAndTextAsWritten) {
  std::vector<std::string> roles;
  const auto sides = with_chars({{"max_len", "60"}}, roles);
  EXPECT_EQ(roles, (Words{"source", "target"}));
  const ablate::Example e = sides->example(Split::Train, 0);
  EXPECT_EQ(sides->text(e.tgt, true), e.reference) << "char units with spaces: the target decodes as written";
  roles.clear();
  const auto joint = with_chars({{"max_len", "60"}, {"joint_vocabulary", "true"}}, roles);
  EXPECT_EQ(roles, Words{"joint"});
  EXPECT_EQ(joint->encode("gato cat", false, nullptr), joint->encode("gato cat", true, nullptr)) << "one vocabulary";
  EXPECT_NE(sides->encode("¿", false, nullptr), sides->encode("¿", true, nullptr)) << "only Spanish has ¿";
  EXPECT_THROW(joint->source_vocabulary(), ablate::Error);
  EXPECT_TRUE(joint->info().shared_vocabulary) << "model.share_embeddings may share its tables";
  EXPECT_FALSE(sides->info().shared_vocabulary);
}

TEST(TranslationWithATokenizer, MaxLenCountsTheTokenizersTokensAndItsUnitOptionsAreRefused) {
  std::vector<std::string> roles;
  const auto all = with_chars({{"max_len", "60"}, {"valid_fraction", "0"}, {"test_fraction", "0"}}, roles);
  const auto some = with_chars({{"max_len", "14"}, {"valid_fraction", "0"}, {"test_fraction", "0"}}, roles);
  EXPECT_EQ(all->size(Split::Train), 14);
  EXPECT_LT(some->size(Split::Train), 14) << "sentences of more than 14 characters are filtered";
  EXPECT_GT(some->corpus_stats().dropped_long, 0);
  for (std::int64_t i = 0; i < some->size(Split::Train); ++i) EXPECT_LE(some->example(Split::Train, i).tgt.size(), 14u);
  const std::string e = error_of([&] { with_chars({{"source_tokens", "char"}, {"min_freq", "2"}}, roles); });
  EXPECT_NE(e.find("source_tokens, min_freq: not with task.tokenizer"), std::string::npos) << e;
}

// The task prepared with one joint tokenizer/sentencepiece (BPE) of subword sampling `alpha`.
std::shared_ptr<TranslationTask> with_sampling(std::map<std::string, std::string> options, const std::string& alpha) {
  options["file"] = data("translation_eng_spa.tsv").string();
  options["joint_vocabulary"] = "true";
  ablate::TaskContext context;
  context.tokenizer = [alpha](const std::string&) {
    return kit::make_component<ablate::Tokenizer>("sentencepiece", {{"vocab_size", "70"}, {"alpha", alpha}});
  };
  return ablate_text::built_as<TranslationTask>(kit::make_task("translation", options, context));
}

TEST(TranslationWithATokenizer, ASamplingTokenizerSegmentsEachTrainReadAnewAndNothingElse) {
  const auto task = with_sampling({{"max_len", "60"}, {"valid_fraction", "0.2"}, {"test_fraction", "0"}}, "0.5");
  const std::int64_t n = task->size(Split::Train);
  ASSERT_GT(n, 5);
  std::int64_t resampled = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const ablate::Example e = task->example(Split::Train, i), a = task->train_example(i, 11);
    EXPECT_EQ(task->train_example(i, 11), a) << "one draw, one segmentation";
    EXPECT_EQ(task->text(a.src, false), task->text(e.src, false)) << "the same source text";
    EXPECT_EQ(task->text(a.tgt, true), task->text(e.tgt, true)) << "the same target text";
    EXPECT_EQ(a.reference, e.reference);
    resampled += a.src != e.src || a.tgt != e.tgt || task->train_example(i, 12) != a;
  }
  EXPECT_GT(resampled, n / 2) << "most train pairs segmented otherwise";
  EXPECT_EQ(task->example(Split::Eval, 0), task->example(Split::Eval, 0)) << "evaluation reads one segmentation";
  const auto plain = with_sampling({{"max_len", "60"}}, "0");
  for (std::int64_t i = 0; i < plain->size(Split::Train); ++i)
    EXPECT_EQ(plain->train_example(i, 11), plain->example(Split::Train, i)) << "alpha 0: every read the same";
}

TEST(TranslationWithATokenizer, ASampleLongerThanMaxLenGivesWayToTheDeterministicIds) {
  // alpha 1: every merge dropped, one piece per character, longer than max_len for most pairs.
  const auto task =
      with_sampling({{"max_len", "14"}, {"long_examples", "truncate"}, {"valid_fraction", "0"}, {"test_fraction", "0"}}, "1");
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < task->size(Split::Train); ++i) {
    const ablate::Example e = task->example(Split::Train, i), a = task->train_example(i, 3);
    EXPECT_LE(a.src.size(), 14u);
    EXPECT_LE(a.tgt.size(), 14u);
    kept += a.src == e.src;
  }
  EXPECT_GT(kept, 0) << "pairs whose sampled source would not fit keep their own ids";
}

}  // namespace
}  // namespace task_translation
