// Tests for reading run files into RunSummary (framework/analysis/run_summary): spec flattening
// on literal YAML (plugin references, lists, nesting), finding run.h5 files recursively, and
// summarizing a real run trained in-process by `ablate run`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "ablate/error.hpp"
#include "analysis/run_summary.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "results/run_file.hpp"
#include "framework/results/run_file_test_util.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::analysis {
namespace {
namespace fs = std::filesystem;

TEST(RunSummary, FlattensTheSpecToDottedKeys) {
  const auto c = flatten_spec(R"(name: tiny
model:
  block: post_norm
  ffn: {plugin: gelu, approximate: tanh}
  d_model: 32
train:
  optimizer: {plugin: adamw, lr: 0.003, beta2: 0.95}
  schedule: {plugin: noam, warmup: 400}
eval: {metrics: [loss, exact_match]}
sweep: {grid: {model.block: [pre_norm, post_norm]}}
note: ~
)");
  EXPECT_EQ(c.at("name"), "tiny");
  EXPECT_EQ(c.at("model.block"), "post_norm");
  EXPECT_EQ(c.at("model.ffn"), "gelu");
  EXPECT_EQ(c.at("model.ffn.approximate"), "tanh");
  EXPECT_EQ(c.count("model.ffn.plugin"), 0u);
  EXPECT_EQ(c.at("model.d_model"), "32");
  EXPECT_EQ(c.at("train.optimizer.lr"), "0.003");
  EXPECT_EQ(c.at("train.optimizer"), "adamw");
  EXPECT_EQ(c.at("train.optimizer.beta2"), "0.95");
  EXPECT_EQ(c.at("train.schedule"), "noam");
  EXPECT_EQ(c.at("train.schedule.warmup"), "400");
  EXPECT_EQ(c.at("eval.metrics"), "[loss, exact_match]");
  EXPECT_EQ(c.at("sweep.grid.model.block"), "[pre_norm, post_norm]");
  EXPECT_EQ(c.at("note"), "null");
}

TEST(RunSummary, RejectsTextThatIsNotAMapping) {
  EXPECT_THROW(flatten_spec("- a\n- b\n"), Error);
  EXPECT_THROW(flatten_spec("a: [unclosed\n"), Error);
}

class RunSummaryFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ablate::testing::fresh_dir("run_summary_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunSummaryFiles, FindsRunFilesRecursivelySorted) {
  for (const char* d : {"b/s2", "a/s1", "a/deeper/x", ".attempts/s1.1", "b/.hidden/y"}) {
    fs::create_directories(dir_ / d);
    std::ofstream(dir_ / d / "run.h5") << "x";
  }
  std::ofstream(dir_ / "a" / "other.h5") << "x";
  const auto runs = find_runs({dir_, dir_ / "a" / "s1" / "run.h5"});
  ASSERT_EQ(runs.size(), 3u) << "folders starting with '.' (a sweep's .attempts/) are not searched";
  EXPECT_EQ(runs[0].parent_path().filename(), "x");
  EXPECT_EQ(runs[1].parent_path().filename(), "s1");
  EXPECT_EQ(runs[2].parent_path().filename(), "s2");
  EXPECT_TRUE(find_runs({dir_ / "b" / "s2"}).size() == 1u);
  EXPECT_THROW(find_runs({dir_ / "missing"}), UsageError);
}

TEST_F(RunSummaryFiles, SummarizesARealRun) {
  std::ofstream(dir_ / "spec.yaml") << testing::TinyRun{.task = testing::sequence_task(400, 32),
                                                        .d_model = 16,
                                                        .steps = 12,
                                                        .batch_size = 16,
                                                        .clip_grad_norm = false,
                                                        .seed = 3,
                                                        .log_every = 2,
                                                        .eval_every = 6,
                                                        .eval_batches = 1,
                                                        .metrics = "loss, exact_match"}
                                           .yaml();
  const auto r =
      testing::run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "run").string(), "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto files = find_runs({dir_});
  ASSERT_EQ(files.size(), 1u);
  const RunSummary s = summarize(results::RunReader(files[0]));
  EXPECT_EQ(s.status, "completed");
  EXPECT_FALSE(s.run_id.empty());
  EXPECT_EQ(s.path, files[0].string());
  EXPECT_EQ(s.config.at("model.block"), "pre_norm");
  EXPECT_EQ(s.config.at("task"), "copy");
  EXPECT_EQ(s.config.at("task.vocab_size"), "8");
  EXPECT_EQ(s.config.at("train.seed"), "3");
  ASSERT_EQ(s.eval_curves.at("loss").size(), 2u);
  EXPECT_EQ(s.eval_curves.at("loss").back().first, 12);
  EXPECT_EQ(s.final_metrics.at("loss"), s.eval_curves.at("loss").back().second);
  EXPECT_TRUE(s.final_metrics.count("exact_match"));
  EXPECT_TRUE(std::isfinite(s.tokens_per_s) && s.tokens_per_s > 0) << s.tokens_per_s;

  // `ablate eval`'s scores, recorded in run.h5, become final metrics evals/SPLIT/METRIC.
  const auto e = testing::run_cli({"eval", (dir_ / "run").string(), "--split", "eval", "--limit", "16"});
  ASSERT_EQ(e.code, cli::kExitOk) << e.out << e.err;
  const RunSummary scored = summarize(results::RunReader(files[0]));
  ASSERT_TRUE(scored.final_metrics.count("evals/eval/loss")) << "no evals/eval/loss";
  EXPECT_DOUBLE_EQ(scored.final_metrics.at("evals/eval/loss"), s.final_metrics.at("loss"))
      << "the 16 examples (eval.batches x batch) the run's last evaluation scored, at the same weights";
  EXPECT_DOUBLE_EQ(scored.final_metrics.at("evals/eval/exact_match"), s.final_metrics.at("exact_match"));
  const auto c = testing::run_cli({"compare", dir_.string(), "--metric", "evals/eval/loss"});
  EXPECT_EQ(c.code, cli::kExitOk) << c.out << c.err;
  EXPECT_NE(c.out.find("evals/eval/loss"), std::string::npos) << c.out;
  // The record is in the run file: the evaluation's directory is not needed to compare.
  const std::string scores = results::testing::read_text(dir_ / "run" / "evals" / "eval" / "scores.json");
  fs::remove_all(dir_ / "run" / "evals");
  EXPECT_DOUBLE_EQ(summarize(results::RunReader(files[0])).final_metrics.at("evals/eval/loss"), s.final_metrics.at("loss"));

  // A run file written before /evals existed: the scores.json files are read instead.
  if (!results::testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py to remove /evals";
  const std::string strip =
      "/usr/bin/python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); del f['evals']\" '" + files[0].string() + "'";
  ASSERT_EQ(std::system(strip.c_str()), 0);
  EXPECT_FALSE(results::RunReader(files[0]).records_evaluations());
  EXPECT_FALSE(summarize(results::RunReader(files[0])).final_metrics.count("evals/eval/loss"));
  fs::create_directories(dir_ / "run" / "evals" / "eval");
  std::ofstream(dir_ / "run" / "evals" / "eval" / "scores.json") << scores;
  EXPECT_DOUBLE_EQ(summarize(results::RunReader(files[0])).final_metrics.at("evals/eval/loss"), s.final_metrics.at("loss"));
  std::ofstream(dir_ / "run" / "evals" / "eval" / "scores.json") << "{not json";
  EXPECT_THROW(summarize(results::RunReader(files[0])), Error);
}

}  // namespace
}  // namespace ablate::analysis
