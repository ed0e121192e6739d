// Tests for branches (train.branch_points, train.branch_from; docs/training.md "Branches"): a run
// keeps its whole training state at the listed steps; a run that starts from one continues that
// run bit for bit while the schedule is the same, decays where its own schedule does (WSD-S), resumes
// like any run, finds its run in a folder of runs by seed, and is refused when it would not continue
// that run (another point, model or schedule).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/tiny_run.hpp"
#include "results/run_file.hpp"
#include "spec/experiment_spec.hpp"
#include "train/checkpoint.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using ablate::testing::TempDir;

// The stable run: warm-up, then wsd's peak until step 48 of 60, with branch points at 20 and 40.
constexpr const char* kStable = "{plugin: wsd, warmup: 5, decay: 0.2}";

class BranchRun : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir.path() / "spec.yaml") << testing::TinyRun{.name = "branch_copy",
                                                                .task = testing::sequence_task(2000, 64),
                                                                .steps = 60,
                                                                .schedule = kStable,
                                                                .log_every = 5,
                                                                .eval_every = 10,
                                                                .metrics = "loss, token_accuracy"}
                                                   .yaml();
    const auto r = run("stable", {"train.branch_points=[40, 20]"});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  testing::CliResult run(const std::string& out, std::vector<std::string> sets, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "run", (dir.path() / "spec.yaml").string(), "--out", (dir.path() / out).string(), "--progress", "quiet"};
    for (const std::string& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  }
  std::string from(int step) const {
    return "train.branch_from={run: " + (dir.path() / "stable").string() + ", step: " + std::to_string(step) + "}";
  }
  // Run `out`'s metrics of `split`: name -> column, plus "step".
  std::map<std::string, std::vector<double>> table(const std::string& out, results::MetricSplit split) const {
    const results::MetricTable t = results::RunReader(dir.path() / out / "run.h5").metrics(split);
    std::map<std::string, std::vector<double>> m;
    m["step"] = std::vector<double>(t.steps.begin(), t.steps.end());
    for (std::size_t i = 0; i < t.names.size(); ++i) m[t.names[i]] = t.columns[i];
    return m;
  }
  // The rows of `column` from step `after` on.
  static std::vector<double> after(const std::map<std::string, std::vector<double>>& t, const std::string& column, double step) {
    std::vector<double> out;
    for (std::size_t i = 0; i < t.at("step").size(); ++i)
      if (t.at("step")[i] > step) out.push_back(t.at(column)[i]);
    return out;
  }
  TempDir dir;
};

TEST_F(BranchRun, TheRunKeepsItsPointsOutsideItsIdentity) {
  EXPECT_EQ(branch_point_steps(dir.path() / "stable"), (std::vector<std::int64_t>{20, 40}));
  const spec::ExperimentSpec plain = spec::load_spec(dir.path() / "spec.yaml");
  const spec::ExperimentSpec kept = spec::load_spec(dir.path() / "spec.yaml", {"train.branch_points=[20, 40]"});
  EXPECT_EQ(spec::identity_yaml(plain), spec::identity_yaml(kept)) << "which states stay on disk changes no number";
  for (const char* key : {"branch_points", "branch_from"})
    EXPECT_EQ(spec::resolved_yaml(plain).find(key), std::string::npos) << key << ": absent, so older run ids stay";
  EXPECT_NE(spec::resolved_yaml(kept).find("branch_points: [20, 40]"), std::string::npos) << spec::resolved_yaml(kept);
}

TEST_F(BranchRun, WithTheRunsScheduleABranchContinuesItBitForBit) {
  const auto r = run("same", {from(20)});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("from step 20 of run " + (dir.path() / "stable").string() + " of 60"), std::string::npos) << r.out;
  const auto stable = table("stable", results::MetricSplit::Train), same = table("same", results::MetricSplit::Train);
  EXPECT_EQ(same.at("step").front(), 25.0) << "the branch records its own steps only";
  for (const char* column : {"loss", "lr", "grad_norm", "tokens", "flops"})
    EXPECT_EQ(same.at(column), after(stable, column, 20)) << column << ": weights, moments, counters and data order continue";
  EXPECT_EQ(table("same", results::MetricSplit::Eval).at("loss"), after(table("stable", results::MetricSplit::Eval), "loss", 20));
}

