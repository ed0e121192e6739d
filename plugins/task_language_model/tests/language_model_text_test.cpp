// Tests for task/language_model's text mode, on the public SDK and its test kit: the token stream
// (levels, line breaks, errors with FILE:LINE) and the task as `ablate` loads it (windows, splits,
// vocabulary, the other mode's options). Trained end to end: tests/plugins/task_language_model_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "text/deferred_task.hpp"
#include "text/text_test_util.hpp"
#include "text_corpus.hpp"
#include "text_task.hpp"

ABLATE_DECLARE_PLUGIN(task_language_model)

namespace task_language_model {
namespace {

namespace fs = std::filesystem;
using ablate::Split;
using Words = std::vector<std::string>;
using ablate_text::Vocabulary;
using ablate_text::testing::error_of;
using ablate_text::testing::TempDir;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

fs::path data(const std::string& name) { return fs::path(__FILE__).parent_path() / "data" / name; }
const fs::path kFable = data("language_model_fable.txt");

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

StreamOptions level(ablate_text::Level l, std::int64_t context, bool lowercase = false) {
  StreamOptions o;
  o.tokenizer.level = l;
  o.tokenizer.lowercase = lowercase;
  o.context = context;
  return o;
}
StreamOptions chars(std::int64_t context, bool lowercase = false) { return level(ablate_text::Level::Char, context, lowercase); }
StreamOptions words(std::int64_t context, bool lowercase = true) { return level(ablate_text::Level::Word, context, lowercase); }

TokenStream read(const std::string& text, const StreamOptions& o) {
  std::istringstream in(text);
  return read_token_stream(in, "t.txt", o);
}
// The stream's tokens as text.
Words tokens_of(const TokenStream& s) {
  Words out;
  for (std::int32_t t : s.tokens) out.push_back(s.types[static_cast<std::size_t>(t)]);
  return out;
}
std::string concatenated(const TokenStream& s) {
  std::string out;
  for (const std::string& t : tokens_of(s)) out += t;
  return out;
}

// ---------------------------------------------------------------------------------------------
// The token stream

TEST(LanguageModelStream, CharLevelKeepsSpacesAndLineBreaksAndCutsWholeWindows) {
  // A BOM and CRLF line ends are not text; the last line has no line break.
  const TokenStream s = read(
      "\xEF\xBB\xBF"
      "Ab c\r\nd\n\nxyz",
      chars(4));
  EXPECT_EQ(s.total_tokens, 11);  // A b ' ' c \n d \n \n x y z
  EXPECT_EQ(s.windows(4), 2);
  EXPECT_EQ(s.dropped_tokens, 3) << "the tail shorter than a window";
  EXPECT_EQ(concatenated(s), "Ab c\nd\n\n") << "the windows concatenate back to the text";
  EXPECT_EQ(s.lines_read, 4);
  EXPECT_EQ(s.line_of_token(0), 1);
  EXPECT_EQ(s.line_of_token(4), 1) << "a line's break belongs to it";
  EXPECT_EQ(s.line_of_token(5), 2);
  EXPECT_EQ(s.line_of_token(7), 3) << "the blank line's break";
  EXPECT_EQ(concatenated(read("ÀB\nÇd\n", chars(2, /*lowercase=*/true))), "àb\nçd\n") << "lower-casing is UTF-8 aware";
  EXPECT_EQ(tokens_of(read("añ€😀\n", chars(5))), (Words{"a", "ñ", "€", "😀", "\n"})) << "one token per code point";
}

TEST(LanguageModelStream, WordLevelEndsEachNonBlankLineWithALineBreakToken) {
  const TokenStream s = read("Hello, world!\n\n  \nGood   night.\nlast", words(1));
  EXPECT_EQ(tokens_of(s), (Words{"hello", ",", "world", "!", "\n", "good", "night", ".", "\n", "last", "\n"}));
  EXPECT_EQ(s.line_of_token(5), 4) << "blank lines add no token";
  StreamOptions keep = words(1, /*lowercase=*/false);
  keep.tokenizer.split_punctuation = false;
  EXPECT_EQ(tokens_of(read("Don't stop, Go.\n", keep)), (Words{"Don't", "stop,", "Go.", "\n"}));
}

TEST(LanguageModelStream, MaxExamplesKeepsTheFirstWindowsOfTheFile) {
  StreamOptions o = chars(3);
  o.max_examples = 2;
  const TokenStream s = read("abcdefgh\nijklmnop\nqrstuvwx\n", o);
  EXPECT_EQ(concatenated(s), "abcdef");
  EXPECT_EQ(s.lines_read, 1) << "reading stops once the windows are complete";
}

TEST(LanguageModelStream, ErrorsNameTheFileAndLine) {
  const std::string latin1 = error_of([] { read("ok\nfine\nCaf\xE9 au lait\n", chars(2)); });
  EXPECT_NE(latin1.find("t.txt:3: invalid UTF-8 at byte 4 of the line; expected UTF-8 text"), std::string::npos) << latin1;
  EXPECT_NE(latin1.find("iconv"), std::string::npos) << "the hint says how to convert: " << latin1;
  const std::string empty = error_of([] { read("", chars(2)); });
  EXPECT_NE(empty.find("t.txt: the file is empty; expected UTF-8 text"), std::string::npos) << empty;
  EXPECT_NE(error_of([] { read("\xEF\xBB\xBF", chars(2)); }).find("the file is empty"), std::string::npos) << "a BOM alone";
  const std::string blank = error_of([] { read(" \n\t\r\n", chars(2)); });
  EXPECT_NE(blank.find("t.txt: the file has only whitespace"), std::string::npos) << blank;
  const std::string short_file = error_of([] { read("abc", chars(4)); });
  EXPECT_NE(short_file.find("t.txt: 3 char tokens are fewer than one window of context 4"), std::string::npos) << short_file;
  const std::string absent = error_of([] { read_token_stream_file("no/such/file.txt", chars(4)); });
  EXPECT_NE(absent.find("cannot read 'no/such/file.txt'"), std::string::npos) << absent;
  EXPECT_NE(absent.find("relative to the current directory"), std::string::npos) << absent;
}

// ---------------------------------------------------------------------------------------------
// The task

class LanguageModelTextTask : public ::testing::Test {
 protected:
  // The task made by the built plugin (ctest puts its directory on ABLATE_PLUGIN_PATH), as its class.
  std::shared_ptr<TextLanguageModel> make(std::map<std::string, std::string> options) {
    auto t = ablate_text::built_as<TextLanguageModel>(kit::make_task("language_model", options));
    EXPECT_NE(t, nullptr) << "a file selects the text mode";
    return t;
  }
  std::shared_ptr<TextLanguageModel> fable(std::map<std::string, std::string> extra = {}) {
    extra.emplace("file", kFable.string());
    extra.emplace("context", "32");
    return make(extra);
  }
  std::string error(std::map<std::string, std::string> options) {
    return error_of([&] { kit::make_task("language_model", options); });
  }
  // A file in the test's temporary directory.
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir.path() / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  TempDir dir;
};

TEST_F(LanguageModelTextTask, DeclaresTheOptionsOfEveryModeAndDefaultsToTheMarkovChain) {
  const ablate::OptionList& declared = task_language_model::plugin_info.options;
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < declared.size; ++i) names.push_back(declared.data[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"vocab_size",
                                             "min_len",
                                             "max_len",
                                             "train_examples",
                                             "eval_examples",
                                             "seed",
                                             "file",
                                             "tokens",
                                             "lowercase",
                                             "split_punctuation",
                                             "min_freq",
                                             "context",
                                             "max_examples",
                                             "valid_fraction",
                                             "test_fraction",
                                             "split",
                                             "split_seed",
                                             "shards",
                                             "eval_shards",
                                             "test_shards",
                                             "shard_vocab_size"}));
  const auto synthetic = kit::make_component<ablate::Task>("language_model");
  EXPECT_EQ(ablate_text::built_as<TextLanguageModel>(synthetic), nullptr);
  EXPECT_EQ(synthetic->info().vocab_size, 32);
  EXPECT_EQ(synthetic->text(synthetic->example(Split::Eval, 0).tgt, true), "") << "the synthetic mode has no text";
}

