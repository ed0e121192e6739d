// Tests for plugin task/translation end to end (plugins/task_translation, loaded from the built-in
// plugin dir): a tiny encoder-decoder trained through `ablate run` on the plugin's fixture file
// records BLEU. Its own code's tests: plugins/task_translation/tests/.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "results/run_file.hpp"
#include "framework/tiny_run.hpp"

namespace ablate {
namespace {

namespace fs = std::filesystem;

// The plugin's fixture TSVs (plugins/task_translation/tests/data).
fs::path data(const std::string& name) {
  return fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_translation" / "tests" / "data" / name;
}

TEST(TranslationEndToEnd, TinyEncoderDecoderTrainsAndRecordsBleu) {
  testing::TempDir dir;
  const std::string spec = testing::TinyRun{.name = "tiny_translation",
                                            .task = "{plugin: translation, file: \"" + data("translation_eng_spa.tsv").string() +
                                                    "\", valid_fraction: 0.25, test_fraction: 0.1, max_len: 8}",
                                            .backend = "reference",
                                            .steps = 40,
                                            .batch_size = 4,
                                            .clip_grad_norm = false,
                                            .log_every = 10,
                                            .eval_every = 20,
                                            .eval_batches = 1}
                               .yaml();
  std::ofstream(dir.path() / "spec.yaml") << spec;
  const auto r = testing::run_cli(
      {"run", (dir.path() / "spec.yaml").string(), "--out", (dir.path() / "run").string(), "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const results::RunReader reader(dir.path() / "run" / "run.h5");
  EXPECT_EQ(reader.state().status, results::RunStatus::Completed);
  const results::MetricTable eval = reader.metrics(results::MetricSplit::Eval);
  ASSERT_FALSE(eval.steps.empty());
  EXPECT_EQ(eval.steps.back(), 40);
  const auto column = [&](const std::string& name) -> const std::vector<double>* {
    for (std::size_t i = 0; i < eval.names.size(); ++i)
      if (eval.names[i] == name) return &eval.columns[i];
    return nullptr;
  };
  std::string names;
  for (const auto& n : eval.names) names += n + " ";
  ASSERT_NE(column("loss"), nullptr) << names;
  EXPECT_LT(column("loss")->back(), column("loss")->front() + 1e-9) << "training lowers the eval loss";
  const auto* bleu = column("bleu");
  ASSERT_NE(bleu, nullptr) << "the eval table should have the task's bleu column; it has: " << names;
  for (double b : *bleu) {
    EXPECT_GE(b, 0.0);
    EXPECT_LE(b, 100.0);
  }
}

// Subword sampling (task.tokenizer's alpha) in a run: training reads each pair anew per batch, as
// a function of the seed and the step, so a resumed run trains exactly as the uninterrupted one.
TEST(TranslationEndToEnd, ASubwordSamplingRunChangesTrainingAndResumesBitIdentically) {
  testing::TempDir dir;
  const auto spec = [&](const std::string& alpha) {
    return testing::TinyRun{.name = "sampled_translation",
                            .task = "{plugin: translation, file: \"" + data("translation_eng_spa.tsv").string() +
                                    "\", valid_fraction: 0.25, test_fraction: 0, max_len: 40, joint_vocabulary: true, "
                                    "tokenizer: {plugin: sentencepiece, vocab_size: 70, alpha: " +
                                    alpha + "}}",
                            .backend = "{plugin: onednn, threads: 1}",
                            .steps = 8,
                            .batch_size = 4,
                            .log_every = 1,
                            .eval_every = 8,
                            .eval_batches = 1}
        .yaml();
  };
  const auto run = [&](const std::string& alpha, const std::string& name, std::vector<std::string> extra = {}) {
    std::ofstream(dir.path() / (name + ".yaml")) << spec(alpha);
    std::vector<std::string> args = {
        "run", (dir.path() / (name + ".yaml")).string(), "--out", (dir.path() / name).string(), "--progress", "quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = testing::run_cli(args);
    EXPECT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  };
  run("0.3", "whole");
  run("0.3", "split", {"--stop-after", "4"});
  run("0.3", "split", {"--resume"});
  run("0", "plain");
  const auto losses = [&](const std::string& name) {
    return results::RunReader(dir.path() / name / "run.h5").metrics(results::MetricSplit::Train).column("loss");
  };
  ASSERT_EQ(losses("whole").size(), 8u);
  EXPECT_EQ(losses("split"), losses("whole")) << "the resumed run draws the segmentations the whole run drew";
  EXPECT_NE(losses("plain"), losses("whole")) << "alpha 0.3 trains on other segmentations than alpha 0";
}

}  // namespace
}  // namespace ablate
