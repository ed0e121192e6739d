// Tests for training (framework/train) through `ablate run`, in-process: a tiny encoder-decoder
// learns the copy task; reference and onednn agree step by step; every block x positional
// encoding x ffn combination trains on both backends; a resumed run continues the uninterrupted
// loss curve bit for bit; NaN stops a run as diverged; early stopping and the loss threshold
// stop it; results are never overwritten; errors name the spec key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "analysis/attention_heads.hpp"
#include "results/run_file.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("runner_test");
    std::ofstream(dir_ / "spec.yaml") << testing::TinyRun{}.yaml();  // learns exact copies in 400 steps
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `ablate run spec.yaml --out <dir>/<out> --progress quiet` with extra arguments.
  testing::CliResult run(const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / out).string(), "--progress", "quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  // The train or eval metrics of run `out` (read from its run.h5): name -> column, plus "step".
  std::map<std::string, std::vector<double>> table(const std::string& out, results::MetricSplit split) {
    const results::MetricTable t = results::RunReader(dir_ / out / "run.h5").metrics(split);
    std::map<std::string, std::vector<double>> m;
    m["step"] = std::vector<double>(t.steps.begin(), t.steps.end());
    for (std::size_t i = 0; i < t.names.size(); ++i) m[t.names[i]] = t.columns[i];
    return m;
  }
  // The run's recorded state and identity as one line:
  // "status: completed; step: 40; reason: ...; backend: onednn on cpu, deterministic; plugins: ...".
  std::string record(const std::string& out) {
    const results::RunReader r(dir_ / out / "run.h5");
    const results::RunState s = r.state();
    std::string text = std::string("status: ") + results::to_string(s.status) + "; step: " + std::to_string(s.step) +
                       "; reason: " + s.reason + "; backend: " + r.info().backend + " on " + r.info().backend_device +
                       (r.info().backend_deterministic ? ", deterministic" : ", not deterministic") + "; plugins:";
    for (const std::string& p : r.info().plugins) text += " " + p;
    return text;
  }

  fs::path dir_;
};

TEST_F(RunnerTest, TinyEncoderDecoderLearnsToCopyExactly) {
  const auto r = run("copy", {"--set", "train.early_stopping={metric: exact_match, target: 1.0}"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto eval = table("copy", results::MetricSplit::Eval);
  ASSERT_FALSE(eval.at("exact_match").empty());
  EXPECT_EQ(eval.at("exact_match").back(), 1.0) << r.out;
  EXPECT_LT(eval.at("exact_match").front(), 1.0) << "the first evaluation should not be perfect yet";
  EXPECT_NE(record("copy").find("status: completed"), std::string::npos);
  EXPECT_NE(record("copy").find("backend: onednn on cpu, deterministic"), std::string::npos) << record("copy");
  EXPECT_NE(r.out.find("early stopping: exact_match 1 reached target 1"), std::string::npos) << r.out;
}

TEST_F(RunnerTest, ReferenceAndOnednnGiveTheSameLosses) {
  const std::vector<std::string> common = {"--set", "train.steps=6",     "--set", "log.every=1",
                                           "--set", "model.dropout=0.1", "--set", "model.attention_dropout=0.1",
                                           "--set", "eval.every=6"};
  std::vector<std::string> ref = common, dnnl = common;
  ref.insert(ref.end(), {"--set", "backend=reference"});
  ASSERT_EQ(run("ref", ref).code, cli::kExitOk);
  ASSERT_EQ(run("dnnl", dnnl).code, cli::kExitOk);
  const auto a = table("ref", results::MetricSplit::Train).at("loss"), b = table("dnnl", results::MetricSplit::Train).at("loss");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4 * std::abs(a[i])) << "step " << i + 1;
  EXPECT_LT(a.back(), a.front()) << "the loss should fall over the first steps";
}

TEST_F(RunnerTest, Bf16MixedPrecisionFollowsTheF32LossCurve) {
  const std::vector<std::string> common = {"--set", "train.steps=60", "--set", "eval.every=60"};
  std::vector<std::string> bf16 = common;
  bf16.insert(bf16.end(), {"--set", "precision=bf16"});
  ASSERT_EQ(run("f32", common).code, cli::kExitOk);
  const auto r = run("bf16", bf16);
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const auto a = table("f32", results::MetricSplit::Train).at("loss"), b = table("bf16", results::MetricSplit::Train).at("loss");
  ASSERT_EQ(a.size(), b.size());
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 0.03 * a[i]) << "row " << i;  // bf16 rounding, not a different computation
    differs |= a[i] != b[i];
  }
  EXPECT_TRUE(differs) << "bf16 compute should not be bit-identical to f32";
  EXPECT_LT(b.back(), 0.5 * b.front());
}

