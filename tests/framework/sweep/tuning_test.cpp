// Tests for per-arm tuning (framework/sweep/tuning.hpp, the spec's sweep.tune): the choice of each
// arm's setting against hand-computed means (a setting without a value on every seed is never
// chosen, ties keep the first, the metric's direction, the edge caveat), the two phases' plans
// (every arm x setting x tuning seed in DIR/tuning; every arm at its choice x sweep.seeds), and the
// spec errors (seeds disjoint, tuned keys no arm axes, no test metric). The phases run end to end,
// SIGKILLed in each, in sweep_tune_test.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "ablate/error.hpp"
#include "framework/spec/spec_test_util.hpp"
#include "framework/test_dirs.hpp"
#include "spec/experiment_spec.hpp"
#include "sweep/tuning.hpp"

namespace ablate::sweep {
namespace {
namespace fs = std::filesystem;
using spec::testing::contains;
using spec::testing::usage_error;
using spec::testing::write_file;

spec::TuneSpec lr_grid(std::vector<std::string> values) {
  spec::TuneSpec t;
  t.grid = {{"train.optimizer.lr", std::move(values)}};
  return t;
}

std::vector<Settings> settings_of(const spec::TuneSpec& t) {
  std::vector<Settings> out;
  for (const std::string& v : t.grid.front().second) out.push_back({{t.grid.front().first, v}});
  return out;
}

TEST(TuningChoice, EachArmTakesItsBestMeanAmongSettingsWithAValueOnEverySeed) {
  const spec::TuneSpec t = lr_grid({"1e-4", "3e-4", "1e-3", "3e-3"});
  // [arm][setting][seed] final losses; arm 1's 3e-3 has the best single value but diverged on seed 2.
  const std::vector<std::vector<std::vector<double>>> values = {
      {{2.0, 2.2}, {1.8, 1.6}, {1.9, 1.9}, {2.5, 2.7}},   // means 2.1, 1.7, 1.9, 2.6 -> 3e-4
      {{2.4, 2.4}, {2.2, 2.0}, {1.7, 1.9}, {1.0, NAN}}};  // means 2.4, 2.1, 1.8, -  -> 1e-3
  const auto c = choose_settings(values, /*higher_is_better=*/false, t, settings_of(t), {"relu", "swiglu"});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].setting, 1u);
  EXPECT_EQ(c[1].setting, 2u) << "a setting that diverged on a seed is never chosen";
  EXPECT_NEAR(c[0].means[0], 2.1, 1e-12);
  EXPECT_NEAR(c[1].means[2], 1.8, 1e-12);
  EXPECT_TRUE(std::isnan(c[1].means[3]));
  EXPECT_TRUE(c[0].at_edge.empty() && c[1].at_edge.empty()) << "interior choices";
}

TEST(TuningChoice, HigherIsBetterTiesKeepTheFirstAndEdgesOfThreeOrMoreValuesAreCaveats) {
  const spec::TuneSpec three = lr_grid({"1e-3", "3e-3", "1e-2"});
  const auto hi = choose_settings({{{0.5}, {0.9}, {0.9}}}, /*higher_is_better=*/true, three, settings_of(three), {"a"});
  EXPECT_EQ(hi[0].setting, 1u) << "a tie keeps the first in grid order";
  EXPECT_TRUE(hi[0].at_edge.empty());
  const auto edge = choose_settings({{{0.5}, {0.6}, {0.9}}}, true, three, settings_of(three), {"a"});
  EXPECT_EQ(edge[0].setting, 2u);
  EXPECT_EQ(edge[0].at_edge, std::vector<std::string>{"train.optimizer.lr"});
  const spec::TuneSpec two = lr_grid({"1e-3", "3e-3"});
  EXPECT_TRUE(choose_settings({{{0.5}, {0.9}}}, true, two, settings_of(two), {"a"})[0].at_edge.empty())
      << "two values have no interior: no caveat";
}

TEST(TuningChoice, AnArmWithNoUsableSettingIsAUsageErrorNamingIt) {
  const spec::TuneSpec t = lr_grid({"1e-3", "3e-3"});
  const std::string e = usage_error([&] {
    choose_settings({{{1.0}, {2.0}}, {{NAN}, {NAN}}}, false, t, settings_of(t), {"block=pre_norm", "block=post_norm"});
  });
  EXPECT_TRUE(contains(e, "no setting of block=post_norm has a value on every tuning seed")) << e;
  EXPECT_FALSE(contains(e, "block=pre_norm")) << e;
}