TEST_F(LanguageModelTextTask, WindowsAreTheFileCutInOrder) {
  const std::string text = file_text(kFable);  // ASCII, LF line ends: one char token per byte
  const auto t = fable();
  const std::int64_t n = static_cast<std::int64_t>(text.size()) / 32;
  EXPECT_EQ(t->stats().windows, n);
  EXPECT_EQ(t->stats().dropped_tokens, static_cast<std::int64_t>(text.size()) % 32);
  EXPECT_EQ(t->size(Split::Train) + t->size(Split::Eval) + t->size(Split::Test), n);
  const ablate::TaskInfo info = t->info();
  EXPECT_EQ(info.type, ablate::TaskType::LanguageModel);
  EXPECT_EQ(info.vocab_size, t->vocabulary().size());
  EXPECT_EQ(info.max_src_len, 0);
  EXPECT_EQ(info.max_tgt_len, 32);
  for (Split split : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < t->size(split); ++i) {
      const ablate::Example e = t->example(split, i);
      EXPECT_TRUE(e.src.empty());
      ASSERT_EQ(e.tgt.size(), 32u);
      EXPECT_TRUE(e.cut) << "a window of the file: the text goes on, no eos is predicted after it";
      const std::int64_t w = t->window_of(split, i);
      if (split == Split::Train) {  // eval/test windows may hold <unk>
        EXPECT_EQ(t->text(e.tgt, true), text.substr(static_cast<std::size_t>(w * 32), 32)) << "window " << w;
      }
      const std::int64_t line = 1 + std::count(text.begin(), text.begin() + w * 32, '\n');
      EXPECT_EQ(t->line_of(split, i), line) << "window " << w;
    }
  EXPECT_THROW(t->example(Split::Eval, t->size(Split::Eval)), ablate::Error);
}