TEST_F(RunnerTest, EveryComponentCombinationTrainsOnEveryBackend) {
  for (const std::string backend : {"reference", "onednn"})
    for (const std::string block : {"post_norm", "pre_norm"})
      for (const std::string pe : {"sinusoidal", "learned"})
        for (const std::string ffn : {"relu", "gelu"}) {
          const std::string out = backend + "_" + block + "_" + pe + "_" + ffn;
          const auto r = run(out, {"--set", "backend=" + backend, "--set", "model.block=" + block, "--set",
                                   "model.positional_encoding=" + pe, "--set", "model.ffn=" + ffn, "--set", "train.steps=4",
                                   "--set", "log.every=1", "--set", "eval.every=4", "--set", "model.dropout=0.1"});
          ASSERT_EQ(r.code, cli::kExitOk) << out << "\n" << r.out << r.err;
          const auto loss = table(out, results::MetricSplit::Train).at("loss");
          ASSERT_EQ(loss.size(), 4u) << out;
          for (double l : loss) EXPECT_TRUE(std::isfinite(l) && l > 0.0) << out;
          EXPECT_NE(record(out).find(block), std::string::npos) << "the plugins are recorded";
        }
}

TEST_F(RunnerTest, ResumedRunContinuesTheLossCurveBitForBit) {
  // log.every 4 and a stop at 22: the resumed run must carry the half-filled log interval over.
  const std::vector<std::string> spec = {"--set", "train.steps=40",
                                         "--set", "log.every=4",
                                         "--set", "eval.every=15",
                                         "--set", "model.dropout=0.1",
                                         "--set", "model.attention_dropout=0.1"};
  ASSERT_EQ(run("whole", spec).code, cli::kExitOk);
  std::vector<std::string> first = spec;
  first.insert(first.end(), {"--stop-after", "22"});  // stops between two evaluations (checkpoint at 15 and 22)
  const auto stopped = run("split", first);
  ASSERT_EQ(stopped.code, cli::kExitOk) << stopped.out << stopped.err;
  EXPECT_NE(record("split").find("status: interrupted"), std::string::npos);
  EXPECT_EQ(table("split", results::MetricSplit::Train).at("loss").size(), 5u);  // rows at 4, 8, ..., 20
  std::vector<std::string> second = spec;
  second.push_back("--resume");
  const auto resumed = run("split", second);
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("resuming at step 22"), std::string::npos) << resumed.out;

  const auto whole = table("whole", results::MetricSplit::Train), split = table("split", results::MetricSplit::Train);
  ASSERT_EQ(whole.at("step"), split.at("step"));
  for (const char* column : {"loss", "token_accuracy", "lr", "grad_norm", "tokens", "flops"})
    EXPECT_EQ(whole.at(column), split.at(column)) << column;  // exact equality: bit for bit
  const auto& tokens = whole.at("tokens");                    // cumulative: a resumed run carries both counts over
  const auto& flops = whole.at("flops");
  for (std::size_t r = 1; r < flops.size(); ++r) {
    EXPECT_GT(tokens[r], tokens[r - 1]);
    EXPECT_GT(flops[r], flops[r - 1]);
  }
  EXPECT_EQ(table("whole", results::MetricSplit::Eval).at("loss"), table("split", results::MetricSplit::Eval).at("loss"));

  // Resuming a completed run does nothing; resuming with another spec is refused.
  std::vector<std::string> again = spec;
  again.push_back("--resume");
  EXPECT_EQ(run("split", again).code, cli::kExitOk);
  ASSERT_EQ(run("other", first).code, cli::kExitOk);
  std::vector<std::string> changed = spec;
  changed.insert(changed.end(), {"--set", "train.optimizer.lr=0.01", "--resume"});
  const auto refused = run("other", changed);
  EXPECT_EQ(refused.code, cli::kExitUsage);
  EXPECT_NE(refused.err.find("the spec differs"), std::string::npos) << refused.err;
}

