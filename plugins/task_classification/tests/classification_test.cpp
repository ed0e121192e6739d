// Tests for plugin task/classification's own code, on the public SDK and its test kit: labelled TSV
// reading, accuracy and macro-F1, and the task as `ablate` loads it (the built plugin, made by name).
// Trained end to end: tests/plugins/task_classification_test.cpp.
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
#include "text/tokenizer.hpp"
#include "text/vocabulary.hpp"
#include "class_scores.hpp"
#include "classification_task.hpp"
#include "labelled_text.hpp"

ABLATE_DECLARE_PLUGIN(task_classification)

namespace task_classification {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;
using Ids = std::vector<std::int32_t>;
using ablate::Split;
using ablate_text::testing::error_of;
using ablate_text::testing::TempDir;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

// The fixture TSVs beside this file.
fs::path data(const std::string& name) { return fs::path(__FILE__).parent_path() / "data" / name; }
const std::string kSentiment = "classification_sentiment.tsv";  // 60 lines, 20 each of negative, neutral, positive

LabelledCorpus read(const std::string& text, ReadOptions o = {}) {
  std::istringstream in(text);
  return read_labelled_tsv(in, "mem.tsv", o);
}

// The original lines of a fixture (1-based: lines[0] is unused), split into tab-separated columns.
std::vector<Words> lines_of(const std::string& name) {
  std::ifstream in(data(name));
  std::vector<Words> lines(1);
  for (std::string l; std::getline(in, l);) {
    Words cols;
    std::stringstream ss(l);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    lines.push_back(cols);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Reading labelled text

TEST(ClassificationReading, ReadsTextAndLabelSkippingBlankLinesAndIgnoringCrlfBomAndExtraColumns) {
  const LabelledCorpus c = read("\xEF\xBB\xBFGreat film!\tpos\r\n\n   \nA bad, bad film.\t neg \textra column\n");
  EXPECT_EQ(c.lines_read, 4);
  ASSERT_EQ(c.examples.size(), 2u);
  EXPECT_EQ(c.examples[0], (LabelledText{{"great", "film", "!"}, "pos", 1}));
  EXPECT_EQ(c.examples[1], (LabelledText{{"a", "bad", ",", "bad", "film", "."}, "neg", 4}))
      << "the label without surrounding spaces; a third column is ignored";
}

TEST(ClassificationReading, TextAndLabelColumnsAndAHeaderLine) {
  ReadOptions o;
  o.text_column = 3;
  o.label_column = 1;
  o.header = true;
  const LabelledCorpus c = read("label\tid\tsentence\nB\t7\tHello there\nA\t8\tBye\n", o);
  ASSERT_EQ(c.examples.size(), 2u);
  EXPECT_EQ(c.examples[0], (LabelledText{{"hello", "there"}, "B", 2}));
  EXPECT_EQ(c.examples[1], (LabelledText{{"bye"}, "A", 3}));
  o.tokens.lowercase = false;
  o.tokens.level = ablate_text::Level::Char;
  EXPECT_EQ(read("label\tid\tsentence\nB\t7\tHi 好\n", o).examples[0].tokens, (Words{"H", "i", "好"}));
}

TEST(ClassificationReading, FilterTruncateAndMaxExamples) {
  const std::string text = "a b\tx\na b c d\ty\na\tz\nb c\tx\n";
  ReadOptions o;
  o.max_len = 3;
  const LabelledCorpus filtered = read(text, o);
  EXPECT_EQ(filtered.dropped_long, 1);
  ASSERT_EQ(filtered.examples.size(), 3u);
  EXPECT_EQ(filtered.examples[1].line, 3);
  o.long_examples = LongExamples::Truncate;
  const LabelledCorpus cut = read(text, o);
  EXPECT_EQ(cut.truncated, 1);
  ASSERT_EQ(cut.examples.size(), 4u);
  EXPECT_EQ(cut.examples[1], (LabelledText{{"a", "b", "c"}, "y", 2}));
  o.long_examples = LongExamples::Filter;
  o.max_examples = 2;
  const LabelledCorpus first = read(text, o);
  ASSERT_EQ(first.examples.size(), 2u);
  EXPECT_EQ(first.examples[1].line, 3) << "the first N examples after filtering";
}

TEST(ClassificationReading, BadLinesAreErrorsNamingTheFileAndLine) {
  const auto error = [](const std::string& text, ReadOptions o = {}) { return error_of([&] { read(text, o); }); };
  std::string e = error("good\tpos\nno tab here\n");
  EXPECT_NE(e.find("mem.tsv:2: no tab; expected 'text<TAB>label'"), std::string::npos) << e;
  e = error("good\tpos\n\t neg\n");
  EXPECT_NE(e.find("mem.tsv:2: empty text; expected"), std::string::npos) << e;
  e = error("good\tpos\nbad film\t  \n");
  EXPECT_NE(e.find("mem.tsv:2: empty label; expected"), std::string::npos) << e;
  e = error("good\tpos\n\nCaf\xE9 ok\tpos\n");
  EXPECT_NE(e.find("mem.tsv:3: invalid UTF-8 at byte 4 of the line; expected UTF-8 text"), std::string::npos) << e;
  ReadOptions third;
  third.text_column = 3;
  e = error("a\tb\tc\nx\ty\n", third);
  EXPECT_NE(e.find("mem.tsv:2: 2 columns; expected the text in column 3 and the label in column 2"), std::string::npos) << e;
  e = error_of([] { read_labelled_tsv_file("no/such/file.tsv", {}); });
  EXPECT_NE(e.find("cannot read 'no/such/file.tsv'"), std::string::npos) << e;
  EXPECT_NE(e.find("relative to the current directory"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// Scores

TEST(ClassificationScores, AccuracyAndMacroF1MatchHandComputedValues) {
  // refs  0 0 0 1 1 2, preds 0 0 1 1 2 2: accuracy 4/6.
  // F1 = 2TP / (2TP + FP + FN): class 0 TP 2 FP 0 FN 1 -> 4/5; class 1 TP 1 FP 1 FN 1 -> 2/4;
  // class 2 TP 1 FP 1 FN 0 -> 2/3. Macro: (4/5 + 1/2 + 2/3) / 3 = 59/90.
  const Ids refs = {0, 0, 0, 1, 1, 2}, preds = {0, 0, 1, 1, 2, 2};
  ClassScores s = class_scores(refs, preds, 3);
  EXPECT_DOUBLE_EQ(s.accuracy, 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.macro_f1, 59.0 / 90.0);
  EXPECT_DOUBLE_EQ(class_scores(refs, preds, 5).macro_f1, 59.0 / 90.0)
      << "a class that is neither a reference nor a prediction is not averaged";
  // Always the majority class: refs 0 0 1, preds 0 0 0: class 0 TP 2 FP 1 -> 4/5, class 1 FN 1 -> 0.
  s = class_scores({0, 0, 1}, {0, 0, 0}, 2);
  EXPECT_DOUBLE_EQ(s.accuracy, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.macro_f1, 0.4) << "macro-F1 punishes ignoring a class, accuracy does not";
  // A prediction outside the classes is wrong and no class's false positive: class 0 -> 1, class 1 -> 0.
  s = class_scores({0, 1}, {0, -1}, 2);
  EXPECT_DOUBLE_EQ(s.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(s.macro_f1, 0.5);
  s = class_scores({1, 0, 1}, {1, 0, 1}, 2);
  EXPECT_EQ(s.accuracy, 1.0);
  EXPECT_EQ(s.macro_f1, 1.0);
  EXPECT_THROW(class_scores({0, 1}, {0}, 2), ablate::Error);
  EXPECT_THROW(class_scores({}, {}, 2), ablate::Error);
  EXPECT_THROW(class_scores({2}, {0}, 2), ablate::Error) << "a reference outside the classes";
}

// ---------------------------------------------------------------------------------------------
// The task

class ClassificationTaskTest : public ::testing::Test {
 protected:
  // The task made by the built plugin (ctest puts its directory on ABLATE_PLUGIN_PATH), as its class.
  std::shared_ptr<ClassificationTask> make(std::map<std::string, std::string> options) {
    auto t = ablate_text::built_as<ClassificationTask>(kit::make_task("classification", options));
    EXPECT_NE(t, nullptr);
    return t;
  }
  std::shared_ptr<ClassificationTask> sentiment(std::map<std::string, std::string> extra = {}) {
    extra["file"] = data(kSentiment).string();
    return make(extra);
  }
};

TEST_F(ClassificationTaskTest, DeclaresItsOptionsAndScores) {
  const ablate::OptionList& declared = task_classification::plugin_info.options;
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < declared.size; ++i) names.push_back(declared.data[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"file", "text_column", "label_column", "header", "tokens", "lowercase",
                                             "split_punctuation", "min_freq", "max_len", "long_examples", "max_examples",
                                             "valid_fraction", "test_fraction", "split_seed"}));
  EXPECT_THROW(kit::make_component<ablate::Task>("classification"), ablate::Error) << "file is required";
  EXPECT_EQ(sentiment()->score_names(), (std::vector<std::string>{"exact_match", "accuracy", "macro_f1"}));
}

TEST_F(ClassificationTaskTest, LabelsAreSortedClassIdsAndEveryExampleCarriesItsLinesLabel) {
  const auto t = sentiment();
  EXPECT_EQ(t->labels(), (Words{"negative", "neutral", "positive"}));
  const ablate::TaskInfo info = t->info();
  EXPECT_EQ(info.type, ablate::TaskType::Classification);
  EXPECT_EQ(info.num_classes, 3);
  EXPECT_EQ(info.max_tgt_len, 1);
  EXPECT_EQ(info.max_src_len, 64);
  EXPECT_EQ(info.vocab_size, t->vocabulary().size());
  const auto lines = lines_of(kSentiment);
  const ablate_text::Tokenizer tok;
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < t->size(s); ++i) {
      const ablate::Example e = t->example(s, i);
      const Words& line = lines[static_cast<std::size_t>(t->line_of(s, i))];
      ASSERT_EQ(e.tgt.size(), 1u);
      EXPECT_EQ(t->labels()[static_cast<std::size_t>(e.tgt[0])], line[1]);
      EXPECT_EQ(t->text(e.tgt, true), line[1]) << "a target's text is its label";
      if (s == Split::Train) {
        EXPECT_EQ(t->text(e.src, false), tok.detokenize(tok.tokenize(line[0])));
      }
      for (std::int32_t id : e.src) {
        EXPECT_GE(id, ablate_text::Vocabulary::kUnk);
        EXPECT_LT(id, info.vocab_size);
      }
    }
  EXPECT_EQ(t->text({2, 0}, true), "positive negative");
  EXPECT_EQ(t->text({3}, true), "<unk>") << "not a class";
}

TEST_F(ClassificationTaskTest, SplitsAreStableDisjointAndTheVocabularyComesFromTrainOnly) {
  const auto a = sentiment({{"valid_fraction", "0.25"}, {"test_fraction", "0.1"}}),
             b = sentiment({{"valid_fraction", "0.25"}, {"test_fraction", "0.1"}});
  EXPECT_EQ(a->size(Split::Test), 6);   // ceil(0.1 * 60)
  EXPECT_EQ(a->size(Split::Eval), 15);  // ceil(0.25 * 60)
  EXPECT_EQ(a->size(Split::Train), 39);
  std::set<std::int64_t> lines;
  for (Split s : {Split::Train, Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < a->size(s); ++i) {
      EXPECT_EQ(a->example(s, i), b->example(s, i)) << "the same examples in a second construction";
      lines.insert(a->line_of(s, i));
    }
  EXPECT_EQ(lines.size(), 60u) << "every line in exactly one split";
  EXPECT_THROW(a->example(Split::Test, 6), ablate::Error);
  EXPECT_THROW(a->example(Split::Train, -1), ablate::Error);
  EXPECT_NE(sentiment({{"split_seed", "2"}})->line_of(Split::Eval, 0), sentiment()->line_of(Split::Eval, 0))
      << "split_seed reshuffles";

  const auto rows = lines_of(kSentiment);
  const ablate_text::Tokenizer tok;
  std::set<std::string> train_words;
  for (std::int64_t i = 0; i < a->size(Split::Train); ++i)
    for (const auto& w : tok.tokenize(rows[static_cast<std::size_t>(a->line_of(Split::Train, i))][0])) train_words.insert(w);
  EXPECT_EQ(a->vocabulary().size(), 4 + static_cast<std::int64_t>(train_words.size()));
  int unknown = 0;
  for (Split s : {Split::Eval, Split::Test})
    for (std::int64_t i = 0; i < a->size(s); ++i) {
      const Words words = tok.tokenize(rows[static_cast<std::size_t>(a->line_of(s, i))][0]);
      const Ids ids = a->example(s, i).src;
      ASSERT_EQ(words.size(), ids.size());
      for (std::size_t k = 0; k < words.size(); ++k) {
        EXPECT_EQ(ids[k] == ablate_text::Vocabulary::kUnk, train_words.count(words[k]) == 0) << words[k];
        unknown += train_words.count(words[k]) == 0 ? 1 : 0;
      }
    }
  EXPECT_GT(unknown, 0) << "the fixture has held-out-only words";
  EXPECT_LT(sentiment({{"min_freq", "3"}})->vocabulary().size(), sentiment()->vocabulary().size());
}

TEST_F(ClassificationTaskTest, ScoreGivesAccuracyAsExactMatchAndMacroF1) {
  const auto t = sentiment();
  // negative 0, neutral 1, positive 2; the hand-computed case of AccuracyAndMacroF1MatchHandComputedValues.
  std::vector<ablate::Example> refs;
  for (std::int32_t c : {0, 0, 0, 1, 1, 2}) refs.push_back({{4, 5}, {c}});
  const auto s = t->score(refs, {{0}, {0}, {1}, {1}, {2}, {2}});
  std::vector<std::string> keys;
  for (const auto& [k, v] : s) keys.push_back(k);
  EXPECT_EQ(keys, (Words{"accuracy", "exact_match", "macro_f1"})) << "score() returns exactly score_names()";
  EXPECT_DOUBLE_EQ(s.at("accuracy"), 4.0 / 6.0);
  EXPECT_EQ(s.at("exact_match"), s.at("accuracy"));
  EXPECT_DOUBLE_EQ(s.at("macro_f1"), 59.0 / 90.0);
  // A prediction that is not one class (none, two) is wrong.
  const auto wrong = t->score({refs[0], refs[3]}, {{}, {1, 1}});
  EXPECT_EQ(wrong.at("accuracy"), 0.0);
  EXPECT_EQ(wrong.at("macro_f1"), 0.0);
  EXPECT_THROW(t->score(refs, {{0}}), ablate::Error) << "one prediction per reference";
  EXPECT_THROW(t->score({{{4}, {0, 1}}}, {{0}}), ablate::Error) << "a reference of two tokens is no class";
}

// `ablate eval --data`: another file of the same columns, encoded with the run's vocabulary and classes.
TEST_F(ClassificationTaskTest, ReadExamplesEncodesAnotherFileWithTheTasksVocabularyAndClasses) {
  const auto t = sentiment();
  const auto lines = lines_of(kSentiment);
  TempDir dir;
  const fs::path file = dir.path() / "again.tsv";
  {
    std::ofstream out(file);
    for (std::int64_t i = 0; i < t->size(Split::Eval); ++i) {
      const Words& line = lines[static_cast<std::size_t>(t->line_of(Split::Eval, i))];
      out << line[0] << "\t" << line[1] << "\n";
    }
    out << "zzzqqq " << lines[1][0] << "\t" << lines[1][1] << "\n";  // a word no split has
    std::string long_text;                                           // 70 words: past max_len 64
    for (int w = 0; w < 70; ++w) long_text += "word ";
    out << long_text << "\t" << lines[1][1] << "\n";
  }
  ablate::ReadReport report;
  const std::vector<ablate::Example> got = t->read_examples(file.string(), report);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(t->size(Split::Eval)) + 1);
  // The file holds one more, which the length rule left out: counted, and why.
  EXPECT_EQ(report.read, t->size(Split::Eval) + 2);
  EXPECT_EQ(report.dropped, 1);
  EXPECT_EQ(report.truncated, 0);
  EXPECT_EQ(report.dropped_why,
            "1 with the text longer than max_len 64 tokens (long_examples: filter; truncate would keep them, cut to 64)");
  for (std::int64_t i = 0; i < t->size(Split::Eval); ++i) {
    const ablate::Example want = t->example(Split::Eval, i);
    EXPECT_EQ(got[static_cast<std::size_t>(i)].src, want.src) << i;
    EXPECT_EQ(got[static_cast<std::size_t>(i)].tgt, want.tgt) << i;
  }
  EXPECT_EQ(got.back().src.front(), ablate_text::Vocabulary::kUnk);
  EXPECT_GE(report.unknown, 1);
  ablate::ReadReport cut;  // truncate keeps it, cut to max_len
  const auto truncating = sentiment({{"long_examples", "truncate"}});
  EXPECT_EQ(truncating->read_examples(file.string(), cut).size(), static_cast<std::size_t>(t->size(Split::Eval)) + 2);
  EXPECT_EQ(cut.dropped, 0);
  EXPECT_EQ(cut.truncated, 1);

  std::ofstream(dir.path() / "new_label.tsv") << "a fine day\tpositive\nan odd day\tsurprised\n";
  const std::string e = error_of([&] { t->read_examples((dir.path() / "new_label.tsv").string(), report); });
  EXPECT_NE(e.find("new_label.tsv:2: label 'surprised' is not one of the run's 3 classes [negative, neutral, positive]"),
            std::string::npos)
      << e;
  std::ofstream(dir.path() / "no_tab.tsv") << "no label here\n";
  EXPECT_NE(error_of([&] { t->read_examples((dir.path() / "no_tab.tsv").string(), report); }).find("no_tab.tsv:1"),
            std::string::npos);
}

TEST_F(ClassificationTaskTest, BadOptionsAndFilesAreErrorsNamingThePlugin) {
  TempDir dir;
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() / name, std::ios::binary) << text;
    return (dir.path() / name).string();
  };
  const auto error = [&](std::map<std::string, std::string> o) { return error_of([&] { make(o); }); };
  const std::string file = data(kSentiment).string();
  EXPECT_NE(error({{"file", file}, {"max_len", "0"}}).find("task/classification: max_len must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"min_freq", "0"}}).find("min_freq must be >= 1"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"label_column", "1"}}).find("expected two different columns"), std::string::npos);
  EXPECT_NE(error({{"file", file}, {"valid_fraction", "0.6"}, {"test_fraction", "0.5"}}).find("leave no training data"),
            std::string::npos);
  EXPECT_NE(error({{"file", file}, {"max_len", "2"}}).find("no examples left"), std::string::npos);
  const std::string one = write("one_label.tsv", "good\tpos\nfine\tpos\nnice\tpos\nok\tpos\n");
  std::string e = error({{"file", one}});
  EXPECT_NE(e.find("task/classification: " + one + ": 1 distinct label ('pos') in 4 examples; expected at least 2 labels"),
            std::string::npos)
      << e;
  const std::string tabless = write("tabless.tsv", "good\tpos\nbad\tneg\njust text\n");
  e = error({{"file", tabless}});
  EXPECT_NE(e.find("task/classification: " + tabless + ":3: no tab; expected 'text<TAB>label'"), std::string::npos) << e;
  EXPECT_NE(error({{"file", "/no/such.tsv"}}).find("task/classification: cannot read '/no/such.tsv'"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// With a tokenizer plugin (task.tokenizer)

// A host that keeps the task's tables (TaskContext::keep_tokenizer): their bytes in `saved`, and
// `held[role]` loaded where it has one.
std::shared_ptr<ClassificationTask> kept_by_host(ablate::TaskContext context, std::map<std::string, std::string>& saved,
                                                 const std::map<std::string, std::string>& held = {}) {
  context.keep_tokenizer = [&saved, held](const std::string& role, const std::shared_ptr<ablate::Tokenizer>& own) {
    const auto it = held.find(role);
    if (it != held.end()) own->load(it->second);
    saved[role] = own->save();
    return it != held.end();
  };
  return ablate_text::built_as<ClassificationTask>(
      kit::make_task("classification", {{"file", data(kSentiment).string()}, {"max_len", "200"}}, context));
}

TEST(ClassificationOwnTables, TheTextVocabularyAndTheClassNamesAreKeptAndAHeldOneIsRead) {
  std::map<std::string, std::string> saved;
  const auto counted = kept_by_host({}, saved);
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved.at("labels"), "ablate-vocabulary 1\n8:negative7:neutral8:positive") << "in class id order";
  // A run trained when the file had other labels: its class ids keep their names.
  const std::string run_labels = "ablate-vocabulary 1\n8:positive8:negative7:neutral5:mixed";
  const auto held = kept_by_host({}, saved, {{"labels", run_labels}, {"text", saved.at("text")}});
  EXPECT_EQ(held->labels(), (std::vector<std::string>{"positive", "negative", "neutral", "mixed"}));
  EXPECT_EQ(held->info().num_classes, 4) << "the run's head";
  EXPECT_EQ(held->text({0}, true), "positive");
  EXPECT_EQ(counted->text({0}, true), "negative");
  // With task.tokenizer the text is the tokenizer's, and only the class names are the task's own.
  ablate::TaskContext with_plugin;
  with_plugin.tokenizer = [](const std::string&) { return kit::make_component<ablate::Tokenizer>("char"); };
  saved.clear();
  kept_by_host(with_plugin, saved);
  EXPECT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved.count("labels"), 1u);
}

TEST(ClassificationWithATokenizer, TheTokenizerLearnsFromTheTrainTextsAndMaxLenCountsItsTokens) {
  std::vector<std::string> roles;
  ablate::TaskContext context;
  context.tokenizer = [&roles](const std::string& role) {
    roles.push_back(role);
    return kit::make_component<ablate::Tokenizer>("char");
  };
  const auto make = [&](std::map<std::string, std::string> options) {
    options["file"] = data(kSentiment).string();
    return ablate_text::built_as<ClassificationTask>(kit::make_task("classification", options, context));
  };
  const auto t = make({{"max_len", "200"}});
  EXPECT_EQ(roles, std::vector<std::string>{"text"});
  const ablate::Example e = t->example(ablate::Split::Train, 0);
  const std::string text = t->text(e.src, false);
  EXPECT_EQ(e.src.size(), text.size()) << "char units, spaces kept: one id per (ASCII) character of the text as written";
  EXPECT_EQ(t->encode(text, false, nullptr), e.src);
  EXPECT_THROW(t->vocabulary(), ablate::Error);
  const auto short_texts = make({{"max_len", "36"}});
  EXPECT_LT(short_texts->size(ablate::Split::Train), t->size(ablate::Split::Train));
  EXPECT_GT(short_texts->corpus_stats().dropped_long, 0);
  const std::string refused = error_of([&] { make({{"tokens", "char"}}); });
  EXPECT_NE(refused.find("tokens: not with task.tokenizer"), std::string::npos) << refused;
}

TEST(ClassificationWithATokenizer, ASamplingTokenizerSegmentsEachTrainReadAnew) {
  ablate::TaskContext context;
  context.tokenizer = [](const std::string&) {
    return kit::make_component<ablate::Tokenizer>("sentencepiece", {{"vocab_size", "120"}, {"alpha", "0.5"}});
  };
  const auto t = ablate_text::built_as<ClassificationTask>(
      kit::make_task("classification", {{"file", data(kSentiment).string()}, {"max_len", "200"}}, context));
  std::int64_t resampled = 0;
  const std::int64_t n = t->size(ablate::Split::Train);
  for (std::int64_t i = 0; i < n; ++i) {
    const ablate::Example e = t->example(ablate::Split::Train, i), a = t->train_example(i, 5);
    EXPECT_EQ(t->train_example(i, 5), a) << "one draw, one segmentation";
    EXPECT_EQ(t->text(a.src, false), t->text(e.src, false));
    EXPECT_EQ(a.tgt, e.tgt) << "the class stays";
    resampled += a.src != e.src;
  }
  EXPECT_GT(resampled, n / 2);
}

}  // namespace
}  // namespace task_classification