// `ablate eval --data`: a new file cut into the run's windows; the partial window at its end is
// left out and said to be (ReadReport), its tokens counted.
TEST_F(LanguageModelTextTask, ReadExamplesCutsWholeWindowsAndReportsThePartialOne) {
  const auto t = fable();
  const std::string text = file_text(kFable).substr(0, 32 * 3 + 5);  // 3 windows and 5 tokens
  ablate::ReadReport report;
  const std::vector<ablate::Example> got = t->read_examples(write("new.txt", text), report);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(t->text(got[2].tgt, true), text.substr(64, 32));
  for (const ablate::Example& e : got) EXPECT_TRUE(e.cut);
  EXPECT_EQ(report.read, 4);
  EXPECT_EQ(report.dropped, 1);
  EXPECT_EQ(report.dropped_why, "the last 5 tokens, fewer than a window of context 32 (a language model scores whole windows)");
  ablate::ReadReport whole;
  EXPECT_EQ(t->read_examples(write("whole.txt", text.substr(0, 64)), whole).size(), 2u);
  EXPECT_EQ(whole.read, 2);
  EXPECT_EQ(whole.dropped, 0);
  EXPECT_EQ(whole.dropped_why, "");
}

// The default split: train is the text's first 107 windows, eval the next 7, test the last 7, each
// in file order, so a held-out window never sits between training windows.
TEST_F(LanguageModelTextTask, ContiguousSplitHoldsOutTheEndOfTheTextInOrder) {
  const auto t = fable();
  // 121 windows: test ceil(0.05 * 121) = 7, eval 7, train 107.
  ASSERT_EQ(t->size(Split::Train), 107);
  ASSERT_EQ(t->size(Split::Eval), 7);
  ASSERT_EQ(t->size(Split::Test), 7);
  for (std::int64_t i = 0; i < 107; ++i) EXPECT_EQ(t->window_of(Split::Train, i), i);
  for (std::int64_t i = 0; i < 7; ++i) {
    EXPECT_EQ(t->window_of(Split::Eval, i), 107 + i);
    EXPECT_EQ(t->window_of(Split::Test, i), 114 + i);
  }
  const auto none = fable({{"valid_fraction", "0"}, {"test_fraction", "0.1"}});
  EXPECT_EQ(none->size(Split::Test), 13);
  ASSERT_EQ(none->size(Split::Eval), 108) << "valid_fraction 0: eval is the train part itself";
  EXPECT_EQ(none->window_of(Split::Eval, 107), 107);
  const std::string seed = error({{"file", kFable.string()}, {"split_seed", "2"}});
  EXPECT_NE(seed.find("task/language_model: split_seed shuffles the windows of split: random; with split: contiguous"),
            std::string::npos)
      << seed;
}

