// Tests for task/language_model's shard mode end to end (the built plugin and `ablate`): shards
// that `ablate tokenize` made from a text's train / eval / test lines train the very model the
// text mode trains on those lines, loss for loss; the run keeps the shards' tokenizer, decodes its
// samples, resumes bit-identically (the data order is a function of the step), refuses a spec
// whose tokenizer is not the shards', and an evaluation after a shard changed. The mode's own tests: plugins/task_language_model/tests/.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/tiny_run.hpp"
#include "results/run_file.hpp"

namespace ablate {
namespace {

namespace fs = std::filesystem;

const fs::path kFable =
    fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_language_model" / "tests" / "data" / "language_model_fable.txt";

class LanguageModelShardRun : public ::testing::Test {
 protected:
  // The fable's lines split as the text mode splits them at valid_fraction 0.1, test_fraction 0.05
  // (test the last ceil(0.05 n) lines, eval the ceil(0.1 n) before), each part tokenized into a
  // shard with the char tokenizer.
  void SetUp() override {
    std::ifstream in(kFable);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    const auto n = static_cast<double>(lines.size());
    const auto n_test = static_cast<std::size_t>(std::ceil(0.05 * n - 1e-9)),
               n_eval = static_cast<std::size_t>(std::ceil(0.1 * n - 1e-9));
    const std::size_t n_train = lines.size() - n_test - n_eval;
    const auto write = [&](const std::string& name, std::size_t from, std::size_t to) {
      std::ofstream out(dir.path() / name);
      for (std::size_t i = from; i < to; ++i) out << lines[i] << "\n";
    };
    write("train.txt", 0, n_train);
    write("valid.txt", n_train, n_train + n_eval);
    write("test.txt", n_train + n_eval, lines.size());
    const auto r = testing::run_cli({"tokenize", "--tokenizer", "{plugin: char}", "--train", path("train.txt"), "--out",
                                     path("shards"), path("train.txt"), path("valid.txt"), path("test.txt")});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  std::string path(const std::string& name) const { return (dir.path() / name).string(); }
  static std::string spec(const std::string& task) {
    return testing::TinyRun{.name = "tiny_lm_shards",
                            .task = task,
                            .arch = "decoder",
                            .layers = 1,
                            .backend = "{plugin: onednn, threads: 1}",
                            .steps = 40,
                            .batch_size = 8,
                            .lr = "5.0e-3",
                            .log_every = 10,
                            .eval_every = 20,
                            .eval_batches = 1,
                            .metrics = "loss, perplexity",
                            .generate = "{prompt_tokens: 8, max_tokens: 8, temperature: 0.5}"}
        .yaml();
  }
  std::string shard_task() const {
    return "{plugin: language_model, context: 32, shards: " + path("shards/train.bin") +
           ", eval_shards: " + path("shards/valid.bin") + ", test_shards: " + path("shards/test.bin") +
           ", tokenizer: {plugin: char}}";
  }
  testing::CliResult run(const std::string& spec_text, const std::string& name, std::vector<std::string> extra = {}) {
    std::ofstream(dir.path() / (name + ".yaml")) << spec_text;
    std::vector<std::string> args = {"run", path(name + ".yaml"), "--out", path(name), "--progress", "quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  }
  testing::TempDir dir;
};

TEST_F(LanguageModelShardRun, ShardsOfTheTextsSplitTrainTheTextModesModelLossForLoss) {
  const auto text = run(spec("{plugin: language_model, context: 32, file: " + kFable.string() +
                             ", valid_fraction: 0.1, test_fraction: 0.05, tokenizer: {plugin: char}}"),
                        "text");
  ASSERT_EQ(text.code, cli::kExitOk) << text.out << text.err;
  const auto shards = run(spec(shard_task()), "shards_run");
  ASSERT_EQ(shards.code, cli::kExitOk) << shards.out << shards.err;
  {
    const results::RunReader a(dir.path() / "text" / "run.h5"), b(dir.path() / "shards_run" / "run.h5");
    for (const auto split : {results::MetricSplit::Train, results::MetricSplit::Eval}) {
      const results::MetricTable ta = a.metrics(split), tb = b.metrics(split);
      ASSERT_EQ(tb.steps, ta.steps);
      EXPECT_EQ(tb.column("loss"), ta.column("loss")) << "the same windows, in the same order";
    }
    const double test_a = a.metrics(results::MetricSplit::Eval).column("test_loss").back();
    EXPECT_EQ(b.metrics(results::MetricSplit::Eval).column("test_loss").back(), test_a) << "the test split scored at the end";
    EXPECT_FALSE(std::isnan(test_a));
    ASSERT_EQ(b.sample_steps(), a.sample_steps());
    EXPECT_EQ(b.samples(0).src, a.samples(0).src) << "samples decoded with the shards' tokenizer";
    EXPECT_FALSE(b.samples(0).src.front().empty());
  }
  EXPECT_TRUE(fs::exists(dir.path() / "shards_run" / "tokenizer-text.bin")) << "the run keeps the shards' tokenizer";
  const auto eval = testing::run_cli({"eval", path("shards_run"), "--split", "test"});
  EXPECT_EQ(eval.code, cli::kExitOk) << eval.out << eval.err;
}

TEST_F(LanguageModelShardRun, AResumedShardRunIsBitIdentical) {
  const auto whole = run(spec(shard_task()), "whole");
  ASSERT_EQ(whole.code, cli::kExitOk) << whole.out << whole.err;
  ASSERT_EQ(run(spec(shard_task()), "split", {"--stop-after", "20"}).code, cli::kExitOk);
  const auto resumed = run(spec(shard_task()), "split", {"--resume"});
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  const results::RunReader a(dir.path() / "whole" / "run.h5"), b(dir.path() / "split" / "run.h5");
  const results::MetricTable ta = a.metrics(results::MetricSplit::Train), tb = b.metrics(results::MetricSplit::Train);
  ASSERT_EQ(tb.steps, ta.steps);
  EXPECT_EQ(tb.column("loss"), ta.column("loss"));
  EXPECT_EQ(b.metrics(results::MetricSplit::Eval).column("loss"), a.metrics(results::MetricSplit::Eval).column("loss"));
}

TEST_F(LanguageModelShardRun, AShardChangedAfterTrainingIsRefusedByEval) {
  const auto r = run(spec(shard_task()), "trained");
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  {  // the valid shard's first two tokens swapped: the same ids, other text
    std::fstream io(dir.path() / "shards" / "valid.bin", std::ios::in | std::ios::out | std::ios::binary);
    char t[4];
    io.seekg(1024);
    io.read(t, 4);
    ASSERT_NE(std::string(t, 2), std::string(t + 2, 2)) << "the fable's first two characters differ";
    std::swap(t[0], t[2]);
    std::swap(t[1], t[3]);
    io.seekp(1024);
    io.write(t, 4);
  }
  const auto e = testing::run_cli({"eval", path("trained"), "--split", "eval"});
  EXPECT_EQ(e.code, cli::kExitUsage) << e.out << e.err;
  EXPECT_NE(e.err.find("task.eval_shards " + path("shards/valid.bin") + " changed since the run read it"), std::string::npos)
      << e.err;
}

TEST_F(LanguageModelShardRun, ASpecWhoseTokenizerIsNotTheShardsIsRefused) {
  std::string other = shard_task();
  other.replace(other.find("{plugin: char}"), 14, "{plugin: char, lowercase: true}");
  const auto r = run(spec(other), "other");
  EXPECT_EQ(r.code, cli::kExitUsage) << r.out << r.err;
  EXPECT_NE(r.err.find("tokenizer-text.bin holds tokenizer/char with options 'lowercase=false;"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but the spec's task.tokenizer is tokenizer/char with options 'lowercase=true;"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "other" / "run.h5")) << "refused before a run starts";
}

}  // namespace
}  // namespace ablate