TEST_F(RunnerTest, ABudgetSetsTheStepsAndTheScheduleHorizonAndAResumeEndsAtTheSameStep) {
  // Fixed-length copies: 32 examples x (4 tokens + eos) = 160 target tokens a step, so 1,600 is 10 steps.
  const std::vector<std::string> spec = {"--set", "task.min_len=4",
                                         "--set", "train.steps=400",
                                         "--set", "train.budget={tokens: 1600}",
                                         "--set", "train.schedule={plugin: cosine, warmup: 2}",
                                         "--set", "log.every=1",
                                         "--set", "eval.every=100"};
  const auto whole = run("tokens", spec);
  ASSERT_EQ(whole.code, cli::kExitOk) << whole.out << whole.err;
  const auto t = table("tokens", results::MetricSplit::Train);
  EXPECT_EQ(t.at("step").back(), 10.0);
  EXPECT_EQ(t.at("tokens").back(), 1600.0);
  EXPECT_EQ(t.at("lr").back(), 0.0) << "cosine's horizon is the budget's 10 steps, not train.steps";
  EXPECT_NE(record("tokens").find("reason: spent train.budget.tokens 1600: 10 steps of 160"), std::string::npos)
      << record("tokens");
  std::vector<std::string> first = spec;
  first.insert(first.end(), {"--stop-after", "4"});
  ASSERT_EQ(run("split", first).code, cli::kExitOk);
  std::vector<std::string> second = spec;
  second.push_back("--resume");
  ASSERT_EQ(run("split", second).code, cli::kExitOk);
  const auto resumed = table("split", results::MetricSplit::Train);
  EXPECT_EQ(resumed.at("step"), t.at("step"));
  EXPECT_EQ(resumed.at("lr"), t.at("lr"));
  EXPECT_EQ(resumed.at("loss"), t.at("loss"));

  // A FLOPs budget: the steps whose recorded FLOPs first cover it.
  std::vector<std::string> flops = spec;
  flops[5] = "train.budget={flops: 5.0e7}";
  ASSERT_EQ(run("flops", flops).code, cli::kExitOk);
  const auto f = table("flops", results::MetricSplit::Train).at("flops");
  ASSERT_GE(f.size(), 2u);
  EXPECT_GE(f.back(), 5.0e7);
  EXPECT_LT(f[f.size() - 2], 5.0e7);

  // More than train.steps allows: refused before anything is written; two amounts: a spec error.
  std::vector<std::string> over = spec;
  over[3] = "train.steps=5";
  const auto refused = run("over", over);
  EXPECT_EQ(refused.code, cli::kExitUsage);
  EXPECT_NE(refused.err.find("train.budget.tokens 1600: 10 steps of 160 (step 1's cost), more than train.steps 5"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir_ / "over"));
  std::vector<std::string> both = spec;
  both[5] = "train.budget={tokens: 1600, flops: 5.0e7}";
  const auto two = run("both", both);
  EXPECT_EQ(two.code, cli::kExitUsage);
  EXPECT_NE(two.err.find("train.budget: both tokens and flops; expected exactly one"), std::string::npos) << two.err;
}