TEST_F(LanguageModelTextTask, RandomSplitIsDeterministicDisjointAndCoversEveryWindow) {
  const auto a = fable({{"split", "random"}}), b = fable({{"split", "random"}});
  EXPECT_EQ(a->size(Split::Test), 7);
  EXPECT_EQ(a->size(Split::Eval), 7);
  EXPECT_EQ(a->size(Split::Train), 107);
  std::set<std::int64_t> seen;
  for (Split split : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < a->size(split); ++i) {
      EXPECT_EQ(a->window_of(split, i), b->window_of(split, i)) << "the same file and seed, the same split";
      EXPECT_EQ(a->example(split, i), b->example(split, i));
      EXPECT_TRUE(seen.insert(a->window_of(split, i)).second) << "window " << a->window_of(split, i) << " in two places";
    }
  EXPECT_EQ(seen.size(), 121u);
  EXPECT_EQ(*seen.rbegin(), 120);
  const auto other = fable({{"split", "random"}, {"split_seed", "2"}});
  std::vector<std::int64_t> eval_a, eval_other;
  for (std::int64_t i = 0; i < a->size(Split::Eval); ++i) {
    eval_a.push_back(a->window_of(Split::Eval, i));
    eval_other.push_back(other->window_of(Split::Eval, i));
  }
  EXPECT_NE(eval_a, eval_other) << "split_seed reshuffles the windows";
  EXPECT_NE(eval_a, (std::vector<std::int64_t>{107, 108, 109, 110, 111, 112, 113})) << "shuffled, not the text's end";
}

// eval.lengths on text: the held-out stretch (7 windows of 32 = 224 tokens) cut into windows of
// another length, in file order; split: random has windows of `context` only.
TEST_F(LanguageModelTextTask, OtherLengthsCutTheHeldOutStretch) {
  const auto t = fable();
  std::vector<std::int32_t> stretch;
  for (std::int64_t i = 0; i < t->size(Split::Eval); ++i) {
    const std::vector<std::int32_t> w = t->example(Split::Eval, i).tgt;
    stretch.insert(stretch.end(), w.begin(), w.end());
  }
  ASSERT_EQ(stretch.size(), 224u);
  for (std::int64_t length : {1, 16, 32, 64, 100, 224}) {
    const std::int64_t n = t->size_at_length(Split::Eval, length);
    EXPECT_EQ(n, 224 / length) << length;
    for (std::int64_t i = 0; i < n; ++i) {
      const ablate::Example e = t->example_at_length(Split::Eval, i, length);
      EXPECT_EQ(e.tgt, std::vector<std::int32_t>(stretch.begin() + i * length, stretch.begin() + (i + 1) * length))
          << "length " << length << ", window " << i;
      EXPECT_TRUE(e.cut) << "length " << length;
    }
    EXPECT_THROW(t->example_at_length(Split::Eval, n, length), ablate::Error);
  }
  EXPECT_EQ(t->size_at_length(Split::Eval, 225), 0);
  EXPECT_EQ(t->size_at_length(Split::Test, 64), 3);
  EXPECT_EQ(t->example_at_length(Split::Test, 0, 32), t->example(Split::Test, 0));

  const auto shuffled = fable({{"split", "random"}});
  EXPECT_EQ(shuffled->size_at_length(Split::Eval, 32), 7);
  EXPECT_EQ(shuffled->example_at_length(Split::Eval, 3, 32), shuffled->example(Split::Eval, 3));
  EXPECT_EQ(shuffled->size_at_length(Split::Eval, 64), 0);
  const std::string random_long = error_of([&] { shuffled->example_at_length(Split::Eval, 0, 64); });
  EXPECT_NE(random_long.find("split: random makes windows of `context` tokens only"), std::string::npos) << random_long;
}