TEST_F(BranchRun, ABranchDecaysOnItsOwnScheduleAndResumesLikeAnyRun) {
  // WSD-S: from step 20 of the stable run, a 5-step decay (wsd's last 20% of 25 steps).
  const std::vector<std::string> sets = {from(20), "train.steps=25"};
  const auto whole = run("decay", sets);
  ASSERT_EQ(whole.code, cli::kExitOk) << whole.out << whole.err;
  const auto t = table("decay", results::MetricSplit::Train), stable = table("stable", results::MetricSplit::Train);
  ASSERT_EQ(t.at("step"), (std::vector<double>{25}));
  EXPECT_EQ(t.at("lr").back(), 0.0) << "decayed to min_lr at the branch's last step";
  EXPECT_NE(t.at("loss").back(), after(stable, "loss", 20).front()) << "the stable run did not decay at step 25";
  ASSERT_EQ(run("split", sets, {"--stop-after", "2"}).code, cli::kExitOk);
  const auto resumed = run("split", sets, {"--resume"});
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  EXPECT_EQ(table("split", results::MetricSplit::Train).at("loss"), t.at("loss")) << "its checkpoint resumes it exactly";
  EXPECT_EQ(table("split", results::MetricSplit::Eval).at("loss"), table("decay", results::MetricSplit::Eval).at("loss"));

  // A folder of runs (a sweep's): the run of this seed that kept the point (not the branches beside it).
  const std::string folder = "train.branch_from={run: " + dir.path().string() + ", step: 20}";
  const auto found = run("found", {folder, "train.steps=25"});
  ASSERT_EQ(found.code, cli::kExitOk) << found.out << found.err;
  EXPECT_NE(found.out.find("from step 20 of run " + (dir.path() / "stable").string()), std::string::npos) << found.out;
  EXPECT_EQ(table("found", results::MetricSplit::Train).at("loss"), t.at("loss"));
  const auto seed = run("seed2", {folder, "train.steps=25", "train.seed=2"});
  EXPECT_EQ(seed.code, cli::kExitUsage);
  EXPECT_NE(seed.err.find("runs in " + dir.path().string() + " has seed 2, this spec but for train.steps"), std::string::npos)
      << seed.err;
}

TEST_F(BranchRun, ABranchThatWouldNotContinueTheRunIsRefused) {
  const auto missing = run("missing", {from(30)});
  EXPECT_EQ(missing.code, cli::kExitUsage);
  EXPECT_NE(missing.err.find("step-0000000030.bin does not exist (it keeps steps 20, 40)"), std::string::npos) << missing.err;
  const auto schedule = run("cosine", {from(20), "train.schedule={plugin: cosine, warmup: 5}"});
  EXPECT_EQ(schedule.code, cli::kExitUsage);
  EXPECT_NE(schedule.err.find("at step 6 train.schedule gives learning rate"), std::string::npos) << schedule.err;
  const auto early = run("early", {from(40), "train.steps=44"});  // wsd's decay would start at 35.2
  EXPECT_EQ(early.code, cli::kExitUsage);
  EXPECT_NE(early.err.find("at step 36 train.schedule gives"), std::string::npos) << early.err;
  const auto model = run("wider", {from(20), "model.d_model=16"});
  EXPECT_EQ(model.code, cli::kExitUsage);
  EXPECT_NE(model.err.find("differs from this one in more than train.steps and train.schedule (line"), std::string::npos)
      << model.err;
  EXPECT_NE(model.err.find("d_model: 32', now '  d_model: 16'"), std::string::npos) << model.err;
  for (const char* out : {"missing", "cosine", "early", "wider"})
    EXPECT_FALSE(fs::exists(dir.path() / out / "run.h5")) << out << ": refused before anything is written";
}

}  // namespace
}  // namespace ablate::train
