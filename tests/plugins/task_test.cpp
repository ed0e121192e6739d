// Tests for the task kind: make_batch and the default score (framework/core/task.cpp), and the
// built-in synthetic tasks copy / reverse / sort / language_model / random_pairs, loaded from the
// built-in plugin dir: determinism, splits, ranges, the tgt relations, and option errors.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "ablate/task.hpp"
#include "backends/backend_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace ablate {
namespace {

using Tokens = std::vector<std::int32_t>;

class Tasks : public ::testing::Test {
 protected:
  PluginRegistry& registry = testing::builtin_registry();  // the built plugins, loaded once
};

const char* const kAll[] = {"copy", "reverse", "sort", "language_model", "random_pairs"};

TEST_F(Tasks, ExamplesAreDeterministicAcrossCallsAndInstances) {
  for (const char* name : kAll) {
    auto a = registry.create<Task>(name);
    auto b = registry.create<Task>(name);
    for (std::int64_t i : {0, 1, 17, 19999}) {
      EXPECT_EQ(a->example(Split::Train, i), a->example(Split::Train, i)) << name << " " << i;
      EXPECT_EQ(a->example(Split::Train, i), b->example(Split::Train, i)) << name << " " << i;
      EXPECT_EQ(a->example(Split::Eval, i % 500), b->example(Split::Eval, i % 500)) << name << " " << i;
    }
    auto other_seed = registry.create<Task>(name, {{"seed", "2"}});
    int same = 0;
    for (std::int64_t i = 0; i < 50; ++i) same += a->example(Split::Train, i) == other_seed->example(Split::Train, i);
    EXPECT_LT(same, 5) << name << ": the seed changes the data";
  }
}

TEST_F(Tasks, TrainAndEvalDiffer) {
  for (const char* name : kAll) {
    auto t = registry.create<Task>(name);
    EXPECT_EQ(t->size(Split::Train), 20000);
    EXPECT_EQ(t->size(Split::Eval), 500);
    int same = 0;
    for (std::int64_t i = 0; i < 100; ++i) same += t->example(Split::Train, i) == t->example(Split::Eval, i);
    EXPECT_LT(same, 5) << name;
    EXPECT_THROW(t->example(Split::Eval, 500), Error) << name;
    EXPECT_THROW(t->example(Split::Train, -1), Error) << name;
  }
}

TEST_F(Tasks, LengthsAndTokensAreInRange) {
  for (const char* name : kAll) {
    auto t = registry.create<Task>(name, {{"vocab_size", "10"}, {"min_len", "2"}, {"max_len", "5"}});
    const TaskInfo info = t->info();
    EXPECT_EQ(info.vocab_size, 10);
    EXPECT_EQ(info.max_tgt_len, 5);
    std::set<std::size_t> lengths;
    std::set<std::int32_t> tokens;
    for (Split split : {Split::Train, Split::Eval})
      for (std::int64_t i = 0; i < 300; ++i) {
        const Example e = t->example(split, i);
        lengths.insert(e.tgt.size());
        EXPECT_GE(e.tgt.size(), 2u);
        EXPECT_LE(e.tgt.size(), 5u);
        for (const Tokens* seq : {&e.src, &e.tgt})
          for (std::int32_t tok : *seq) {
            EXPECT_GE(tok, 3) << name;
            EXPECT_LT(tok, 10) << name;
            tokens.insert(tok);
          }
      }
    EXPECT_EQ(lengths, (std::set<std::size_t>{2, 3, 4, 5})) << name << ": every length occurs";
    EXPECT_EQ(tokens.size(), 7u) << name << ": every content token occurs";
  }
}

TEST_F(Tasks, Seq2SeqTargetsFollowTheirRule) {
  auto copy = registry.create<Task>("copy");
  auto reverse = registry.create<Task>("reverse");
  auto sort = registry.create<Task>("sort");
  for (const auto& t : {copy, reverse, sort}) {
    EXPECT_EQ(t->info().type, TaskType::Seq2Seq);
    EXPECT_EQ(t->info().max_src_len, 12);
  }
  for (std::int64_t i = 0; i < 200; ++i) {
    const Example c = copy->example(Split::Train, i);
    EXPECT_EQ(c.tgt, c.src);
    EXPECT_EQ(reverse->example(Split::Train, i).src, c.src) << "one generator: the same sources";
    const Example r = reverse->example(Split::Train, i);
    EXPECT_EQ(r.tgt, Tokens(r.src.rbegin(), r.src.rend()));
    const Example s = sort->example(Split::Eval, i);
    Tokens sorted = s.src;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(s.tgt, sorted);
  }
}

TEST_F(Tasks, RandomPairsHaveTargetsIndependentOfTheirSources) {
  const std::map<std::string, std::string> options{{"vocab_size", "8"}, {"min_len", "3"}, {"max_len", "3"}};
  auto t = registry.create<Task>("random_pairs", options);
  auto copy = registry.create<Task>("copy", options);
  EXPECT_EQ(t->info().type, TaskType::Seq2Seq);
  // With 5 content tokens, P(tgt[k] = src[k]) is 1/5 if they are independent (copy would give 1).
  int equal = 0, positions = 0, same_source = 0;
  for (std::int64_t i = 0; i < 2000; ++i) {
    const Example e = t->example(Split::Train, i);
    for (std::size_t k = 0; k < 3; ++k) equal += e.src[k] == e.tgt[k];
    positions += 3;
    same_source += e.src == copy->example(Split::Train, i).src;
  }
  EXPECT_NEAR(static_cast<double>(equal) / positions, 0.2, 0.03);
  EXPECT_EQ(same_source, 2000) << "the sources are the shared generator's, as for copy";
}

TEST_F(Tasks, LanguageModelIsAMarkovChainWithFewSuccessors) {
  auto lm = registry.create<Task>("language_model");
  EXPECT_EQ(lm->info().type, TaskType::LanguageModel);
  EXPECT_EQ(lm->info().max_src_len, 0);
  std::map<std::int32_t, std::set<std::int32_t>> successors;
  for (std::int64_t i = 0; i < 2000; ++i) {
    const Example e = lm->example(Split::Train, i);
    EXPECT_TRUE(e.src.empty());
    EXPECT_FALSE(e.cut) << "a whole sequence of the chain: eos ends it";
    for (std::size_t t = 1; t < e.tgt.size(); ++t) successors[e.tgt[t - 1]].insert(e.tgt[t]);
  }
  EXPECT_EQ(successors.size(), 29u) << "every content token is followed by something";
  for (const auto& [tok, next] : successors) EXPECT_LE(next.size(), 3u) << "token " << tok;
  // Another seed, another chain.
  auto other = registry.create<Task>("language_model", {{"seed", "7"}});
  EXPECT_NE(lm->example(Split::Train, 0), other->example(Split::Train, 0));
}

TEST_F(Tasks, OptionErrorsNameThePluginAndTheValue) {
  auto message = [&](const char* name, std::map<std::string, std::string> opts) -> std::string {
    try {
      registry.create<Task>(name, opts);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (const char* name : kAll) {
    const std::string plugin = std::string("task/") + name;
    std::string e = message(name, {{"vocab_size", "3"}});
    EXPECT_NE(e.find(plugin + ": vocab_size must be > 3"), std::string::npos) << e;
    e = message(name, {{"min_len", "0"}});
    EXPECT_NE(e.find(plugin + ": need 1 <= min_len <= max_len, got min_len 0, max_len 12"), std::string::npos) << e;
    e = message(name, {{"min_len", "6"}, {"max_len", "5"}});
    EXPECT_NE(e.find("got min_len 6, max_len 5"), std::string::npos) << e;
    e = message(name, {{"eval_examples", "0"}});
    EXPECT_NE(e.find("eval_examples must be >= 1"), std::string::npos) << e;
    EXPECT_EQ(message(name, {{"vocab_size", "4"}, {"min_len", "1"}, {"max_len", "1"}}), "no error");
  }
}

// The file-backed text tasks read max_examples, min_freq and the split options in one place
// (plugins/common/text/corpus_settings.hpp): the same mistake gets the same message from each.
TEST_F(Tasks, TextTasksRefuseTheSharedCorpusOptionsAlike) {
  const testing::TempDir dir;
  const std::string tsv = (dir.path() / "pairs.tsv").string(), txt = (dir.path() / "text.txt").string();
  {
    std::ofstream pairs(tsv), text(txt);
    for (int i = 0; i < 20; ++i) {
      pairs << "a b " << i << "\tc " << i % 3 << "\n";
      text << "the fox " << i << " runs\n";
    }
  }
  struct TextTask {
    const char* name;
    std::string file, unit;
  };
  for (const TextTask& t : {TextTask{"translation", tsv, "pair"}, TextTask{"classification", tsv, "example"},
                            TextTask{"language_model", txt, "window of the file"}}) {
    const auto error = [&](std::map<std::string, std::string> options) {
      options["file"] = t.file;
      return testing::error_of([&] { registry.create<Task>(t.name, options)->prepare({}); });  // as the host makes a task
    };
    const std::string plugin = std::string("task/") + t.name;
    EXPECT_NO_THROW(registry.create<Task>(t.name, {{"file", t.file}})->prepare({})) << plugin;
    std::string e = error({{"max_examples", "-1"}});
    EXPECT_NE(e.find(plugin + ": max_examples must be >= 0, got -1"), std::string::npos) << e;
    EXPECT_NE(e.find("0 keeps every " + t.unit), std::string::npos) << e;
    e = error({{"min_freq", "0"}});
    EXPECT_NE(e.find(plugin + ": min_freq must be >= 1, got 0"), std::string::npos) << e;
    EXPECT_NE(e.find("1 keeps every train token"), std::string::npos) << e;
    e = error({{"valid_fraction", "1"}});
    EXPECT_NE(e.find("valid_fraction and test_fraction must be in [0, 1), got 1.000000 and "), std::string::npos) << e;
  }
}

TEST(MakeBatch, PadsPlacesBosEosAndIgnoresPadding) {
  const std::vector<Example> ex = {{{5, 6, 7}, {7, 6}}, {{8}, {9, 10, 11, 12}}};
  const HostBatch b = make_batch(ex);
  EXPECT_EQ(b.B, 2);
  EXPECT_EQ(b.S, 3);
  EXPECT_EQ(b.T, 5);
  constexpr std::int32_t P = TaskInfo::kPad, S = TaskInfo::kBos, E = TaskInfo::kEos, I = HostBatch::kIgnore;
  EXPECT_EQ(b.src, (Tokens{5, 6, 7, 8, P, P}));
  EXPECT_EQ(b.src_lengths, (Tokens{3, 1}));
  EXPECT_EQ(b.tgt_in, (Tokens{S, 7, 6, P, P, S, 9, 10, 11, 12}));
  EXPECT_EQ(b.tgt_out, (Tokens{7, 6, E, I, I, 9, 10, 11, 12, E}));
  EXPECT_EQ(b.tgt_lengths, (Tokens{3, 5}));
  EXPECT_THROW(make_batch({}), Error);
}

TEST(MakeBatch, LanguageModelBatchesHaveNoSource) {
  const HostBatch b = make_batch({{{}, {4}}, {{}, {}}});
  EXPECT_EQ(b.S, 0);
  EXPECT_TRUE(b.src.empty());
  EXPECT_EQ(b.src_lengths, (Tokens{0, 0}));
  EXPECT_EQ(b.T, 2);
  EXPECT_EQ(b.tgt_in, (Tokens{TaskInfo::kBos, 4, TaskInfo::kBos, TaskInfo::kPad}));
  EXPECT_EQ(b.tgt_out, (Tokens{4, TaskInfo::kEos, TaskInfo::kEos, HostBatch::kIgnore}));
  EXPECT_EQ(b.tgt_lengths, (Tokens{2, 1}));
}

// A window cut from a longer text (Example::cut): its tokens are predicted, then nothing (its
// last position ignored, not eos), beside a whole example in the same batch.
TEST(MakeBatch, ACutWindowPredictsNoEos) {
  Example cut{{}, {4, 5, 6}};
  cut.cut = true;
  const HostBatch b = make_batch({cut, {{}, {7}}});
  constexpr std::int32_t P = TaskInfo::kPad, S = TaskInfo::kBos, E = TaskInfo::kEos, I = HostBatch::kIgnore;
  EXPECT_EQ(b.T, 4);
  EXPECT_EQ(b.tgt_in, (Tokens{S, 4, 5, 6, S, 7, P, P}));
  EXPECT_EQ(b.tgt_out, (Tokens{4, 5, 6, I, 7, E, I, I}));
  EXPECT_EQ(b.tgt_lengths, (Tokens{4, 2})) << "the cut window's last position is still read (causal), only not scored";
}

TEST_F(Tasks, DefaultScoreCountsExactMatchesAndTokenAccuracy) {
  auto t = registry.create<Task>("copy");
  const std::vector<Example> refs = {{{}, {3, 4, 5}}, {{}, {6, 7}}, {{}, {8, 9, 10, 11}}, {{}, {3, 3}}};
  // exact; one wrong of 2; too short (2 of 4 right); too long (2 right of max(2, 4) = 4).
  const std::vector<Tokens> preds = {{3, 4, 5}, {6, 8}, {8, 9}, {3, 3, 3, 3}};
  const auto m = t->score(refs, preds);
  EXPECT_DOUBLE_EQ(m.at("exact_match"), 0.25);
  EXPECT_DOUBLE_EQ(m.at("token_accuracy"), (3.0 + 1 + 2 + 2) / (3 + 2 + 4 + 4));
  EXPECT_DOUBLE_EQ(t->score({refs[0]}, {{}}).at("token_accuracy"), 0.0);
  EXPECT_DOUBLE_EQ(t->score({refs[0]}, {{}}).at("exact_match"), 0.0);
  EXPECT_THROW(t->score(refs, {preds[0]}), Error);
}

// eval.lengths: eval examples of exactly the asked length, deterministic, their own draws; the
// train split has none.
TEST_F(Tasks, SyntheticTasksMakeEvalExamplesOfAnyLength) {
  for (const char* name : {"copy", "reverse", "sort", "language_model"}) {
    SCOPED_TRACE(name);
    auto t = registry.create<Task>(name, {{"max_len", "5"}, {"eval_examples", "7"}});
    EXPECT_EQ(t->size_at_length(Split::Eval, 40), 7);
    EXPECT_EQ(t->size_at_length(Split::Train, 40), 0);
    EXPECT_EQ(t->size_at_length(Split::Eval, 0), 0);
    const bool lm = std::string(name) == "language_model";
    for (std::int64_t length : {1, 5, 40}) {
      const Example e = t->example_at_length(Split::Eval, 3, length);
      EXPECT_EQ(static_cast<std::int64_t>((lm ? e.tgt : e.src).size()), length);
      if (!lm) {
        EXPECT_EQ(e.tgt.size(), e.src.size());
      }
      EXPECT_EQ(e, t->example_at_length(Split::Eval, 3, length));
    }
    EXPECT_NE(t->example_at_length(Split::Eval, 3, 40), t->example_at_length(Split::Eval, 4, 40));
    const Example five = t->example_at_length(Split::Eval, 0, 5), regular = t->example(Split::Eval, 0);
    EXPECT_NE(five, regular) << "a length of its own draws afresh";
    EXPECT_THROW(t->example_at_length(Split::Eval, 7, 5), Error);
  }
  auto pairs = registry.create<Task>("random_pairs");
  EXPECT_EQ(pairs->size_at_length(Split::Eval, 8), 0) << "a task without lengths says so";
  EXPECT_THROW(pairs->example_at_length(Split::Eval, 0, 8), Error);
}

}  // namespace
}  // namespace ablate