TEST_F(LanguageModelTextTask, VocabularyComesFromTheTrainWindowsOnly) {
  // 40 windows of "ab\n"-text with one 'Z' in window 17: 'Z' is in the vocabulary exactly when
  // window 17 is a train window; elsewhere it reads as <unk>.
  std::string text;
  for (int i = 0; i < 40; ++i) text += i == 17 ? "aZ\nb" : "ab\nb";
  const std::string file = write("z.txt", text);
  bool seen_train = false, seen_held_out = false;
  for (int seed = 1; seed <= 30 && !(seen_train && seen_held_out); ++seed) {
    const auto t = make({{"file", file},
                         {"context", "4"},
                         {"valid_fraction", "0.2"},
                         {"test_fraction", "0.1"},
                         {"split", "random"},
                         {"split_seed", std::to_string(seed)}});
    Split where = Split::Train;
    std::int64_t index = -1;
    for (Split split : {Split::Train, Split::Eval, Split::Test})
      for (std::int64_t i = 0; i < t->size(split); ++i)
        if (t->window_of(split, i) == 17) where = split, index = i;
    ASSERT_GE(index, 0);
    const bool in_train = where == Split::Train;
    (in_train ? seen_train : seen_held_out) = true;
    EXPECT_EQ(t->vocabulary().id("Z") != Vocabulary::kUnk, in_train) << "seed " << seed;
    EXPECT_EQ(t->vocabulary().size(), in_train ? 8 : 7) << "<pad> <bos> <eos> <unk> a b \\n (Z)";
    EXPECT_EQ(t->text(t->example(where, index).tgt, true), in_train ? "aZ\nb" : "a<unk>\nb");
  }
  EXPECT_TRUE(seen_train && seen_held_out) << "some split seed puts window 17 in train, another outside it";
  // Contiguous: 28 train windows, 8 eval (28 .. 35), 4 test (36 .. 39); a 'Z' in window 37 is <unk>.
  text.clear();
  for (int i = 0; i < 40; ++i) text += i == 37 ? "aZ\nb" : "ab\nb";
  const auto tail =
      make({{"file", write("z_tail.txt", text)}, {"context", "4"}, {"valid_fraction", "0.2"}, {"test_fraction", "0.1"}});
  EXPECT_EQ(tail->vocabulary().id("Z"), Vocabulary::kUnk);
  EXPECT_EQ(tail->text(tail->example(Split::Test, 1).tgt, true), "a<unk>\nb");
}

TEST_F(LanguageModelTextTask, MinFreqSendsRareTokensToUnkAndWordTextKeepsLineBreaks) {
  const auto t = fable({{"tokens", "word"}, {"lowercase", "true"}, {"context", "16"}, {"min_freq", "3"}});
  const Vocabulary& v = t->vocabulary();
  EXPECT_NE(v.id("miller"), Vocabulary::kUnk);
  EXPECT_NE(v.id("\n"), Vocabulary::kUnk) << "a line break is a word-level token";
  EXPECT_EQ(v.id("jar"), Vocabulary::kUnk) << "'jar' occurs once in the file: below min_freq 3";
  EXPECT_EQ(v.id("Miller"), Vocabulary::kUnk) << "lower-cased";
  EXPECT_GT(t->stats().train_unk, 0);
  EXPECT_LT(t->stats().train_unk, t->stats().train_tokens / 5);
  const std::vector<std::int32_t> ids = {v.id("the"), v.id("miller"),         v.id("\n"),
                                         v.id("and"), ablate::TaskInfo::kEos, v.id("jar")};
  EXPECT_EQ(t->text(ids, true), "the miller\nand <unk>") << "words joined by spaces, none around a line break; eos dropped";
}

// encode() is text()'s inverse on the task's train windows (char and word level, line breaks
// included; a window with <unk> is left out, its text spelling "<unk>"), and counts what the
// vocabulary lacks as <unk>.
TEST_F(LanguageModelTextTask, EncodeReadsBackTheTextOfEveryTrainWindow) {
  for (const char* level : {"char", "word"}) {
    const auto t = fable({{"tokens", level}, {"lowercase", "true"}, {"context", "16"}, {"min_freq", "1"}});
    int checked = 0;
    for (std::int64_t i = 0; i < t->size(Split::Train); ++i) {
      const std::vector<std::int32_t> ids = t->example(Split::Train, i).tgt;
      if (std::count(ids.begin(), ids.end(), Vocabulary::kUnk)) continue;
      // A word-level window that starts at a line break reads as text starting with "\n": a blank
      // first line, which adds no token (as in the file).
      if (std::string(level) == "word" && ids.front() == t->vocabulary().id("\n")) continue;
      std::int64_t unknown = -1;
      EXPECT_EQ(t->encode(t->text(ids, true), true, &unknown), ids) << level << " window " << i << ": " << t->text(ids, true);
      EXPECT_EQ(unknown, 0) << level << " window " << i;
      ++checked;
    }
    EXPECT_GE(checked, 10) << level;
  }
  const auto t = fable({{"tokens", "word"}, {"lowercase", "true"}, {"context", "16"}});
  const Vocabulary& v = t->vocabulary();
  std::int64_t unknown = 0;
  EXPECT_EQ(t->encode("The Miller zzzqqq\r\nand", true, &unknown),
            (std::vector<std::int32_t>{v.id("the"), v.id("miller"), Vocabulary::kUnk, v.id("\n"), v.id("and")}))
      << "lower-cased, CRLF read as a line break, no line break after the last line";
  EXPECT_EQ(unknown, 1);
  EXPECT_TRUE(t->encode("", true, nullptr).empty());
}

