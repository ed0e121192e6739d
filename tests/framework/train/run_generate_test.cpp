// Tests for `ablate generate` (framework/train/run_generate, framework/cli/cmd_generate),
// in-process: a tiny word-level language model is trained on the fable fixture, then continues
// prompts. Greedy continuations do not depend on which other prompts share the batch; sampling
// is a function of the seed; one line per prompt; bad inputs are refused with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/test_dirs.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string l; std::getline(s, l);) out.push_back(l);
  return out;
}

class RunGenerateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ablate::testing::fresh_dir("run_generate_test", false);
    const fs::path fable = fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "plugins" /
                           "task_language_model" / "tests" / "data" / "language_model_fable.txt";
    std::ofstream(dir_ / "spec.yaml")
        << "name: generate_lm\n"
           "task: {plugin: language_model, file: "
        << fable.string()
        << ", tokens: word, "
           "lowercase: true, context: 16, valid_fraction: 0.1, test_fraction: 0.0}\n"
           "model: {arch: decoder, d_model: 32, heads: 2, layers: 1, d_ff: 64, dropout: 0.0, "
           "positional_encoding: {plugin: learned, max_len: 40}}\n"
           "backend: onednn\n"
           "train: {steps: 40, batch_size: 8, optimizer: {lr: 3.0e-3}, seed: 4}\n"
           "log: {every: 20}\n"
           "eval: {every: 40, batches: 1, metrics: [loss], generate: {prompt_tokens: 4, max_tokens: 8}}\n";
    const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "run").string(), "--progress", "quiet"});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string run() { return (dir_ / "run").string(); }
  static inline fs::path dir_;
};

TEST_F(RunGenerateTest, GreedyContinuationsDoNotDependOnTheOtherPromptsOfTheBatch) {
  const auto alone = run_cli({"generate", run(), "--prompt", "the miller", "--temperature", "0", "--max-tokens", "6"});
  ASSERT_EQ(alone.code, cli::kExitOk) << alone.err;
  const auto together = run_cli({"generate", run(), "--prompt", "once upon a time there was", "--prompt", "the miller",
                                 "--prompt", "and", "--temperature", "0", "--max-tokens", "6"});
  ASSERT_EQ(together.code, cli::kExitOk) << together.err;
  const auto one = lines(alone.out), three = lines(together.out);
  ASSERT_EQ(one.size(), 1u) << alone.out;
  ASSERT_EQ(three.size(), 3u) << together.out;
  EXPECT_EQ(three[1], one[0]);
  EXPECT_FALSE(one[0].empty());
  std::stringstream words(one[0]);
  int n = 0;
  for (std::string w; words >> w;) ++n;
  EXPECT_LE(n, 6) << one[0];
}

TEST_F(RunGenerateTest, SamplingIsAFunctionOfTheSeed) {
  const auto sample = [&](const char* seed) {
    const auto r = run_cli({"generate", run(), "--prompt", "the miller", "--prompt", "the jar", "--temperature", "1.5",
                            "--max-tokens", "12", "--seed", seed});
    EXPECT_EQ(r.code, cli::kExitOk) << r.err;
    return r.out;
  };
  EXPECT_EQ(sample("7"), sample("7"));
  EXPECT_NE(sample("7"), sample("8"));
}

TEST_F(RunGenerateTest, PromptsComeFromAFileOneLineEachAndUnknownWordsAreCounted) {
  std::ofstream(dir_ / "prompts.txt") << "the miller\nzzzqqq said\n";
  const auto r = run_cli({"generate", run(), "--input", (dir_ / "prompts.txt").string(), "--max-tokens", "3"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_EQ(lines(r.out).size(), 2u) << r.out;
  EXPECT_NE(r.err.find("1 prompt token(s) are not in the run's vocabulary"), std::string::npos) << r.err;
}

// `ablate eval --data` on a language model: the file cut into windows as the task's file is.
TEST_F(RunGenerateTest, EvalDataReadsATextFileAsWindowsOfTheRunsContext) {
  std::ofstream(dir_ / "text.txt") << "the miller and the jar\nthe miller said\n";  // 9 word tokens + 2 line breaks
  const auto r = run_cli({"eval", run(), "--data", (dir_ / "text.txt").string(), "--out", (dir_ / "text_eval").string()});
  EXPECT_EQ(r.code, cli::kExitUsage) << "11 tokens are less than one window of 16";
  EXPECT_NE(r.err.find("text.txt"), std::string::npos) << r.err;
  std::ofstream more(dir_ / "text.txt");
  for (int i = 0; i < 4; ++i) more << "the miller and the jar\nthe miller said\n";  // 44 tokens: 2 windows
  more.close();
  const auto ok = run_cli({"eval", run(), "--data", (dir_ / "text.txt").string(), "--out", (dir_ / "text_eval").string()});
  ASSERT_EQ(ok.code, cli::kExitOk) << ok.err;
  std::ifstream in(dir_ / "text_eval" / "scores.json");
  std::stringstream scores;
  scores << in.rdbuf();
  EXPECT_NE(scores.str().find("\"examples\": 2"), std::string::npos) << scores.str();
}

TEST_F(RunGenerateTest, BadInputsAreRefusedWithTheReason) {
  auto r = run_cli({"generate", run(), "--prompt", "the miller and the", "--max-tokens", "40"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("positional_encoding/learned represents 40"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lower --max-tokens (to at most 35)"), std::string::npos) << r.err;
  std::ofstream(dir_ / "empty.txt") << "";
  r = run_cli({"generate", run(), "--input", (dir_ / "empty.txt").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("no prompts: the input is empty"), std::string::npos) << r.err;
  r = run_cli({"generate", run(), "--prompt", "   "});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("prompt 1 has no tokens"), std::string::npos) << r.err;
  r = run_cli({"generate", run(), "--prompt", "the", "--max-tokens", "0"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("--max-tokens must be >= 1"), std::string::npos) << r.err;
  r = run_cli({"generate", (dir_ / "nowhere").string(), "--prompt", "the"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("not a run directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ablate::train