// A checkpoint, a run file and a spec that are not one run: refused before anything is touched,
// whichever of them differs; a shape change is refused like any other spec change.
TEST_F(RunnerTest, ResumeRefusesAnotherRunsFilesAndTouchesNothing) {
  const std::vector<std::string> spec = {"--set", "train.steps=12", "--set", "log.every=4", "--set", "eval.every=4"};
  std::vector<std::string> seed1 = spec, seed7 = spec;
  seed1.insert(seed1.end(), {"--stop-after", "8"});
  seed7.insert(seed7.end(), {"--set", "train.seed=7", "--stop-after", "4"});
  ASSERT_EQ(run("one", seed1).code, cli::kExitOk);
  ASSERT_EQ(run("seven", seed7).code, cli::kExitOk);
  fs::copy_file(dir_ / "one" / "checkpoint.bin", dir_ / "seven" / "checkpoint.bin", fs::copy_options::overwrite_existing);
  auto bytes = [&](const std::string& f) {
    std::ifstream in(dir_ / "seven" / f, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string run_file = bytes("run.h5"), checkpoint = bytes("checkpoint.bin");
  std::vector<std::string> resume1 = spec;
  resume1.push_back("--resume");
  const auto mixed = run("seven", resume1);  // the checkpoint is seed 1's, the run file seed 7's
  EXPECT_EQ(mixed.code, cli::kExitUsage) << mixed.out << mixed.err;
  EXPECT_NE(mixed.err.find("its run file belongs to run "), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("(seed 7), this spec is run "), std::string::npos) << mixed.err;
  std::vector<std::string> resume7 = spec;
  resume7.insert(resume7.end(), {"--set", "train.seed=7", "--resume"});
  const auto other = run("seven", resume7);  // the run file matches, the checkpoint does not
  EXPECT_EQ(other.code, cli::kExitUsage) << other.out << other.err;
  EXPECT_NE(other.err.find("the spec differs from the one the run started with"), std::string::npos) << other.err;
  EXPECT_EQ(bytes("run.h5"), run_file);
  EXPECT_EQ(bytes("checkpoint.bin"), checkpoint);

  std::vector<std::string> wider = spec;
  wider.insert(wider.end(), {"--set", "model.d_model=64", "--resume"});
  const auto shape = run("one", wider);
  EXPECT_EQ(shape.code, cli::kExitUsage) << shape.out << shape.err;
  EXPECT_NE(shape.err.find("the spec differs from the one the run started with"), std::string::npos) << shape.err;
  EXPECT_NE(shape.err.find("d_model"), std::string::npos) << shape.err;
}

TEST_F(RunnerTest, RunStoppedBeforeItsFirstCheckpointResumesFromStepZero) {
  const std::vector<std::string> spec = {"--set", "train.steps=12", "--set", "log.every=4", "--set", "eval.every=12"};
  ASSERT_EQ(run("whole", spec).code, cli::kExitOk);
  std::vector<std::string> first = spec;
  first.insert(first.end(), {"--stop-after", "6"});
  ASSERT_EQ(run("early", first).code, cli::kExitOk);
  fs::remove(dir_ / "early" / "checkpoint.bin");  // as if killed before its first checkpoint
  std::vector<std::string> other = spec;
  other.insert(other.end(), {"--set", "train.seed=2", "--resume"});
  const auto refused = run("early", other);
  EXPECT_EQ(refused.code, cli::kExitUsage);
  EXPECT_NE(refused.err.find("its run file belongs to run "), std::string::npos) << refused.err;
  std::vector<std::string> again = spec;
  again.push_back("--resume");
  const auto resumed = run("early", again);
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("resuming at step 0 "), std::string::npos) << resumed.out;
  const auto whole = table("whole", results::MetricSplit::Train), early = table("early", results::MetricSplit::Train);
  EXPECT_EQ(whole.at("step"), early.at("step")) << "the rows of the first attempt were dropped, none repeated";
  EXPECT_EQ(whole.at("loss"), early.at("loss"));
}

TEST_F(RunnerTest, ThreadCountIsNotPartOfTheRunIdentity) {
  const std::vector<std::string> spec = {"--set", "train.steps=8", "--set", "eval.every=4", "--set", "backend.threads=2"};
  std::vector<std::string> first = spec;
  first.insert(first.end(), {"--stop-after", "4"});
  ASSERT_EQ(run("threads", first).code, cli::kExitOk);
  const auto resumed =
      run("threads", {"--set", "train.steps=8", "--set", "eval.every=4", "--set", "backend.threads=1", "--resume"});
  EXPECT_EQ(resumed.code, cli::kExitOk) << resumed.err;
  EXPECT_NE(resumed.out.find("resuming at step 4 "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("1 threads"), std::string::npos) << resumed.out;
}

TEST_F(RunnerTest, ExistingResultsAreNeverOverwritten) {
  ASSERT_EQ(run("done", {"--set", "train.steps=2", "--set", "eval.every=2"}).code, cli::kExitOk);
  const std::string before = record("done");
  const auto again = run("done", {"--set", "train.steps=2", "--set", "eval.every=2"});
  EXPECT_EQ(again.code, cli::kExitUsage);
  EXPECT_NE(again.err.find("results already exist"), std::string::npos) << again.err;
  EXPECT_EQ(record("done"), before);
  const auto nothing = run("empty", {"--resume"});
  EXPECT_EQ(nothing.code, cli::kExitUsage);
  EXPECT_NE(nothing.err.find("nothing to resume"), std::string::npos) << nothing.err;
}

TEST_F(RunnerTest, NonFiniteLossStopsTheRunAsDiverged) {
  const auto r = run("nan", {"--set", "train.optimizer.lr=1e30", "--set", "train.clip_grad_norm=0", "--set", "train.steps=50"});
  ASSERT_EQ(r.code, cli::kExitDiverged) << r.out << r.err;
  const std::string j = record("nan");
  EXPECT_NE(j.find("status: diverged"), std::string::npos) << j;
  EXPECT_NE(j.find(" at step "), std::string::npos) << j;
  EXPECT_NE(r.out.find("diverged at step"), std::string::npos) << r.out;
}

TEST_F(RunnerTest, LossThresholdAndPatienceStopEarly) {
  const auto r = run("threshold", {"--set", "train.loss_threshold=1.5"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  const auto steps = table("threshold", results::MetricSplit::Train).at("step");
  EXPECT_LT(steps.back(), 400.0);
  EXPECT_LT(table("threshold", results::MetricSplit::Train).at("loss").back(), 1.5);
  EXPECT_NE(r.out.find("below loss_threshold"), std::string::npos) << r.out;

  // lr 0: nothing improves, so patience 2 stops after the third evaluation.
  const auto p = run("patience", {"--set", "train.optimizer.lr=0", "--set", "eval.every=10", "--set",
                                  "train.early_stopping={metric: loss, mode: min, patience: 2}"});
  // lr must be > 0 in the spec: the spec error names the key.
  EXPECT_EQ(p.code, cli::kExitUsage);
  EXPECT_NE(p.err.find("train.optimizer.lr"), std::string::npos) << p.err;
  const auto q = run("patience", {"--set", "train.optimizer.lr=1e-12", "--set", "eval.every=10", "--set",
                                  "train.early_stopping={metric: exact_match, patience: 2}"});
  ASSERT_EQ(q.code, cli::kExitOk) << q.err;
  EXPECT_EQ(table("patience", results::MetricSplit::Eval).at("step").size(), 3u) << q.out;
  EXPECT_NE(q.out.find("did not improve in 2 evaluations"), std::string::npos) << q.out;
}

TEST_F(RunnerTest, SpecProblemsFoundAtRunTimeNameTheKey) {
  const auto lm = run("lm", {"--set", "task={plugin: language_model, vocab_size: 8}"});
  EXPECT_EQ(lm.code, cli::kExitUsage);
  EXPECT_NE(lm.err.find("model.arch: 'encoder_decoder' does not fit task 'language_model'"), std::string::npos) << lm.err;
  EXPECT_NE(lm.err.find("spec.yaml:3:"), std::string::npos) << "the position of model.arch: " << lm.err;
  const auto es = run("es", {"--set", "train.early_stopping={metric: bleu}"});
  EXPECT_EQ(es.code, cli::kExitUsage);
  EXPECT_NE(es.err.find("train.early_stopping.metric: 'bleu' is not evaluated for this task and eval.metrics; expected one of "
                        "loss, token_accuracy, exact_match, decoded_token_accuracy"),
            std::string::npos)
      << es.err;
  const auto typo = run("typo", {"--set", "model.blok=pre_norm"});
  EXPECT_EQ(typo.code, cli::kExitUsage);
  EXPECT_NE(typo.err.find("did you mean 'model.block'"), std::string::npos) << typo.err;
  EXPECT_FALSE(fs::exists(dir_ / "lm")) << "nothing is written for a spec error";
}

TEST_F(RunnerTest, LanguageModelTrainsAndSkipsDecodingMetrics) {
  const auto r = run("lm", {"--set", "task={plugin: language_model, vocab_size: 12, min_len: 4, max_len: 8}", "--set",
                            "model.arch=decoder", "--set", "train.steps=30", "--set", "eval.every=30", "--set",
                            "eval.metrics=[loss, perplexity, token_accuracy, exact_match]"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("eval metric skipped: exact_match"), std::string::npos) << r.out;
  const auto eval = table("lm", results::MetricSplit::Eval);
  EXPECT_EQ(eval.count("exact_match"), 0u);
  EXPECT_NEAR(eval.at("perplexity").back(), std::exp(eval.at("loss").back()), 1e-9);
  const auto loss = table("lm", results::MetricSplit::Train).at("loss");
  EXPECT_LT(loss.back(), loss.front());
}

}  // namespace
}  // namespace ablate::train

namespace ablate::train {
namespace {

TEST_F(RunnerTest, InspectSummarisesTheRunFile) {
  ASSERT_EQ(run("ins", {"--set", "train.steps=20", "--set", "eval.every=20", "--set", "log.attention.every=10"}).code,
            cli::kExitOk);
  const auto r = run_cli({"inspect", (dir_ / "ins").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  for (const char* expected :
       {"status completed at step 20 (reached train.steps)", "train: 2 rows", "eval: 1 rows",
        "attention: 2 logs (steps 10 .. 20), probe of 4 examples", "/attention/encoder/self/layer_0 [2, 4, 2, ",
        "/attention/decoder/self/layer_0 [2, 4, 2, ", "mask causal+key_padding",
        "/attention/decode/cross/layer_0..0 [2, 4, 2, 5, ", "block/pre_norm 2.2.0", "attention/mha 1.3.1"})
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  const auto follow = run_cli({"inspect", (dir_ / "ins" / "run.h5").string(), "--follow", "--interval", "0.05"});
  EXPECT_EQ(follow.code, cli::kExitOk);
  EXPECT_NE(follow.out.find("run completed at step 20"), std::string::npos) << follow.out;
  EXPECT_EQ(run_cli({"inspect", (dir_ / "nothing").string()}).code, cli::kExitUsage);
}

}  // namespace
}  // namespace ablate::train

namespace ablate::train {
namespace {

// The probe pass (attention logs, per-layer statistics) runs on its own graph: logging at every
// step must leave the training losses bit-identical to logging never.
TEST_F(RunnerTest, AttentionLoggingDoesNotChangeTraining) {
  const std::vector<std::string> common = {"--set", "train.steps=12",
                                           "--set", "log.every=1",
                                           "--set", "eval.every=12",
                                           "--set", "model.dropout=0.2",
                                           "--set", "model.attention_dropout=0.2"};
  std::vector<std::string> logged = common, quiet = common;
  logged.insert(logged.end(), {"--set", "log.attention.every=1"});
  quiet.insert(quiet.end(), {"--set", "log.attention.every=0"});
  ASSERT_EQ(run("logged", logged).code, cli::kExitOk);
  ASSERT_EQ(run("quiet", quiet).code, cli::kExitOk);
  EXPECT_EQ(table("logged", results::MetricSplit::Train).at("loss"), table("quiet", results::MetricSplit::Train).at("loss"));
  const results::RunReader r(dir_ / "logged" / "run.h5");
  EXPECT_EQ(r.attention_steps().size(), 12u);
  EXPECT_TRUE(results::RunReader(dir_ / "quiet" / "run.h5").attention_steps().empty());
  // Every logged attention row over valid keys sums to 1 (checked on the first log's encoder self-attention).
  const results::FloatTensor a = r.attention(r.attention_slot("encoder", "self", 0), 0);  // [E, H, Q, K]
  const auto& lengths = r.layout().probe.src.lengths;
  const std::int64_t E = a.shape[0], H = a.shape[1], Q = a.shape[2], K = a.shape[3];
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t q = 0; q < lengths[static_cast<std::size_t>(e)]; ++q) {
        double sum = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
          const float v = a.values[static_cast<std::size_t>(((e * H + h) * Q + q) * K + k)];
          if (k >= lengths[static_cast<std::size_t>(e)]) {
            EXPECT_EQ(v, 0.0f) << "padded key";
          }
          sum += v;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
}

// Per-layer statistics come with each log row, and log.stats = false turns their probe pass off
// (the train rows stay, training is unchanged).
TEST_F(RunnerTest, LayerStatsFollowLogEveryAndCanBeTurnedOff) {
  const std::vector<std::string> common = {"--set", "train.steps=12", "--set", "log.every=4", "--set", "eval.every=12"};
  std::vector<std::string> off = common;
  off.insert(off.end(), {"--set", "log.stats=false"});
  ASSERT_EQ(run("on", common).code, cli::kExitOk);
  ASSERT_EQ(run("off", off).code, cli::kExitOk);
  EXPECT_EQ(results::RunReader(dir_ / "on" / "run.h5").stats_steps(), (std::vector<std::int64_t>{4, 8, 12}));
  EXPECT_TRUE(results::RunReader(dir_ / "off" / "run.h5").stats_steps().empty());
  const auto on_rows = table("on", results::MetricSplit::Train), off_rows = table("off", results::MetricSplit::Train);
  EXPECT_EQ(off_rows.at("step"), (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(on_rows.at("loss"), off_rows.at("loss"));
}

// log.attention.probe = repeated: the probe is random content tokens whose first half repeats as the
// second, the same in every run whatever its seed, and the induction score is defined on it.
TEST_F(RunnerTest, RepeatedProbeIsTheSameInEveryRunAndScoresInduction) {
  const std::vector<std::string> sets = {"--set", "train.steps=10",         "--set", "eval.every=10",
                                         "--set", "log.attention.every=10", "--set", "log.attention.probe=repeated"};
  std::vector<std::string> seed2 = sets;
  seed2.insert(seed2.end(), {"--set", "train.seed=2"});
  ASSERT_EQ(run("s1", sets).code, cli::kExitOk);
  ASSERT_EQ(run("s2", seed2).code, cli::kExitOk);
  const results::RunReader r1(dir_ / "s1" / "run.h5"), r2(dir_ / "s2" / "run.h5");
  const results::ProbeTokens& src = r1.layout().probe.src;
  ASSERT_EQ(src.length, 4);  // the copy task's longest sequence: [r1 r2 r1 r2]
  ASSERT_EQ(r1.layout().probe.examples, 4);
  for (std::size_t e = 0; e < 4; ++e) {
    EXPECT_EQ(src.lengths[e], 4);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(src.ids[e * 4 + i], src.ids[e * 4 + i + 2]) << "example " << e;
      EXPECT_GE(src.ids[e * 4 + i], 3);  // content tokens only
      EXPECT_LT(src.ids[e * 4 + i], 8);
    }
  }
  EXPECT_EQ(src.ids, r2.layout().probe.src.ids);  // another seed, the same probe
  EXPECT_EQ(r1.layout().probe.tgt.ids, r2.layout().probe.tgt.ids);
  const analysis::RunHeadScores scores = analysis::run_head_scores(r1);
  ASSERT_FALSE(scores.heads.empty());
  EXPECT_EQ(scores.heads[0], "enc.self L0 H0");
  EXPECT_TRUE(std::isfinite(scores.mean[0].induction)) << "the repeated probe defines the induction score";

  const std::vector<std::string> bad = {"--set", "log.attention.probe=random"};
  const auto refused = run("bad", bad);
  EXPECT_EQ(refused.code, cli::kExitUsage);
  EXPECT_NE(refused.err.find("log.attention.probe"), std::string::npos) << refused.err;
}

// The value in column `column` (0 = op) of the profile row that starts with `op` and has pass `pass`.
std::string profile_cell(const std::string& out, const std::string& op, const std::string& pass, int column) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(op + " ")) continue;
    std::istringstream cells(line.substr(34));  // the op name column is 34 characters wide
    std::vector<std::string> c{op};
    for (std::string cell; cells >> cell;) c.push_back(cell);
    if (c.size() > 1 && c[1] == pass && static_cast<int>(c.size()) > column) return c[static_cast<std::size_t>(column)];
  }
  return "";
}

TEST_F(RunnerTest, ProfileCountsEveryOpOfTheStepsWithoutChangingThem) {
  const std::vector<std::string> common = {"--set", "train.steps=6", "--set", "log.every=1",
                                           "--set", "eval.every=6",  "--set", "model.dropout=0.1"};
  std::vector<std::string> profiled = common;
  profiled.push_back("--profile");
  const auto r = run("profiled", profiled);
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  ASSERT_EQ(run("plain", common).code, cli::kExitOk);
  EXPECT_EQ(table("profiled", results::MetricSplit::Train).at("loss"), table("plain", results::MetricSplit::Train).at("loss"));
  EXPECT_NE(r.out.find("profile of 5 training steps after the first"), std::string::npos) << r.out;
  // 1+1 layers: encoder qkv, out, ffn out (3); decoder qkv, out, cross q, kv, out, ffn out (6); the
  // tied output projection (1); each ffn in with its dropout (2, ops::linear_dropout).
  EXPECT_EQ(profile_cell(r.out, "linear", "fwd", 4), "10.0") << r.out;
  EXPECT_EQ(profile_cell(r.out, "linear", "bwd", 4), "10.0") << r.out;
  EXPECT_EQ(profile_cell(r.out, "linear + dropout", "fwd", 4), "2.0") << r.out;
  EXPECT_EQ(profile_cell(r.out, "linear + dropout", "bwd", 4), "2.0") << r.out;
  EXPECT_EQ(profile_cell(r.out, "attention", "fwd", 4), "3.0") << r.out;  // encoder self, decoder self and cross
  EXPECT_EQ(profile_cell(r.out, "cross_entropy", "fwd+bwd", 4), "1.0") << r.out;
  for (const char* op :
       {"linear", "linear + dropout", "attention"})  // (a work() overload that no longer matches its op's signature gives none)
    for (const char* pass : {"fwd", "bwd"})
      EXPECT_FALSE(profile_cell(r.out, op, pass, 5).empty()) << "a GFLOP/s figure: " << op << " " << pass;
  EXPECT_FALSE(profile_cell(r.out, "step", "all", 2).empty()) << r.out;
  EXPECT_EQ(run("plain2", common).out.find("profile of"), std::string::npos) << "no profile unless asked";
}

// eval.lengths: every metric again at each length (METRIC_at_LENGTH columns); a length past the
// learned positions' max_len is recorded as NaN, with a note, and the run completes.
TEST_F(RunnerTest, EvalLengthsRecordMetricsPerLengthAndNaNPastTheLearnedLimit) {
  const auto r = run("len", {"--set", "train.steps=60", "--set", "eval.every=30", "--set",
                             "model.positional_encoding={plugin: learned, max_len: 8}", "--set", "eval.lengths=[4, 7, 8]"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("note: eval.lengths 8: positional_encoding/learned represents 8 positions and examples of length 8 "
                       "need 9; their metrics are recorded as NaN"),
            std::string::npos)
      << r.out;
  const auto eval = table("len", results::MetricSplit::Eval);
  for (const char* metric : {"loss", "token_accuracy", "exact_match"}) {
    ASSERT_EQ(eval.count(std::string(metric) + "_at_4"), 1u) << metric;
    ASSERT_EQ(eval.at(std::string(metric) + "_at_8").size(), 2u) << metric;
    for (std::size_t row = 0; row < 2; ++row) {
      EXPECT_TRUE(std::isfinite(eval.at(std::string(metric) + "_at_4")[row])) << metric;
      EXPECT_TRUE(std::isfinite(eval.at(std::string(metric) + "_at_7")[row])) << metric;
      EXPECT_TRUE(std::isnan(eval.at(std::string(metric) + "_at_8")[row])) << metric;
    }
  }
  // the model learns: the loss at the trained length 4 falls, and it is not the length-7 loss
  EXPECT_LT(eval.at("loss_at_4")[1], eval.at("loss_at_4")[0]);
  EXPECT_NE(eval.at("loss_at_4")[1], eval.at("loss_at_7")[1]);
  const auto bad = run("text", {"--set", "task={plugin: random_pairs}", "--set", "eval.lengths=[8]"});
  EXPECT_EQ(bad.code, cli::kExitUsage) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("eval.lengths: task plugin 'random_pairs' makes no eval examples of length 8"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace ablate::train