TEST(TuningHalving, EachRungKeepsTheBestCeilNOverEtaInGridOrder) {
  // Five settings alive; summed final losses (lower is better): 4 < 2 < 0 < 3 < 1, setting 1 diverged.
  const std::vector<std::size_t> alive = {0, 1, 2, 3, 4};
  const std::vector<double> sums = {3.0, NAN, 2.5, 3.2, 2.0};
  EXPECT_EQ(promote(alive, sums, 2, false), (std::vector<std::size_t>{0, 2, 4})) << "ceil(5/2) = 3: the best three";
  EXPECT_EQ(promote(alive, sums, 3, false), (std::vector<std::size_t>{2, 4})) << "ceil(5/3) = 2";
  EXPECT_EQ(promote(alive, sums, 5, false), (std::vector<std::size_t>{4}));
  EXPECT_EQ(promote(alive, sums, 2, true), (std::vector<std::size_t>{0, 2, 3})) << "higher is better: 3.2, 3.0, 2.5";
  // The next rung sees the kept settings only; a tie keeps the earlier setting.
  EXPECT_EQ(promote({0, 2, 4}, {1.0, 1.0, 1.5}, 3, false), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(promote({1, 3}, {NAN, NAN}, 2, false).empty()) << "no finite value: nothing is kept";
}

class TuningPlanTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ablate::testing::fresh_dir("tuning_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  validation::LoadedSpec load(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    const fs::path file = write_file(dir_ / "spec.yaml", yaml);
    std::ostringstream warnings;
    return validation::load_validated_spec(file.string(), {overrides, {}}, warnings);
  }
  fs::path file() const { return dir_ / "spec.yaml"; }
  fs::path dir_;
};

constexpr const char* kTuned =
    "name: s\ntask: copy\ntrain: {steps: 10}\nsweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [3, 4, 5]\n"
    "  tune:\n    grid: {train.optimizer.lr: [1.0e-3, 3.0e-3, 1.0e-2]}\n    seeds: [1, 2]\n";

TEST_F(TuningPlanTest, TuningRunsEveryArmAtEverySettingOnTheTuningSeedsAndConfirmationEachArmAtItsChoice) {
  const validation::LoadedSpec base = load(kTuned);
  const TuningPlan t = plan_tuning(file(), {}, {}, base, dir_ / "out");
  EXPECT_EQ(t.plan.dir, dir_ / "out" / "tuning");
  ASSERT_EQ(t.arms.size(), 2u);
  ASSERT_EQ(t.settings.size(), 3u);
  ASSERT_EQ(t.plan.runs.size(), 12u);
  const double kLr[] = {1e-3, 3e-3, 1e-2};
  EXPECT_EQ(t.plan.runs[0].point.name, "block=pre_norm,lr=1.0e-3,seed=1");
  EXPECT_EQ(t.plan.runs[11].point.name, "block=post_norm,lr=1.0e-2,seed=2");
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t s = 0; s < 2; ++s) {
        const SweepRun& run = t.plan.runs[t.run_of[a][k][s]];
        EXPECT_EQ(run.spec.train.seed, s + 1);
        EXPECT_EQ(run.spec.model.block.name, a == 0 ? "pre_norm" : "post_norm");
        EXPECT_DOUBLE_EQ(run.spec.train.optimizer.lr, kLr[k]);
      }
  std::vector<ArmChoice> choices(2);
  choices[0].setting = 2;
  choices[1].setting = 0;
  const SweepPlan c = plan_confirmation(file(), {}, {}, base, dir_ / "out", t, choices);
  EXPECT_EQ(c.dir, dir_ / "out");
  ASSERT_EQ(c.runs.size(), 6u);
  for (const SweepRun& run : c.runs) {
    EXPECT_GE(run.spec.train.seed, 3) << "confirmation seeds only";
    EXPECT_DOUBLE_EQ(run.spec.train.optimizer.lr, run.spec.model.block.name == "pre_norm" ? 1e-2 : 1e-3) << run.point.name;
  }
  EXPECT_EQ(tuned_keys(base.spec.sweep.tune), std::vector<std::string>{"train.optimizer.lr"});
}

