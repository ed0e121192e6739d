// Tests for the scaling analysis (framework/analysis/scaling): the power-law fit recovers a known
// law, keeps the direction it is asked for, and refuses too few sizes; series, ranking statements
// and the extrapolation from a comparison of arms across sizes. (scaling_fit_test.sh checks the fit
// against scipy's curve_fit on real runs.)
#include "analysis/scaling.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"

namespace ablate::analysis {
namespace {

TEST(PowerLawFit, RecoversAKnownLawExactly) {
  const std::vector<double> n = {1e4, 3e4, 1e5, 3e5, 1e6};
  std::vector<double> y;
  for (double x : n) y.push_back(1.7 + 40.0 * std::pow(x, -0.35));
  const PowerLaw f = fit_power_law(n, y);
  ASSERT_TRUE(f.defined());
  EXPECT_NEAR(f.alpha, 0.35, 1e-6);
  EXPECT_NEAR(f.e, 1.7, 1e-6);
  EXPECT_NEAR(f.a, 40.0, 1e-3);
  EXPECT_LT(f.rss, 1e-16);
}

TEST(PowerLawFit, KeepsTheDirectionAndNeedsThreeSizes) {
  const std::vector<double> n = {1e3, 1e4, 1e5};
  EXPECT_FALSE(fit_power_law({1e3, 1e4}, {2.0, 1.0}).defined());
  EXPECT_FALSE(fit_power_law(n, {1.0, 2.0, 3.0}).defined()) << "a loss that rises with N is no falling law";
  const PowerLaw rising = fit_power_law(n, {0.5, 0.7, 0.8}, -1);  // an accuracy
  ASSERT_TRUE(rising.defined());
  EXPECT_LT(rising.a, 0.0);
  EXPECT_NEAR(rising.at(1e4), 0.7, 1e-9);  // three sizes: the law passes through them
}

// Two series (relu, swiglu) at three sizes, two seeds each; swiglu overtakes relu at the largest.
std::vector<RunSummary> ladder() {
  std::vector<RunSummary> runs;
  const std::vector<std::pair<std::string, std::int64_t>> sizes = {{"32", 10000}, {"64", 40000}, {"128", 160000}};
  for (const std::string ffn : {"relu", "swiglu"})
    for (const auto& [d, n] : sizes)
      for (int seed : {1, 2}) {
        RunSummary r;
        r.run_id = ffn + d + std::to_string(seed);
        r.path = "/runs/" + r.run_id;
        r.status = "completed";
        r.config = {{"model.ffn", ffn}, {"model.d_model", d}, {"train.seed", std::to_string(seed)}};
        const double base = 1.0 + 30.0 * std::pow(static_cast<double>(n), -0.4);
        const double shift = ffn == "swiglu" ? (d == "128" ? -0.05 : 0.05) : 0.0;
        r.final_metrics["loss"] = base + shift + (seed == 1 ? 0.01 : -0.01);
        r.non_embedding_parameters = r.parameters = n;
        runs.push_back(r);
      }
  return runs;
}

TEST(ScalingAnalysis, SeriesRankingAndExtrapolation) {
  CompareOptions o;
  o.metric = "loss";
  o.scale_keys = {"model.d_model"};
  const Comparison c = compare(ladder(), o);
  ASSERT_EQ(c.scaling.series.size(), 2u);
  EXPECT_EQ(c.scaling.series[0].label, "relu");
  ASSERT_EQ(c.scaling.series[0].points.size(), 3u);
  EXPECT_EQ(c.scaling.series[0].points[0].n, 10000.0);  // by N
  EXPECT_TRUE(c.scaling.series[0].fit.defined());
  EXPECT_NEAR(c.scaling.series[0].next_n, 640000.0, 1e-6);  // one size up: x4 again
  EXPECT_TRUE(std::isfinite(c.scaling.series[0].alpha_interval.low));
  ASSERT_EQ(c.scaling.statements.size(), 2u);
  EXPECT_NE(c.scaling.statements[0].find("the ranking changes within the measured sizes (best first; 32: relu > swiglu; "
                                         "64: relu > swiglu; 128: swiglu > relu)"),
            std::string::npos)
      << c.scaling.statements[0];
  EXPECT_NE(c.scaling.statements[1].find("extrapolated one size up"), std::string::npos);
  for (const std::string& note : c.notes)  // sizes differ by design: no compute note across them
    EXPECT_EQ(note.find("differ in non-embedding parameters"), std::string::npos) << note;

  o.scale_keys = {"model.layers"};
  EXPECT_THROW(compare(ladder(), o), UsageError);
}

}  // namespace
}  // namespace ablate::analysis
