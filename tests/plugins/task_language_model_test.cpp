// Tests for task/language_model's text mode end to end (the built plugin): `ablate run` over the
// plugin's fixture text beats the unigram baseline, records continuations (the same after a resume),
// checks its generate settings and scores eval.lengths on the held-out stretch. Its own code's tests: plugins/task_language_model/tests/.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "backends/backend_test_util.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "results/run_file.hpp"
#include "framework/tiny_run.hpp"

namespace ablate {
namespace {

namespace fs = std::filesystem;

// The plugin's fixture text (plugins/task_language_model/tests/data).
const fs::path kFable =
    fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_language_model" / "tests" / "data" / "language_model_fable.txt";

class LanguageModelTextRun : public ::testing::Test {
 protected:
  // Trains the fixture's char-level LM into dir/<name> with `extra` command-line arguments.
  testing::CliResult run(const std::string& name, std::vector<std::string> extra = {}) {
    std::ofstream(dir.path() / "spec.yaml") << spec();
    std::vector<std::string> args = {
        "run",   (dir.path() / "spec.yaml").string(), "--out", (dir.path() / name).string(), "--progress", "quiet",
        "--set", "task.file=" + kFable.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  }
  // A char-level decoder of 2 layers; task.file is set on the command line.
  static std::string spec() {
    return testing::TinyRun{.name = "tiny_lm_text",
                            .task = "{plugin: language_model, context: 32, valid_fraction: 0.1, test_fraction: 0.05}",
                            .arch = "decoder",
                            .layers = 2,
                            .backend = "{plugin: onednn, threads: 1}",
                            .steps = 120,
                            .batch_size = 16,
                            .lr = "5.0e-3",
                            .clip_grad_norm = false,
                            .log_every = 40,
                            .eval_every = 40,
                            .eval_batches = 1,
                            .metrics = "loss, perplexity, token_accuracy",
                            .generate = "{prompt_tokens: 8, max_tokens: 16, temperature: 0.5}"}
        .yaml();
  }
  testing::TempDir dir;
};

// The perplexity of the eval windows under the train windows' unigram distribution (<unk> a token
// like any other): what a model that ignores the context would reach at best.
double unigram_perplexity(const Task& t) {
  std::map<std::int32_t, double> counts;
  double total = 0.0, nll = 0.0, n = 0.0;
  for (std::int64_t i = 0; i < t.size(Split::Train); ++i)
    for (std::int32_t id : t.example(Split::Train, i).tgt) counts[id] += 1.0, total += 1.0;
  for (std::int64_t i = 0; i < t.size(Split::Eval); ++i)
    for (std::int32_t id : t.example(Split::Eval, i).tgt) nll -= std::log(std::max(counts[id], 0.5) / total), n += 1.0;
  return std::exp(nll / n);
}

TEST_F(LanguageModelTextRun, TinyCharModelBeatsTheUnigramBaselineAndRecordsContinuations) {
  const auto r = run("run");
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const results::RunReader reader(dir.path() / "run" / "run.h5");
  EXPECT_EQ(reader.state().status, results::RunStatus::Completed);
  const results::MetricTable eval = reader.metrics(results::MetricSplit::Eval);
  // The fixture's text is small: past ~100 steps the model learns the train windows by heart and
  // the eval perplexity rises again, so the run stops at 120.
  ASSERT_EQ(eval.steps, (std::vector<std::int64_t>{40, 80, 120}));
  const auto column = [&](const std::string& name) -> const std::vector<double>& {
    for (std::size_t i = 0; i < eval.names.size(); ++i)
      if (eval.names[i] == name) return eval.columns[i];
    static const std::vector<double> none;
    ADD_FAILURE() << "no eval column " << name;
    return none;
  };
  const auto task = testing::builtin_registry().create<Task>(
      "language_model", {{"file", kFable.string()}, {"context", "32"}, {"valid_fraction", "0.1"}, {"test_fraction", "0.05"}});
  const double unigram = unigram_perplexity(*task), vocab = static_cast<double>(task->info().vocab_size);
  ASSERT_GT(unigram, 12.0) << "the fixture's characters are not nearly uniform, but far from predictable one by one";
  const double ppl = column("perplexity").back();
  EXPECT_LT(ppl, 0.5 * unigram) << "eval perplexity " << ppl << ", unigram baseline " << unigram << ", vocabulary " << vocab;
  EXPECT_LT(ppl, vocab / 5) << "vocabulary " << vocab;
  EXPECT_LT(column("perplexity").back(), column("perplexity").front());
  EXPECT_FALSE(std::isnan(column("test_perplexity").back())) << "the test split is scored when the run completes";

  // Continuations: 5 eval examples per evaluation, prompt = the first 8 characters, reference =
  // the next 16; the prediction is the model's (at most 16 tokens).
  ASSERT_EQ(reader.sample_steps(), eval.steps);
  const results::SamplesRecord last = reader.samples(1);
  ASSERT_EQ(last.src.size(), 5u);
  int nonempty = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    const std::vector<std::int32_t> window = task->example(Split::Eval, static_cast<std::int64_t>(i)).tgt;
    EXPECT_EQ(last.src[i], task->text({window.begin(), window.begin() + 8}, true)) << i;
    EXPECT_EQ(last.reference[i], task->text({window.begin() + 8, window.begin() + 24}, true)) << i;
    EXPECT_LE(last.prediction[i].size(), 16u * 5) << "16 tokens, each a character or <unk>";
    nonempty += last.prediction[i].empty() ? 0 : 1;
  }
  EXPECT_GE(nonempty, 3) << "a trained model continues rather than ending at once";
}

TEST_F(LanguageModelTextRun, AResumedRunRecordsTheSameContinuations) {
  const std::vector<std::string> short_run = {"--set", "train.steps=80", "--set", "eval.every=40"};
  const auto whole = run("whole", short_run);
  ASSERT_EQ(whole.code, cli::kExitOk) << whole.out << whole.err;
  std::vector<std::string> first = short_run;
  first.insert(first.end(), {"--stop-after", "40"});  // stops at the first evaluation's checkpoint
  ASSERT_EQ(run("split", first).code, cli::kExitOk);
  std::vector<std::string> second = short_run;
  second.push_back("--resume");
  const auto resumed = run("split", second);
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  const results::RunReader a(dir.path() / "whole" / "run.h5"), b(dir.path() / "split" / "run.h5");
  ASSERT_EQ(a.sample_steps(), (std::vector<std::int64_t>{40, 80}));
  ASSERT_EQ(b.sample_steps(), a.sample_steps());
  for (std::size_t row = 0; row < 2; ++row) {
    EXPECT_EQ(b.samples(row).src, a.samples(row).src) << row;
    EXPECT_EQ(b.samples(row).prediction, a.samples(row).prediction)
        << "row " << row << ": sampled with (seed, step), not a live RNG";
  }
}

TEST_F(LanguageModelTextRun, GenerateSettingsAreCheckedAgainstTheTaskAndTheModel) {
  const auto whole_window = run("long", {"--set", "eval.generate.prompt_tokens=32"});
  EXPECT_EQ(whole_window.code, cli::kExitUsage) << whole_window.out << whole_window.err;
  EXPECT_NE(whole_window.err.find("--set eval.generate.prompt_tokens=32: eval.generate.prompt_tokens: 32 leaves nothing to "
                                  "continue: the task's examples have at most 32 tokens; expected fewer than 32"),
            std::string::npos)
      << whole_window.err;
  EXPECT_FALSE(fs::exists(dir.path() / "long")) << "a spec problem leaves no run directory";

  const std::vector<std::string> two_steps = {"--set", "train.steps=2", "--set", "eval.every=2"};
  std::vector<std::string> leaky = two_steps;
  leaky.insert(leaky.end(), {"--set", "model.causal=false"});
  const auto r = run("leaky", leaky);
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("note: skipped: eval.generate (model.causal is false"), std::string::npos) << r.out;
  EXPECT_EQ(results::RunReader(dir.path() / "leaky" / "run.h5").layout().samples.count, 0);
  std::vector<std::string> off = two_steps;
  off.insert(off.end(), {"--set", "eval.generate.max_tokens=0"});
  ASSERT_EQ(run("off", off).code, cli::kExitOk);
  EXPECT_EQ(results::RunReader(dir.path() / "off" / "run.h5").layout().samples.count, 0) << "max_tokens 0: none recorded";
}

// eval.lengths on text (split: contiguous, the default): the held-out stretch scored in windows
// of 16 and 64 tokens besides the trained 32, each a column of finite losses, and the test
// stretch at the end (test_loss_at_16, ...); split: random,
// whose eval windows are not adjacent, is refused before anything is written.
TEST_F(LanguageModelTextRun, EvalLengthsScoreTheHeldOutStretchAtEachLength) {
  const std::vector<std::string> lengths = {"--set", "train.steps=20",        "--set", "eval.every=20",
                                            "--set", "eval.lengths=[16, 64]", "--set", "eval.generate.max_tokens=0"};
  const auto r = run("lengths", lengths);
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const results::MetricTable eval = results::RunReader(dir.path() / "lengths" / "run.h5").metrics(results::MetricSplit::Eval);
  const auto last = [&](const std::string& name) {
    const auto it = std::find(eval.names.begin(), eval.names.end(), name);
    EXPECT_NE(it, eval.names.end()) << "no eval column " << name;
    return it == eval.names.end() ? std::nan("") : eval.columns[static_cast<std::size_t>(it - eval.names.begin())].back();
  };
  // The test split at each length too, once at the end (a sweep tunes on eval, reports on test).
  for (const char* name : {"loss", "loss_at_16", "loss_at_64", "test_loss", "test_loss_at_16", "test_loss_at_64"}) {
    const double loss = last(name);
    EXPECT_TRUE(std::isfinite(loss) && loss > 0.0) << name << " " << loss;
  }
  EXPECT_NE(last("test_loss_at_16"), last("loss_at_16")) << "the test stretch is other text than the eval stretch";
  EXPECT_NE(last("test_loss_at_16"), last("test_loss_at_64"));
  std::vector<std::string> random = lengths;
  random.insert(random.end(), {"--set", "task.split=random"});
  const auto refused = run("random", random);
  EXPECT_EQ(refused.code, cli::kExitUsage) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("eval.lengths: task plugin 'language_model' makes no eval examples of length 16"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir.path() / "random"));
}

}  // namespace
}  // namespace ablate
