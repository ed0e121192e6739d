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

}  // namespace
}  // namespace ablate