TEST_F(LanguageModelTextTask, OptionsOfTheOtherModeAreRefused) {
  const std::string file = kFable.string();
  const std::string stray = error({{"file", file}, {"vocab_size", "40"}});
  EXPECT_NE(stray.find("task/language_model: vocab_size is an option of the synthetic mode, but `file` is set (text mode); "
                       "expected only file, tokens, lowercase"),
            std::string::npos)
      << stray;
  const std::string two = error({{"file", file}, {"max_len", "20"}, {"seed", "3"}});
  EXPECT_NE(two.find("max_len, seed are options of the synthetic mode"), std::string::npos) << two;
  const std::string text_only = error({{"context", "32"}, {"tokens", "word"}});
  EXPECT_NE(text_only.find("tokens, context are options of the text mode, but `file` and `shards` are empty (synthetic mode"),
            std::string::npos)
      << text_only;
  EXPECT_NE(text_only.find("expected only vocab_size, min_len, max_len"), std::string::npos) << text_only;
  const std::string punctuation = error({{"file", file}, {"split_punctuation", "false"}});
  EXPECT_NE(punctuation.find("split_punctuation applies to tokens: word"), std::string::npos) << punctuation;
  EXPECT_NO_THROW(make({{"file", file}, {"vocab_size", "32"}, {"context", "32"}})) << "an option at its default says nothing";
  EXPECT_NO_THROW(kit::make_component<ablate::Task>("language_model", {{"context", "64"}, {"vocab_size", "40"}}));
}

TEST_F(LanguageModelTextTask, BadFilesAndSettingsAreErrorsNamingThePluginAndTheFile) {
  const std::string bad = write("latin1.txt", "line one\nline two\ncaf\xE9\n");
  const std::string latin1 = error({{"file", bad}, {"context", "4"}});
  EXPECT_NE(latin1.find("task/language_model: " + bad + ":3: invalid UTF-8 at byte 4"), std::string::npos) << latin1;
  const std::string empty = write("empty.txt", "");
  EXPECT_NE(error({{"file", empty}}).find("task/language_model: " + empty + ": the file is empty"), std::string::npos);
  const std::string tiny = write("tiny.txt", "just a few words\n");
  const std::string short_file = error({{"file", tiny}});
  EXPECT_NE(short_file.find(tiny + ": 17 char tokens are fewer than one window of context 64"), std::string::npos) << short_file;
  const std::string two_windows = error({{"file", tiny}, {"context", "8"}});
  EXPECT_NE(two_windows.find("cut into windows of 8 tokens: 2 examples leave no training data"), std::string::npos)
      << two_windows;
  EXPECT_NE(error({{"file", "/no/such.txt"}}).find("task/language_model: cannot read '/no/such.txt'"), std::string::npos);
  EXPECT_NE(error({{"file", kFable.string()}, {"context", "0"}}).find("context must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", kFable.string()}, {"min_freq", "0"}}).find("min_freq must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", kFable.string()}, {"valid_fraction", "1"}}).find("must be in [0, 1)"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The task's own vocabulary kept by the host (TaskContext::keep_tokenizer)

TEST(LanguageModelOwnVocabulary, ItIsKeptAndAHeldOneIsWhatTheWindowsAreReadWith) {
  std::map<std::string, std::string> saved, held;
  ablate::TaskContext context;
  context.keep_tokenizer = [&](const std::string& role, const std::shared_ptr<ablate::Tokenizer>& own) {
    const auto it = held.find(role);
    if (it != held.end()) own->load(it->second);
    saved[role] = own->save();
    return it != held.end();
  };
  const std::map<std::string, std::string> options = {{"file", kFable.string()}, {"context", "32"}, {"tokens", "word"}};
  const auto counted = ablate_text::built_as<TextLanguageModel>(kit::make_task("language_model", options, context));
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved.count("text"), 1u);
  EXPECT_EQ(saved.at("text").find("ablate-vocabulary 1\n"), 0u);
  held["text"] = "ablate-vocabulary 1\n3:the6:miller1:\n";  // a run's: two words and the line break
  const auto read = ablate_text::built_as<TextLanguageModel>(kit::make_task("language_model", options, context));
  EXPECT_EQ(read->info().vocab_size, 4 + 3);
  EXPECT_EQ(read->encode("the miller and the river", false, nullptr),
            (std::vector<std::int32_t>{4, 5, ablate_text::Vocabulary::kUnk, 4, ablate_text::Vocabulary::kUnk}));
  EXPECT_EQ(read->size(Split::Train), counted->size(Split::Train)) << "the same windows, read with the held table";
  for (std::int32_t id : read->example(Split::Train, 0).tgt) EXPECT_LT(id, 7);
  EXPECT_GT(counted->info().vocab_size, 7);
}

