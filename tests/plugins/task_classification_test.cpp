// Tests for plugin task/classification end to end (the built plugin): the classifier head's size, and
// encoder-only classifiers trained by `ablate run` on the plugin's fixture file and on the example
// spec experiments/classification/. Its own code's tests: plugins/task_classification/tests/.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "analysis/run_summary.hpp"
#include "backends/backend_test_util.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "results/run_file.hpp"
#include "spec/experiment_spec.hpp"
#include "train/experiment.hpp"
#include "framework/tiny_run.hpp"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;

// The plugin's fixture TSVs (plugins/task_classification/tests/data).
fs::path data(const std::string& name) {
  return fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_classification" / "tests" / "data" / name;
}
const std::string kSentiment = "classification_sentiment.tsv";  // 60 lines, 20 each of negative, neutral, positive

// The lines of a fixture, split into tab-separated columns.
std::vector<Words> lines_of(const std::string& name) {
  std::ifstream in(data(name));
  std::vector<Words> lines;
  for (std::string l; std::getline(in, l);) {
    Words& cols = lines.emplace_back();
    std::stringstream ss(l);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// The framework's side: the classifier head is sized by the task's classes

TEST(ClassificationModelConfig, TheClassifierHeadHasOneOutputPerClassAndOnlyForAClassificationTask) {
  const auto spec = spec::parse_spec("name: x\ntask: copy\nmodel: {arch: encoder}\ntrain: {steps: 1}\n");
  TaskInfo info{TaskType::Classification, 50, 16, 1};
  info.num_classes = 3;
  EXPECT_EQ(train::model_config(spec, info).num_classes, 3);
  info.type = TaskType::Seq2Seq;
  EXPECT_EQ(train::model_config(spec, info).num_classes, 0) << "a tagging encoder has no classifier head";
  EXPECT_EQ(TaskInfo({TaskType::Seq2Seq, 50, 16, 16}).num_classes, 0) << "the default of the other task types";
}

// ---------------------------------------------------------------------------------------------
// End to end: `ablate run` on the fixture file (the built plugin, loaded from the build tree).

std::string tiny_spec(const std::string& arch, const std::string& file) {
  return testing::TinyRun{.name = "tiny_classification",
                          .task = "{plugin: classification, file: \"" + file + "\", valid_fraction: 0.25, test_fraction: 0.1}",
                          .arch = arch,
                          .backend = "reference",
                          .steps = 150,
                          .batch_size = 8,
                          .clip_grad_norm = false,
                          .log_every = 50,
                          .attention_every = 150,
                          .eval_every = 75}
      .yaml();
}

// The task of tiny_spec("encoder", data(kSentiment)): its examples, as the run split them.
std::shared_ptr<Task> sentiment_task() {
  return testing::builtin_registry().create<Task>(
      "classification", {{"file", data(kSentiment).string()}, {"valid_fraction", "0.25"}, {"test_fraction", "0.1"}});
}

testing::CliResult run(const testing::TempDir& dir, const std::string& spec) {
  std::ofstream(dir.path() / "spec.yaml") << spec;
  return testing::run_cli(
      {"run", (dir.path() / "spec.yaml").string(), "--out", (dir.path() / "run").string(), "--progress", "quiet"});
}

TEST(ClassificationEndToEnd, TinyEncoderClassifierBeatsTheMajorityClassAndRecordsAccuracyAndLabels) {
  testing::TempDir dir;
  const auto r = run(dir, tiny_spec("encoder", data(kSentiment).string()));
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;

  // The majority-class rate of the eval split the run scores (all of it: 15 <= 2 batches of 8).
  const auto task = sentiment_task();
  std::map<std::int32_t, int> per_class;
  for (std::int64_t i = 0; i < task->size(Split::Eval); ++i) ++per_class[task->example(Split::Eval, i).tgt[0]];
  int majority = 0;
  for (const auto& [c, n] : per_class) majority = std::max(majority, n);
  const double majority_rate = static_cast<double>(majority) / static_cast<double>(task->size(Split::Eval));

  const results::RunReader reader(dir.path() / "run" / "run.h5");
  EXPECT_EQ(reader.state().status, results::RunStatus::Completed);
  const results::MetricTable eval = reader.metrics(results::MetricSplit::Eval);
  ASSERT_FALSE(eval.steps.empty());
  EXPECT_EQ(eval.steps.back(), 150);
  std::string names;
  for (const auto& n : eval.names) names += n + " ";
  const auto column = [&](const std::string& name) -> const std::vector<double>& {
    for (std::size_t i = 0; i < eval.names.size(); ++i)
      if (eval.names[i] == name) return eval.columns[i];
    ADD_FAILURE() << "no eval column " << name << "; the table has: " << names;
    static const std::vector<double> none(1, -1.0);
    return none;
  };
  const double accuracy = column("accuracy").back();
  EXPECT_GE(accuracy, majority_rate + 0.3) << "majority-class rate " << majority_rate << "\n" << r.out;
  EXPECT_EQ(column("exact_match").back(), accuracy);
  EXPECT_EQ(column("token_accuracy").back(), accuracy) << "teacher-forced accuracy over the one class token is the same";
  EXPECT_GT(column("macro_f1").back(), 0.0);
  EXPECT_LE(column("macro_f1").back(), 1.0);
  EXPECT_GE(column("test_accuracy").back(), 0.0) << "the test split is scored at the end";
  EXPECT_LT(column("loss").back(), column("loss").front());

  // Decoded samples: the text, and labels as reference and prediction.
  ASSERT_FALSE(reader.sample_steps().empty());
  const results::SamplesRecord samples = reader.samples(reader.sample_steps().size() - 1);
  ASSERT_FALSE(samples.reference.empty());
  const std::set<std::string> labels = {"negative", "neutral", "positive"};
  for (std::size_t i = 0; i < samples.reference.size(); ++i) {
    EXPECT_FALSE(samples.src[i].empty());
    EXPECT_EQ(labels.count(samples.reference[i]), 1u) << samples.reference[i];
    EXPECT_EQ(labels.count(samples.prediction[i]), 1u) << samples.prediction[i];
  }
  EXPECT_FALSE(reader.attention_steps().empty()) << "the encoder's attention probe is recorded";
  const results::ProbeTokens& probe_classes = reader.layout().probe.tgt;
  EXPECT_EQ(probe_classes.length, 0) << "a classifier's probe has no target tokens";
  ASSERT_EQ(probe_classes.texts.size(), 2u);
  for (const std::string& t : probe_classes.texts) EXPECT_EQ(labels.count(t), 1u) << "the probe example's label: " << t;
}

// `ablate eval --data` on a trained classifier: the eval split's lines as a new file score as the split does.
TEST(ClassificationEndToEnd, EvalOfTheEvalSplitsLinesAsANewFileScoresAsTheSplit) {
  testing::TempDir dir;
  const auto r = run(dir, tiny_spec("encoder", data(kSentiment).string()));
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto task = sentiment_task();
  {
    // Each eval example's line of the file: its text encodes to the example's source, its label
    // is the example's class (the Task interface; a line equal to another in both reads the same).
    const auto lines = lines_of(kSentiment);
    std::ofstream out(dir.path() / "again.tsv");
    for (std::int64_t i = 0; i < task->size(Split::Eval); ++i) {
      const Example want = task->example(Split::Eval, i);
      const auto line = std::find_if(lines.begin(), lines.end(), [&](const Words& l) {
        return l.size() == 2 && task->encode(l[0], false, nullptr) == want.src && l[1] == task->text(want.tgt, true);
      });
      ASSERT_NE(line, lines.end()) << "eval example " << i;
      out << (*line)[0] << "\t" << (*line)[1] << "\n";
    }
  }
  const fs::path run_dir = dir.path() / "run";
  auto e = testing::run_cli({"eval", run_dir.string(), "--split", "eval"});
  ASSERT_EQ(e.code, cli::kExitOk) << e.out << e.err;
  e = testing::run_cli({"eval", run_dir.string(), "--data", (dir.path() / "again.tsv").string()});
  ASSERT_EQ(e.code, cli::kExitOk) << e.out << e.err;
  const results::RunReader reader(run_dir / "run.h5");
  std::map<std::string, std::map<std::string, double>> scores;
  for (const auto& s : analysis::evaluation_scores(reader)) scores[s.name] = s.metrics;
  ASSERT_TRUE(scores["eval"].count("accuracy") && scores["eval"].count("macro_f1")) << e.out;
  EXPECT_EQ(scores["again"], scores["eval"]);
  const results::MetricTable t = reader.metrics(results::MetricSplit::Eval);
  const auto at = std::find(t.names.begin(), t.names.end(), "accuracy") - t.names.begin();
  EXPECT_EQ(scores["eval"].at("accuracy"), t.columns[static_cast<std::size_t>(at)].back())
      << "the run's last evaluation scored the same examples with the same weights";
}

TEST(ClassificationEndToEnd, TheExampleSpecTrainsItsDataFile) {
  // experiments/classification/keyword_sentiment.yaml names its data relative to the repository
  // root; the test points it there absolutely and halves the steps (3 classes of 60 lines).
  testing::TempDir dir;
  const fs::path experiments = ABLATE_SPEC_EXPERIMENTS_DIR;
  const auto r = testing::run_cli({"run", (experiments / "classification" / "keyword_sentiment.yaml").string(), "--set",
                                   "task.file=" + (experiments / "data" / "keyword_sentiment.tsv").string(), "--set",
                                   "train.steps=200", "--out", (dir.path() / "run").string(), "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const results::MetricTable eval = results::RunReader(dir.path() / "run" / "run.h5").metrics(results::MetricSplit::Eval);
  const auto at = std::find(eval.names.begin(), eval.names.end(), "accuracy");
  ASSERT_NE(at, eval.names.end());
  EXPECT_GE(eval.columns[static_cast<std::size_t>(at - eval.names.begin())].back(), 0.8) << r.out;
}

TEST(ClassificationEndToEnd, AnotherArchitectureOrABadFileIsAnErrorNotACrash) {
  {
    testing::TempDir dir;
    const auto r = run(dir, tiny_spec("encoder_decoder", data(kSentiment).string()));
    EXPECT_EQ(r.code, cli::kExitUsage) << r.out << r.err;
    EXPECT_NE(r.err.find("spec.yaml:3:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("model.arch: 'encoder_decoder' does not fit task 'classification'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("expected encoder"), std::string::npos) << r.err;
  }
  {
    testing::TempDir dir;
    const std::string bad = (dir.path() / "bad.tsv").string();
    std::ofstream(bad, std::ios::binary) << "good film\tpos\nbad film\tneg\n\xFF\xFE broken\tpos\n";
    const auto r = run(dir, tiny_spec("encoder", bad));
    EXPECT_EQ(r.code, cli::kExitUsage) << r.out << r.err;  // the task refuses its file: a spec error at `task`
    EXPECT_NE(r.err.find("task: task plugin 'classification' refuses its options"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad + ":3: invalid UTF-8 at byte 1 of the line; expected UTF-8 text"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ablate