TEST_F(TuningPlanTest, ASetOfOneSweepKeyPlansWithTheRestOfTheSpecsSweep) {
  // --set sweep.tune.grid=... alone: each point is loaded without the sweep, so without that --set.
  const std::vector<std::string> set = {"sweep.tune.grid={train.optimizer.lr: [1.0e-3, 1.0e-2]}"};
  const TuningPlan t = plan_tuning(file(), set, {}, load(kTuned, set), dir_ / "out");
  EXPECT_EQ(t.settings.size(), 2u);
  EXPECT_EQ(t.plan.runs.size(), 8u);
}

TEST_F(TuningPlanTest, AMetricOrSummaryThatCannotChooseIsRefusedBeforeAnythingRuns) {
  const std::string test =
      usage_error([&] { plan_tuning(file(), {}, {}, load(std::string(kTuned) + "    metric: test_loss\n"), dir_ / "out"); });
  EXPECT_TRUE(contains(test, "sweep.tune.metric: 'test_loss' cannot select a setting")) << test;
  const std::string summary =
      usage_error([&] { plan_tuning(file(), {}, {}, load(std::string(kTuned) + "    summary: median\n"), dir_ / "out"); });
  EXPECT_TRUE(contains(summary, "sweep.tune.summary:")) << summary;
  const std::string eta = usage_error(
      [&] { plan_tuning(file(), {}, {}, load(std::string(kTuned) + "    eta: 1\n    first_rung: 5\n"), dir_ / "out"); });
  EXPECT_TRUE(contains(eta, "sweep.tune.eta: 1 keeps every setting")) << eta;
  const std::string rung = usage_error([&] {  // train.steps 10 with the default eval.every 100: no evaluation below it
    plan_tuning(file(), {}, {}, load(std::string(kTuned) + "    eta: 2\n    first_rung: 4\n"), dir_ / "out");
  });
  EXPECT_TRUE(contains(rung, "sweep.tune.first_rung: 4 for run")) << rung;
  EXPECT_TRUE(contains(rung, "expected an evaluation step below train.steps")) << rung;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST(TuningSpec, SeedsMustBeDisjointAndTunedKeysNoArmAxes) {
  const auto refused = [](const std::string& sweep) {
    return usage_error([&] { spec::parse_spec("name: s\ntask: copy\ntrain: {steps: 10}\nsweep:\n" + sweep); });
  };
  const std::string overlap =
      refused("  seeds: [1, 2]\n  tune:\n    grid: {train.optimizer.lr: [1.0e-3, 3.0e-3]}\n    seeds: [2, 7]\n");
  EXPECT_TRUE(contains(overlap, "sweep.tune.seeds: seed 2 is also in sweep.seeds")) << overlap;
  const std::string axis = refused(
      "  grid: {train.optimizer.lr: [1.0e-3]}\n  seeds: [1]\n  tune:\n    grid: {train.optimizer.lr: [3.0e-3]}\n    seeds: [2]\n");
  EXPECT_TRUE(contains(axis, "sweep.tune.grid.train.optimizer.lr: also an axis of the sweep")) << axis;
  const std::string seed = refused("  seeds: [1]\n  tune:\n    grid: {train.seed: [4, 5]}\n    seeds: [2]\n");
  EXPECT_TRUE(contains(seed, "seeds are not tuned")) << seed;
  const std::string no_confirmation = refused("  tune:\n    grid: {train.optimizer.lr: [1.0e-3]}\n    seeds: [2]\n");
  EXPECT_TRUE(contains(no_confirmation, "sweep.seeds: is empty, but sweep.tune needs the confirmation seeds")) << no_confirmation;
  const std::string no_tuning_seeds = refused("  seeds: [1]\n  tune:\n    grid: {train.optimizer.lr: [1.0e-3]}\n");
  EXPECT_TRUE(contains(no_tuning_seeds, "sweep.tune.seeds: is empty; expected the tuning seeds")) << no_tuning_seeds;
  const std::string own_seed = refused(
      "  seeds: [1]\n  runs: [{model.ffn: gelu, train.seed: 9}]\n  tune:\n    grid: {train.optimizer.lr: [1.0e-3]}\n"
      "    seeds: [2]\n");
  EXPECT_TRUE(contains(own_seed, "sweep.runs[0].train.seed: a run with its own seed cannot be tuned")) << own_seed;
  const std::string in_run = refused(
      "  seeds: [1]\n  runs: [{train.optimizer.lr: 0.01}]\n  tune:\n    grid: {train.optimizer.lr: [1.0e-3]}\n"
      "    seeds: [2]\n");
  EXPECT_TRUE(contains(in_run, "also set by a run of sweep.runs")) << in_run;
}

}  // namespace
}  // namespace ablate::sweep
