// Tests for framework/analysis/factorial: main effects with CIs and Type III F tests of 2x2x2
// designs with one seed and with three seeds as blocks, and of a 3x2 design, against statsmodels
// (known_answers/), plus the cases where terms are left out or nothing can be estimated.
#include "analysis/factorial.hpp"

#include <gtest/gtest.h>

#include <map>

#include "known_answers/known_answers.hpp"

namespace ablate::analysis {
namespace {

using testing::known_answers;
using testing::number;

FactorialDesign design_of(const YAML::Node& c) {
  FactorialDesign d;
  for (const auto& f : c["factors"]) d.factors.push_back(f.as<std::string>());
  for (const auto& ls : c["levels"]) d.levels.push_back(ls.as<std::vector<std::string>>());
  std::map<std::string, std::size_t> blocks;
  for (const auto& row : c["rows"]) {
    FactorialObservation obs;
    for (std::size_t f = 0; f < d.factors.size(); ++f) {
      const auto& ls = d.levels[f];
      obs.levels.push_back(
          static_cast<std::size_t>(std::find(ls.begin(), ls.end(), row[d.factors[f]].as<std::string>()) - ls.begin()));
    }
    const std::string seed = row["seed"].as<std::string>();
    if (c["blocked"].as<bool>()) {
      if (!blocks.count(seed)) {
        blocks[seed] = d.blocks.size();
        d.blocks.push_back(seed);
      }
      obs.block = blocks[seed];
    }
    obs.y = row["y"].as<double>();
    d.observations.push_back(obs);
  }
  return d;
}

void expect_close(double have, double want, const std::string& what) {
  EXPECT_NEAR(have, want, 1e-8 * std::max(1.0, std::fabs(want))) << what;
}

TEST(Factorial, MatchesStatsmodelsOnEveryKnownDesign) {
  for (const auto& c : known_answers()["factorial"]) {
    const std::string name = c["name"].as<std::string>();
    SCOPED_TRACE(name);
    const FactorialAnalysis a = factorial_analysis(design_of(c));
    ASSERT_TRUE(a.defined) << a.note;
    EXPECT_TRUE(a.interactions);
    EXPECT_EQ(a.blocked, c["blocked"].as<bool>());
    expect_close(a.df_resid, number(c["df_resid"]), "df_resid");
    expect_close(a.residual_sd, number(c["residual_sd"]), "residual sd");
    ASSERT_EQ(a.main_effects.size(), c["main_effects"].size());
    for (std::size_t i = 0; i < a.main_effects.size(); ++i) {
      const auto& want = c["main_effects"][i];
      const MainEffect& e = a.main_effects[i];
      const std::string what = e.factor + "=" + e.level;
      EXPECT_EQ(e.factor, want["factor"].as<std::string>());
      EXPECT_EQ(e.level, want["level"].as<std::string>());
      for (const auto& [have, key] : std::vector<std::pair<double, const char*>>{
               {e.estimate, "estimate"}, {e.se, "se"}, {e.t, "t"}, {e.p, "p"}, {e.ci_low, "ci_low"}, {e.ci_high, "ci_high"}})
        expect_close(have, number(want[key]), what + " " + key);
    }
    ASSERT_EQ(a.terms.size(), c["terms"].size());
    for (const auto& want : c["terms"]) {
      const std::string term = want["name"].as<std::string>();
      const auto it = std::find_if(a.terms.begin(), a.terms.end(), [&](const AnovaTerm& t) { return t.name == term; });
      ASSERT_NE(it, a.terms.end()) << term;
      expect_close(it->df, number(want["df"]), term + " df");
      expect_close(it->sum_sq, number(want["sum_sq"]), term + " sum_sq");
      expect_close(it->f, number(want["F"]), term + " F");
      expect_close(it->p, number(want["p"]), term + " p");
      if (want["estimate"]) {
        expect_close(it->estimate, number(want["estimate"]), term + " difference of differences");
        expect_close(it->ci_low, number(want["ci_low"]), term + " ci_low");
        expect_close(it->ci_high, number(want["ci_high"]), term + " ci_high");
      } else {
        EXPECT_TRUE(std::isnan(it->estimate)) << term;
      }
    }
  }
}

// A 2x2 design with one run per cell: interactions would use the last degree of freedom, so they
// are left out and said so; with three runs (a missing cell) nothing is estimable.
TEST(Factorial, LeavesOutWhatTheRunsCannotSupport) {
  FactorialDesign d;
  d.factors = {"a", "b"};
  d.levels = {{"a0", "a1"}, {"b0", "b1"}};
  d.observations = {{{0, 0}, 0, 1.0}, {{1, 0}, 0, 3.0}, {{0, 1}, 0, 2.0}, {{1, 1}, 0, 4.5}};
  const FactorialAnalysis a = factorial_analysis(d);
  ASSERT_TRUE(a.defined);
  EXPECT_FALSE(a.interactions);
  EXPECT_NE(a.note.find("interactions are left out"), std::string::npos) << a.note;
  EXPECT_DOUBLE_EQ(a.df_resid, 1.0);
  // Main effects are the differences of marginal means: a: (3 + 4.5)/2 - (1 + 2)/2 = 2.25.
  EXPECT_NEAR(a.main_effects[0].estimate, 2.25, 1e-12);
  EXPECT_NEAR(a.main_effects[1].estimate, 1.25, 1e-12);
  ASSERT_EQ(a.terms.size(), 2u);

  d.observations.pop_back();
  const FactorialAnalysis none = factorial_analysis(d);
  EXPECT_FALSE(none.defined);
  EXPECT_NE(none.note.find("no residual degree of freedom"), std::string::npos) << none.note;
}

TEST(Factorial, SeedsNeededGrowsAsTheEffectShrinks) {
  const auto& c = known_answers()["factorial"][1];  // 2x2x2, three seeds
  const FactorialAnalysis a = factorial_analysis(design_of(c));
  ASSERT_TRUE(a.defined);
  // block (Δ -1.6) and ffn (Δ 0.33) against the same residual sd: the small effect needs more seeds.
  const MainEffect& block = a.main_effects[0];
  const MainEffect& ffn = a.main_effects[2];
  ASSERT_FALSE(std::isnan(block.seeds_per_cell_needed));
  ASSERT_FALSE(std::isnan(ffn.seeds_per_cell_needed));
  // With one seed per cell the two-way model keeps a single residual df, so even the large effect
  // needs 2; the small one needs more.
  EXPECT_EQ(block.seeds_per_cell_needed, 2.0);
  EXPECT_GT(ffn.seeds_per_cell_needed, block.seeds_per_cell_needed);
}

}  // namespace
}  // namespace ablate::analysis
