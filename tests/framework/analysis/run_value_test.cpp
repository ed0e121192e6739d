// Tests for framework/analysis/run_value: the forms --summary accepts (and the errors for the rest),
// and each summary's value on a hand-made eval curve, censoring included.
#include "analysis/run_value.hpp"

#include <gtest/gtest.h>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"

namespace ablate::analysis {
namespace {

RunSummary curve_run() {
  RunSummary r;
  r.eval_curves["exact_match"] = {{100, 0.2}, {200, 0.6}, {300, NAN}, {400, 0.95}, {500, 0.9}};
  r.final_metrics["exact_match"] = 0.9;
  r.elapsed_s = {{100, 10.0}, {200, 21.0}, {300, 30.0}, {400, 42.0}, {500, 50.0}};
  return r;
}

TEST(RunValue, ParsesEveryFormAndRejectsTheRest) {
  for (const char* text : {"final", "best", "last:3", "auc", "steps_to:0.9", "time_to:0.5"})
    EXPECT_EQ(parse_run_value(text).text(), text);
  for (const char* bad : {"", "mean", "last", "last:0", "last:x", "steps_to", "steps_to:", "steps_to:high", "final:1"}) {
    try {
      parse_run_value(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(e.hint().find("steps_to:TARGET"), std::string::npos) << e.hint();
    }
  }
}

TEST(RunValue, EachSummaryOnACurve) {
  const RunSummary r = curve_run();
  const auto value = [&](const char* text, bool higher = true) {
    return run_value(r, "exact_match", higher, parse_run_value(text));
  };
  EXPECT_DOUBLE_EQ(value("final").value, 0.9);
  EXPECT_DOUBLE_EQ(value("best").value, 0.95);
  EXPECT_DOUBLE_EQ(value("best", false).value, 0.2);  // lower is better: the smallest
  EXPECT_DOUBLE_EQ(value("last:2").value, (0.95 + 0.9) / 2);
  EXPECT_DOUBLE_EQ(value("last:9").value, (0.2 + 0.6 + 0.95 + 0.9) / 4);  // NaN skipped, fewer than k
  // Trapezoids over the finite points (100, 0.2) (200, 0.6) (400, 0.95) (500, 0.9), divided by 400 steps.
  EXPECT_DOUBLE_EQ(value("auc").value, (0.5 * 0.8 * 100 + 0.5 * 1.55 * 200 + 0.5 * 1.85 * 100) / 400);
  const RunValue reached = value("steps_to:0.9");
  EXPECT_DOUBLE_EQ(reached.value, 400);
  EXPECT_FALSE(reached.censored);
  EXPECT_DOUBLE_EQ(value("time_to:0.9").value, 42.0);
  const RunValue never = value("steps_to:0.99");
  EXPECT_DOUBLE_EQ(never.value, 500);  // censored at the last evaluation
  EXPECT_TRUE(never.censored);
  EXPECT_DOUBLE_EQ(value("time_to:0.99").value, 50.0);
  EXPECT_TRUE(std::isnan(run_value(r, "loss", false, parse_run_value("best")).value));  // no such curve
  EXPECT_EQ(parse_run_value("steps_to:0.9").describe("exact_match", true), "steps to exact_match ≥ 0.9");
  EXPECT_FALSE(parse_run_value("time_to:0.9").higher_is_better(true));
  EXPECT_TRUE(parse_run_value("auc").higher_is_better(true));
}

}  // namespace
}  // namespace ablate::analysis
