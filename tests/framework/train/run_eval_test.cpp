// Tests for `ablate eval` (framework/train/run_eval, framework/cli/cmd_eval), in-process: a tiny
// copy run is trained, then its checkpoint is scored again. The scores of the whole eval split
// equal the run's own last evaluation; the predictions file holds one line per example and its
// exact copies match exact_match; a directory of runs evaluates each; run.h5 records each evaluation;
// nothing is written over; the average of the last kept checkpoints (--average-last) is scored as such;
// bad arguments are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "results/run_file.hpp"
#include "train/checkpoint.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

// 64 eval examples, all of them in each evaluation (eval.batches 2 x batch 32); the last
// evaluation is at the last step, so it saw the checkpoint's weights.
std::string tiny_spec() {
  return testing::TinyRun{.name = "eval_copy",
                          .task = testing::sequence_task(2000, 64),
                          .steps = 60,
                          .clip_grad_norm = false,
                          .seed = 3,
                          .log_every = 20,
                          .eval_every = 30,
                          .metrics = "loss, perplexity, token_accuracy, exact_match"}
      .yaml();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string f; std::getline(s, f, '\t');) out.push_back(f);
  return out;
}

class RunEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ablate::testing::fresh_dir("run_eval_test", false);
    std::ofstream(dir_ / "spec.yaml") << tiny_spec();
    const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "run").string(), "--progress", "quiet"});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path run_dir() { return dir_ / "run"; }
  static inline fs::path dir_;
};