// ---------------------------------------------------------------------------------------------
// With a tokenizer plugin (task.tokenizer)

namespace with_tokenizer {

// The task made by the plugin and prepared with tokenizer/NAME (the host's role: "text").
std::shared_ptr<ablate::Task> prepared(std::map<std::string, std::string> options, const std::string& name,
                                       std::vector<std::string>* roles = nullptr) {
  ablate::TaskContext context;
  context.tokenizer = [name, roles](const std::string& role) {
    if (roles) roles->push_back(role);
    return kit::make_component<ablate::Tokenizer>(name);
  };
  return kit::make_task("language_model", options, context);
}

TEST(LanguageModelWithATokenizer, SplitsByLinesAndTheTokenizerLearnsFromTheTrainLinesOnly) {
  TempDir dir;
  std::string text;  // 20 lines; the last two (the test stretch) hold a word no other line has
  for (int i = 0; i < 20; ++i) text += (i >= 18 ? "zebra " : "") + std::string("the cat sat on the mat and the dog ran\n");
  const fs::path file = dir.path() / "t.txt";
  std::ofstream(file) << text;
  std::vector<std::string> roles;
  const auto task =
      prepared({{"file", file.string()}, {"context", "8"}, {"valid_fraction", "0.1"}, {"test_fraction", "0.1"}}, "word", &roles);
  EXPECT_EQ(roles, std::vector<std::string>{"text"});
  const auto t = ablate_text::built_as<TextLanguageModel>(task);
  ASSERT_NE(t, nullptr);
  // 16 train lines of 11 tokens (10 words + the line break) = 176 tokens: 22 windows of 8.
  EXPECT_EQ(t->size(Split::Train), 22);
  EXPECT_EQ(t->size(Split::Eval), 2) << "2 lines, 22 tokens: 2 whole windows";
  EXPECT_EQ(t->size(Split::Test), 3) << "2 lines with zebra, 24 tokens";
  EXPECT_EQ(t->line_of(Split::Eval, 0), 17) << "the eval stretch starts at line 17";
  EXPECT_EQ(t->line_of(Split::Test, 0), 19);
  EXPECT_EQ(task->info().vocab_size, 4 + 9) << "the 8 words and the line break of the train lines";
  EXPECT_EQ(task->text(task->example(Split::Test, 0).tgt, true), "<unk> the cat sat on the mat and")
      << "zebra is held out: the tokenizer never saw it";
  EXPECT_TRUE(task->example(Split::Test, 0).cut);
  EXPECT_TRUE(task->example_at_length(Split::Test, 1, 4).cut);
  std::int64_t unknown = 0;
  EXPECT_EQ(task->encode("zebra cat", true, &unknown).size(), 2u);
  EXPECT_EQ(unknown, 1);
  EXPECT_EQ(task->size_at_length(Split::Test, 4), 6) << "eval.lengths cuts the held-out stretch";
}

TEST(LanguageModelWithATokenizer, RefusesTheOptionsTheTokenizerOwns) {
  TempDir dir;
  const fs::path file = dir.path() / "t.txt";
  std::ofstream(file) << "a b c\n";
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"tokens", "word"}, {"min_freq", "2"}, {"split", "random"}, {"max_examples", "3"}}) {
    const std::string e = error_of([&] { prepared({{"file", file.string()}, {option, value}}, "char"); });
    EXPECT_NE(e.find(option + ": not with task.tokenizer"), std::string::npos) << e;
  }
  const std::string synthetic = error_of([] { prepared({}, "char"); });
  EXPECT_NE(synthetic.find("takes no tokenizer"), std::string::npos) << synthetic;
}

}  // namespace with_tokenizer

}  // namespace
}  // namespace task_language_model