TEST_F(RunEvalTest, WholeEvalSplitScoresEqualTheRunsLastEvaluation) {
  const fs::path out = dir_ / "eval_split";
  const auto r = run_cli({"eval", run_dir().string(), "--split", "eval", "--out", out.string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const results::MetricTable t = results::RunReader(run_dir() / "run.h5").metrics(results::MetricSplit::Eval);
  ASSERT_EQ(t.steps.back(), 60);
  const std::string scores = slurp(out / "scores.json");
  EXPECT_NE(scores.find("\"checkpoint_step\": 60"), std::string::npos) << scores;
  EXPECT_NE(scores.find("\"examples\": 64"), std::string::npos) << scores;
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    const std::string& name = t.names[i];
    if (name.rfind("test_", 0) == 0) continue;
    const double recorded = t.columns[i].back();
    // The metric's line in scores.json: "    \"loss\": 1.234,"
    const std::size_t at = scores.find("\"" + name + "\": ");
    ASSERT_NE(at, std::string::npos) << name << " missing in\n" << scores;
    const double scored = std::stod(scores.substr(at + name.size() + 4));
    EXPECT_DOUBLE_EQ(scored, recorded) << name;
  }
}

TEST_F(RunEvalTest, PredictionsHoldEveryExampleAndTheirCopiesMatchExactMatch) {
  const fs::path out = dir_ / "predictions";
  const auto r = run_cli({"eval", run_dir().string(), "--split", "eval", "--out", out.string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto rows = lines(out / "predictions.tsv");
  ASSERT_EQ(rows.size(), 65u);  // header + 64 examples
  EXPECT_EQ(rows[0], "index\tsource\treference\tprediction");
  int exact = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto f = fields(rows[i]);
    ASSERT_GE(f.size(), 3u) << rows[i];
    EXPECT_EQ(f[0], std::to_string(i - 1));
    EXPECT_FALSE(f[1].empty()) << rows[i];  // the copy task has no text: token ids
    exact += f.size() == 4 && f[2] == f[3];
  }
  const std::string scores = slurp(out / "scores.json");
  const std::size_t at = scores.find("\"exact_match\": ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_DOUBLE_EQ(std::stod(scores.substr(at + 15)), exact / 64.0);
}

TEST_F(RunEvalTest, JsonlAndLimitWriteOneObjectPerScoredExample) {
  const fs::path out = dir_ / "jsonl";
  const auto r =
      run_cli({"eval", run_dir().string(), "--split", "eval", "--limit", "10", "--format", "jsonl", "--out", out.string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto rows = lines(out / "predictions.jsonl");
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows[0].rfind("{\"index\": 0, \"source\": \"", 0), 0u) << rows[0];
  EXPECT_NE(slurp(out / "scores.json").find("\"examples\": 10"), std::string::npos);
}

// On a copy of the run, whose run.h5 records the evaluations made here.
TEST_F(RunEvalTest, EvaluationsAreRecordedInTheRunFileAndNeverWrittenOver) {
  const fs::path run = dir_ / "recorded";
  fs::copy(run_dir(), run, fs::copy_options::recursive);
  const std::size_t had = results::RunReader(run / "run.h5").evaluations().size();  // the other tests' (--out)
  const auto first = run_cli({"eval", run.string(), "--split", "eval", "--limit", "5"});
  ASSERT_EQ(first.code, cli::kExitOk) << first.out << first.err;
  EXPECT_NE(first.out.find("recorded: " + (run / "run.h5").string() + " /evals 'eval'"), std::string::npos) << first.out;
  const fs::path out = run / "evals" / "eval";
  const std::string before = slurp(out / "scores.json");
  {
    const std::vector<results::EvalRecord> e = results::RunReader(run / "run.h5").evaluations();
    ASSERT_EQ(e.size(), had + 1);
    EXPECT_EQ(e.back().name, "eval");
    EXPECT_EQ(e.back().checkpoint_step, 60);
    EXPECT_EQ(e.back().scores, before);  // the record is scores.json
  }
  auto r = run_cli({"inspect", run.string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("    eval at step 60: "), std::string::npos) << r.out;
  r = run_cli({"eval", run.string(), "--split", "eval"});  // refused by the record, the files untouched
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("records an evaluation named 'eval' already"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out / "scores.json"), before);
  // Another directory of the same name: refused by the record, before anything is written.
  r = run_cli({"eval", run.string(), "--split", "eval", "--out", (dir_ / "elsewhere" / "eval").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("records an evaluation named 'eval' already (at step 60)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));
  const fs::path long_name = dir_ / std::string(results::kEvalNameBytes + 1, 'n');
  r = run_cli({"eval", run.string(), "--split", "eval", "--out", long_name.string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("must be 1 to 128 bytes to be recorded"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(long_name));
  // A run being written now (here: resumed by this process) is not evaluated.
  {
    results::RunWriter writer = results::RunWriter::resume(run / "run.h5", 60);
    r = run_cli({"eval", run.string(), "--split", "eval", "--out", (dir_ / "live").string()});
    EXPECT_EQ(r.code, cli::kExitUsage);
    EXPECT_NE(r.err.find("is being written now"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "live"));
  }
  EXPECT_EQ(results::RunReader(run / "run.h5").evaluations().size(), had + 1);
  fs::remove_all(run);
}

TEST_F(RunEvalTest, WithoutASplitTheTestSplitWhenTheTaskHasOneElseTheEvalSplit) {
  const fs::path out = dir_ / "no_split";  // the copy task has no test split
  auto r = run_cli({"eval", run_dir().string(), "--limit", "5", "--out", out.string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("note: the run's task has no test split: scoring its eval split"), std::string::npos) << r.out;
  EXPECT_NE(slurp(out / "scores.json").find("\"split\": \"eval\""), std::string::npos) << slurp(out / "scores.json");
  fs::remove_all(out);

  const fs::path lm = dir_ / "lm";  // a language model over a file: its last 5% is a test split
  std::ofstream(dir_ / "lm.yaml") << testing::TinyRun{.name = "lm_test_split",
                                                      .task =
                                                          "{plugin: language_model, file: /usr/share/common-licenses/GPL-3, "
                                                          "tokens: char, context: 16, test_fraction: 0.05}",
                                                      .arch = "decoder",
                                                      .steps = 4,
                                                      .eval_every = 4,
                                                      .metrics = "loss",
                                                      .generate = "{max_tokens: 0}"}
                                         .yaml();
  r = run_cli({"run", (dir_ / "lm.yaml").string(), "--out", lm.string(), "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  r = run_cli({"eval", lm.string(), "--limit", "4"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_EQ(r.out.find("note: the run's task has no test split"), std::string::npos) << r.out;
  EXPECT_NE(slurp(lm / "evals" / "test" / "scores.json").find("\"split\": \"test\""), std::string::npos);
  fs::remove_all(lm);
}

TEST_F(RunEvalTest, ADirectoryOfRunsEvaluatesEachCompletedRunOnce) {
  const fs::path sweep = dir_ / "sweep";
  for (const char* arm : {"a", "b"}) {
    fs::create_directories(sweep / arm);
    fs::copy(run_dir(), sweep / arm / "run", fs::copy_options::recursive);
  }
  auto r = run_cli({"eval", sweep.string(), "--split", "eval", "--limit", "8"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("2 run(s) evaluated"), std::string::npos) << r.out;
  for (const char* arm : {"a", "b"}) {
    const fs::path scores = sweep / arm / "run" / "evals" / "eval" / "scores.json";
    ASSERT_TRUE(fs::exists(scores)) << scores;
    EXPECT_NE(slurp(scores).find("\"examples\": 8"), std::string::npos);
  }
  r = run_cli({"eval", sweep.string()});  // again (the eval split: the task has no test split): nothing is written over
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("0 run(s) evaluated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("evaluated already"), std::string::npos) << r.out;
  r = run_cli({"eval", sweep.string(), "--out", (dir_ / "one").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("--out names one run's output"), std::string::npos) << r.err;
  fs::remove_all(sweep);
}

// --data: a new file in the task's format, read with the run's vocabularies. The eval split of the
// d2l tutorial written back as a TSV file scores exactly as the split does.
TEST_F(RunEvalTest, DataFileInTheTasksFormatScoresAsTheSameExamplesDo) {
  const fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  const fs::path run = dir_ / "d2l";
  auto r = run_cli({"run", (root / "experiments" / "tutorials" / "d2l_translation.yaml").string(), "--set", "train.steps=12",
                    "--set", "eval.every=12", "--set", "log.attention.every=0", "--set",
                    "task.file=" + (root / "experiments" / "data" / "tutorial_eng_cmn.tsv").string(), "--out", run.string(),
                    "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  r = run_cli({"eval", run.string(), "--split", "eval"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  {
    std::ofstream data(dir_ / "again.tsv");
    const auto rows = lines(run / "evals" / "eval" / "predictions.tsv");
    for (std::size_t i = 1; i < rows.size(); ++i) data << fields(rows[i])[1] << "\t" << fields(rows[i])[2] << "\n";
  }
  r = run_cli({"eval", run.string(), "--data", (dir_ / "again.tsv").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  const std::string split = slurp(run / "evals" / "eval" / "scores.json"), file = slurp(run / "evals" / "again" / "scores.json");
  EXPECT_NE(file.find("\"unknown_tokens\": 0"), std::string::npos) << file;
  // A split's tokens were encoded when the task read its file: not counted, and not said to be 0.
  EXPECT_NE(split.find("\"unknown_tokens\": null"), std::string::npos) << split;
  for (const char* metric : {"\"loss\": ", "\"bleu\": ", "\"exact_match\": "}) {
    const std::size_t a = split.find(metric), b = file.find(metric);
    ASSERT_NE(a, std::string::npos) << metric;
    ASSERT_NE(b, std::string::npos) << metric;
    EXPECT_EQ(split.substr(a, split.find('\n', a) - a), file.substr(b, file.find('\n', b) - b)) << metric;
  }
  std::ofstream(dir_ / "unknown.tsv") << "zzzqqq am a student .\t我是学生。\n";
  r = run_cli({"eval", run.string(), "--data", (dir_ / "unknown.tsv").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("1 token(s) of"), std::string::npos) << r.out;
  {  // a pair past the run's length rule: scored on one example of two, and said so
    std::string long_source;
    for (int w = 0; w < 200; ++w) long_source += "student ";
    std::ofstream(dir_ / "long.tsv") << "i am a student .\t我是学生。\n" << long_source << "\t我是学生。\n";
  }
  r = run_cli({"eval", run.string(), "--data", (dir_ / "long.tsv").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("note: 1 of the 2 examples of " + (dir_ / "long.tsv").string() +
                       " are left out by the run's task: 1 with a side longer than max_len"),
            std::string::npos)
      << r.out;
  const std::string long_scores = slurp(run / "evals" / "long" / "scores.json");
  for (const char* field : {"\"file_examples\": 2", "\"dropped_examples\": 1", "\"examples\": 1", "\"truncated_examples\": 0"})
    EXPECT_NE(long_scores.find(field), std::string::npos) << field << "\n" << long_scores;
  EXPECT_NE(split.find("\"dropped_examples\": null"), std::string::npos) << split;
  std::ofstream(dir_ / "bad.tsv") << "no tab on this line\n";
  r = run_cli({"eval", run.string(), "--data", (dir_ / "bad.tsv").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("bad.tsv:1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run / "evals" / "bad"));
  r = run_cli({"eval", run_dir().string(), "--data", (dir_ / "again.tsv").string()});  // the copy task reads no files
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("reads no data files"), std::string::npos) << r.err;
  r = run_cli({"eval", run.string(), "--data", (dir_ / "missing.tsv").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("no such file"), std::string::npos) << r.err;
}

TEST_F(RunEvalTest, TheAverageOfTheLastKeptCheckpointsIsScoredAndRecordedAsSuch) {
  const fs::path dir = dir_ / "averaging";
  fs::create_directories(dir);
  std::ofstream(dir / "spec.yaml") << tiny_spec();
  const auto r = run_cli({"run", (dir / "spec.yaml").string(), "--out", (dir / "run").string(), "--progress", "quiet", "--set",
                          "train.keep_checkpoints=2", "--set", "eval.every=20"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto same = run_cli(
      {"run", (dir / "spec.yaml").string(), "--out", (dir / "same").string(), "--progress", "quiet", "--set", "eval.every=20"});
  ASSERT_EQ(same.code, cli::kExitOk) << same.out << same.err;
  EXPECT_EQ(results::RunReader(dir / "run" / "run.h5").info().run_id, results::RunReader(dir / "same" / "run.h5").info().run_id)
      << "which checkpoints stay on disk is not part of the run's identity";
  EXPECT_TRUE(kept_checkpoints(dir / "same").empty());
  const std::vector<fs::path> kept = kept_checkpoints(dir / "run");
  ASSERT_EQ(kept.size(), 2u) << "evaluations at 20, 40, 60: the last two kept";
  EXPECT_EQ(kept[0].filename(), "step-0000000040.bin");
  const auto avg = run_cli({"eval", (dir / "run").string(), "--split", "eval", "--average-last", "2"});
  ASSERT_EQ(avg.code, cli::kExitOk) << avg.out << avg.err;
  EXPECT_NE(avg.out.find("the average of the checkpoints of steps 40, 60"), std::string::npos) << avg.out;
  const std::string scores = slurp(dir / "run" / "evals" / "eval-avg2" / "scores.json");
  EXPECT_NE(scores.find("\"averaged_checkpoints\": [40, 60]"), std::string::npos) << scores;
  EXPECT_NE(scores.find("\"checkpoint_step\": 60"), std::string::npos) << scores;
  const auto one =
      run_cli({"eval", (dir / "run").string(), "--split", "eval", "--average-last", "1", "--out", (dir / "last_only").string()});
  ASSERT_EQ(one.code, cli::kExitOk) << one.out << one.err;
  const auto plain = run_cli({"eval", (dir / "run").string(), "--split", "eval", "--out", (dir / "plain").string()});
  ASSERT_EQ(plain.code, cli::kExitOk);
  const auto metrics = [&](const fs::path& f) { return slurp(f).substr(slurp(f).find("\"metrics\"")); };
  EXPECT_EQ(metrics(dir / "last_only" / "scores.json"), metrics(dir / "plain" / "scores.json"))
      << "the average of one checkpoint is that checkpoint";
  EXPECT_NE(metrics(dir / "run" / "evals" / "eval-avg2" / "scores.json"), metrics(dir / "plain" / "scores.json"));
  const auto too_many = run_cli({"eval", (dir / "run").string(), "--average-last", "3"});
  EXPECT_EQ(too_many.code, cli::kExitUsage);
  EXPECT_NE(too_many.err.find("--average-last 3: " + (dir / "run").string() + " keeps 2 checkpoint(s)"), std::string::npos)
      << too_many.err;
  const auto none = run_cli({"eval", run_dir().string(), "--average-last", "2"});
  EXPECT_EQ(none.code, cli::kExitUsage);
  EXPECT_NE(none.err.find("train with train.keep_checkpoints >= 2"), std::string::npos) << none.err;
}

TEST_F(RunEvalTest, BadArgumentsAreRefusedWithTheReason) {
  const fs::path empty = dir_ / "not_a_run";
  fs::create_directories(empty);
  auto r = run_cli({"eval", empty.string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("no checkpoint in"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(empty));
  r = run_cli({"eval", run_dir().string(), "--set", "model.d_model=64"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("only execution keys"), std::string::npos) << r.err;
  r = run_cli({"eval", run_dir().string(), "--split", "train"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("expected eval or test"), std::string::npos) << r.err;
  r = run_cli({"eval", run_dir().string(), "--split", "test"});  // the copy task has no test split
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("no examples in its test split"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run_dir() / "evals"));
}

}  // namespace
}  // namespace ablate::train
