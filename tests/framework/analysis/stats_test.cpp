// Tests for framework/analysis/stats: mean/std/median, the regularized incomplete beta function,
// the Student-t distribution and Welch's t-test. Reference values come from closed forms and from
// mpmath 1.3.0 at 40 digits (betainc(a, b, 0, x, regularized=True)), computed independently.
#include "analysis/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "ablate/error.hpp"
#include "known_answers/known_answers.hpp"

namespace ablate::analysis {
namespace {

TEST(StatsBasic, MeanSampleStdMedian) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(v), 5.0);
  EXPECT_DOUBLE_EQ(sample_std(v), std::sqrt(32.0 / 7.0));  // sum of squared deviations 32, n - 1 = 7
  EXPECT_DOUBLE_EQ(median(v), 4.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2.0);
  EXPECT_NEAR(sample_std(std::vector<double>{0.90, 0.91, 0.89}), 0.01, 1e-15);
  // Identical values: exactly zero, although the rounded mean of three 0.7 is 0.7000000000000001.
  EXPECT_EQ(sample_std(std::vector<double>{0.7, 0.7, 0.7}), 0.0);
  // Large offset, small spread: the two-pass variance keeps it.
  EXPECT_NEAR(sample_std(std::vector<double>{1e9 + 1, 1e9 + 2, 1e9 + 3}), 1.0, 1e-6);
}

TEST(StatsBasic, EmptyAndSingleValuesGiveNaN) {
  const std::vector<double> none, one = {3.5};
  EXPECT_TRUE(std::isnan(mean(none)));
  EXPECT_TRUE(std::isnan(median(none)));
  EXPECT_TRUE(std::isnan(sample_std(none)));
  EXPECT_DOUBLE_EQ(mean(one), 3.5);
  EXPECT_DOUBLE_EQ(median(one), 3.5);
  EXPECT_TRUE(std::isnan(sample_std(one)));
}

TEST(StatsIncompleteBeta, ClosedForms) {
  for (const double x : {0.0, 0.05, 0.3, 0.5, 0.77, 0.999, 1.0}) {
    EXPECT_NEAR(regularized_incomplete_beta(3.5, 1.0, x), std::pow(x, 3.5), 1e-14) << x;  // I_x(a, 1) = x^a
    EXPECT_NEAR(regularized_incomplete_beta(1.0, 2.5, x), 1.0 - std::pow(1.0 - x, 2.5), 1e-14) << x;
    EXPECT_NEAR(regularized_incomplete_beta(2.0, 2.0, x), 3 * x * x - 2 * x * x * x, 1e-14) << x;
    // I_x(1/2, 1/2) = (2/pi) asin(sqrt(x)) (the arcsine distribution).
    EXPECT_NEAR(regularized_incomplete_beta(0.5, 0.5, x), 2.0 / std::numbers::pi * std::asin(std::sqrt(x)), 1e-13) << x;
  }
  for (const double a : {0.3, 1.0, 7.0, 120.0}) EXPECT_NEAR(regularized_incomplete_beta(a, a, 0.5), 0.5, 1e-13) << a;
}

TEST(StatsIncompleteBeta, MatchesMpmath) {
  struct Case {
    double a, b, x, expected;
  };
  const std::vector<Case> cases = {
      {2.5, 3.7, 0.3, 0.3190031752843086985},     {0.5, 0.5, 0.2, 0.29516723530086655719},
      {50, 60, 0.45, 0.46423529143060362867},     {1.5, 0.5, 0.999, 0.95974334188496819702},
      {10, 0.5, 0.05, 1.7611787432590982125e-14},  // a tiny tail: relative accuracy matters
      {3, 4, 0.9, 0.99873000000000000108},        {0.1, 20, 0.01, 0.8781283685059498348},
      {400, 500, 0.44, 0.39513781275711601333},
  };
  for (const auto& c : cases) {
    const double got = regularized_incomplete_beta(c.a, c.b, c.x);
    EXPECT_NEAR(got, c.expected, 1e-12 * std::max(1.0, c.expected)) << c.a << " " << c.b << " " << c.x;
    EXPECT_NEAR(got / c.expected, 1.0, 1e-10) << c.a << " " << c.b << " " << c.x;
  }
}

TEST(StatsIncompleteBeta, RejectsArgumentsOutsideTheDomain) {
  EXPECT_THROW(regularized_incomplete_beta(0.0, 1.0, 0.5), Error);
  EXPECT_THROW(regularized_incomplete_beta(1.0, -2.0, 0.5), Error);
  EXPECT_THROW(regularized_incomplete_beta(1.0, 1.0, 1.5), Error);
  EXPECT_THROW(regularized_incomplete_beta(1.0, 1.0, NAN), Error);
  EXPECT_THROW(regularized_incomplete_beta(NAN, 1.0, 0.5), Error);
}

TEST(StatsStudentT, ClosedFormsForOneAndTwoDegreesOfFreedom) {
  for (const double t : {-30.0, -2.0, -0.4, 0.0, 0.25, 1.0, 3.0, 50.0}) {
    // df = 1 is the Cauchy distribution; df = 2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
    EXPECT_NEAR(student_t_cdf(t, 1.0), 0.5 + std::atan(t) / std::numbers::pi, 1e-14) << t;
    EXPECT_NEAR(student_t_cdf(t, 2.0), 0.5 + t / (2.0 * std::sqrt(2.0 + t * t)), 1e-14) << t;
  }
  EXPECT_DOUBLE_EQ(student_t_two_sided_p(0.0, 5.0), 1.0);
  EXPECT_DOUBLE_EQ(student_t_two_sided_p(INFINITY, 5.0), 0.0);
}

TEST(StatsStudentT, MatchesMpmath) {
  struct Case {
    double t, df, p, cdf;
  };
  const std::vector<Case> cases = {
      {2.0, 3.0, 0.13932596855884316373, 0.93033701572057841813},  // also by quadrature of the pdf
      {-1.3, 7.5, 0.23212677881560871217, 0.11606338940780435609},  {0.1, 2.2, 0.92872213604119688569, 0.53563893197940155715},
      {8.0, 4.0, 0.0013238969092171678262, 0.99933805154539141609}, {25.0, 2.0, 0.0015961702114103338666, 0.99920191489429483307},
  };
  for (const auto& c : cases) {
    EXPECT_NEAR(student_t_two_sided_p(c.t, c.df) / c.p, 1.0, 1e-12) << c.t << " " << c.df;
    EXPECT_NEAR(student_t_cdf(c.t, c.df), c.cdf, 1e-14) << c.t << " " << c.df;
  }
  EXPECT_THROW(student_t_cdf(1.0, 0.0), Error);
  EXPECT_THROW(student_t_cdf(NAN, 3.0), Error);
}

TEST(StatsWelch, MatchesMpmath) {
  struct Case {
    std::vector<double> a, b;
    double diff, t, df, p;
  };
  // Reference: t = (mean a - mean b) / sqrt(s_a^2/n_a + s_b^2/n_b), Welch–Satterthwaite df,
  // p = I_{df/(df+t^2)}(df/2, 1/2), all in mpmath at 40 digits.
  const std::vector<Case> cases = {
      {{0.95, 0.97, 0.96}, {0.90, 0.91, 0.89}, 0.06, 7.3484692283495343, 4.0, 0.0018262606682599832},
      {{19.1, 20.3, 18.7, 21.4, 20.0},
       {22.5, 23.1, 21.8, 24.0},
       -2.95,
       -4.4347115652166902,
       6.8885224274406332,
       0.0031478696567080824},
      {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
       {1.5, 2.5, 3.5, 100},
       -21.375,
       -0.8761246945320676,
       3.0092592224066461,
       0.44527506869439432},
      {{0.95, 0.97}, {0.90, 0.91, 0.89}, 0.06, 5.1961524227066319, 1.6842105263157895, 0.04969146055234231},
      {{3.0, 3.0001}, {3.0, 2.9999, 3.00005}, 6.6666666666666667e-5, 1.0, 2.4265402843601896, 0.40637496678898617},
  };
  for (const auto& c : cases) {
    const WelchTest r = welch_t_test(c.a, c.b);
    ASSERT_TRUE(r.defined()) << r.note;
    EXPECT_TRUE(r.note.empty());
    EXPECT_NEAR(r.mean_difference, c.diff, 1e-12 * std::fabs(c.diff) + 1e-15);
    EXPECT_NEAR(r.t / c.t, 1.0, 1e-9);
    EXPECT_NEAR(r.df / c.df, 1.0, 1e-9);
    EXPECT_NEAR(r.p / c.p, 1.0, 1e-8);
  }
}

TEST(StatsWelch, OneConstantGroupIsFine) {
  // b has zero variance: df = n_a - 1 = 2, t = 0.08 / (s_a / sqrt 3); mpmath p = 0.034578415949044409.
  const WelchTest r = welch_t_test(std::vector<double>{0.5, 0.5, 0.5}, std::vector<double>{0.4, 0.45, 0.41});
  ASSERT_TRUE(r.defined()) << r.note;
  EXPECT_NEAR(r.t, 5.2372293656638172, 1e-9);
  EXPECT_NEAR(r.df, 2.0, 1e-12);
  EXPECT_NEAR(r.p, 0.034578415949044409, 1e-12);
}

TEST(StatsWelch, UndefinedCasesGiveNaNAndAReason) {
  const std::vector<double> one = {0.9}, two = {0.9, 0.92}, constant = {0.5, 0.5}, other_constant = {0.7, 0.7, 0.7};
  WelchTest r = welch_t_test(one, two);
  EXPECT_FALSE(r.defined());
  EXPECT_TRUE(std::isnan(r.t));
  EXPECT_NEAR(r.mean_difference, -0.01, 1e-15);
  EXPECT_NE(r.note.find("at least 2 values"), std::string::npos) << r.note;

  r = welch_t_test(std::vector<double>{}, two);
  EXPECT_FALSE(r.defined());
  EXPECT_TRUE(std::isnan(r.mean_difference));

  r = welch_t_test(constant, constant);
  EXPECT_FALSE(r.defined());
  EXPECT_NE(r.note.find("constant and equal"), std::string::npos) << r.note;

  r = welch_t_test(constant, other_constant);
  EXPECT_FALSE(r.defined());
  EXPECT_NE(r.note.find("zero variance"), std::string::npos) << r.note;

  r = welch_t_test(std::vector<double>{0.1, NAN, 0.3}, two);
  EXPECT_FALSE(r.defined());
  EXPECT_NE(r.note.find("NaN"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace ablate::analysis

// ---- Against scipy / statsmodels (known_answers/) -----------------------------------------

namespace ablate::analysis {
namespace {

using testing::known_answers;
using testing::number;
using testing::numbers;

TEST(StatsKnownAnswers, WelchAndPairedTestsWithIntervals) {
  const auto& k = known_answers()["two_sample"];
  const std::vector<double> a = numbers(k["a"]), b = numbers(k["b"]);
  for (const bool paired : {false, true}) {
    SCOPED_TRACE(paired ? "paired" : "welch");
    const auto& want = k[paired ? "paired" : "welch"];
    const WelchTest r = paired ? paired_t_test(a, b) : welch_t_test(a, b);
    EXPECT_EQ(r.paired, paired);
    EXPECT_NEAR(r.t, number(want["t"]), 1e-10);
    EXPECT_NEAR(r.df, number(want["df"]), 1e-10);
    EXPECT_NEAR(r.p, number(want["p"]), 1e-10);
    EXPECT_NEAR(r.ci_low, number(want["ci_low"]), 1e-9);
    EXPECT_NEAR(r.ci_high, number(want["ci_high"]), 1e-9);
  }
}

TEST(StatsKnownAnswers, QuantilesTailsHolmPower) {
  for (const auto& q : known_answers()["t_quantile"])
    EXPECT_NEAR(student_t_quantile(number(q["p"]), number(q["df"])), number(q["t"]), 1e-9);
  for (const auto& f : known_answers()["f_upper_tail"])
    EXPECT_NEAR(f_upper_tail(number(f["f"]), number(f["d1"]), number(f["d2"])), number(f["p"]), 1e-12);
  const auto& h = known_answers()["holm"];
  const std::vector<double> adjusted = holm_adjust(numbers(h["p"])), want = numbers(h["adjusted"]);
  ASSERT_EQ(adjusted.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(adjusted[i])) << i;
    else
      EXPECT_NEAR(adjusted[i], want[i], 1e-15) << i;
  }
  for (const auto& p : known_answers()["power"])
    EXPECT_NEAR(t_test_power(number(p["d"]), number(p["n"]), 0.05, p["paired"].as<bool>()), number(p["power"]), 1e-7)
        << "d " << number(p["d"]) << " n " << number(p["n"]) << " paired " << p["paired"].as<bool>();
  for (const auto& n : known_answers()["n_for_power"])
    EXPECT_EQ(n_for_power(number(n["d"]), 0.05, 0.8, n["paired"].as<bool>()), n["n"].as<std::size_t>())
        << "d " << number(n["d"]) << " paired " << n["paired"].as<bool>();
  EXPECT_EQ(n_for_power(0.0, 0.05, 0.8, false), std::nullopt);
}

TEST(StatsPairedT, UndefinedCasesGiveNaNAndAReason) {
  const std::vector<double> one = {1.0}, two = {1.0, 2.0}, shifted = {2.0, 3.0};
  EXPECT_NE(paired_t_test(one, one).note.find("at least 2 pairs"), std::string::npos);
  EXPECT_NE(paired_t_test(shifted, two).note.find("constant"), std::string::npos);  // differences 1, 1
  EXPECT_THROW(paired_t_test(one, two), Error);
}

// The percentile bootstrap's 95% interval covers the true difference in about 95% of data sets
// (a little less at small n, a known property): 400 synthetic normal data sets of 12 per arm.
TEST(StatsBootstrap, CoverageOnSyntheticData) {
  std::uint64_t state = 7;
  const auto uniform = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  };
  const auto normal = [&]() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform()); };
  int covered = 0, paired_covered = 0;
  constexpr int kSets = 400;
  for (int s = 0; s < kSets; ++s) {
    std::vector<double> a(12), b(12);
    for (auto& v : a) v = 1.5 + normal();
    for (auto& v : b) v = 1.0 + normal();
    const Interval i = bootstrap_mean_difference(a, b, false, 0.95, 2000, static_cast<std::uint64_t>(s));
    const Interval p = bootstrap_mean_difference(a, b, true, 0.95, 2000, static_cast<std::uint64_t>(s));
    ASSERT_LT(i.low, i.high);
    covered += i.low <= 0.5 && 0.5 <= i.high;
    paired_covered += p.low <= 0.5 && 0.5 <= p.high;
  }
  EXPECT_GE(covered, 0.89 * kSets);
  EXPECT_LE(covered, 0.98 * kSets);
  EXPECT_GE(paired_covered, 0.89 * kSets);
  EXPECT_LE(paired_covered, 0.98 * kSets);
  // The same data and seed give the same interval.
  const std::vector<double> a = {1, 2, 3, 4, 5}, b = {0, 1, 1, 2, 2};
  EXPECT_EQ(bootstrap_mean_difference(a, b, false).low, bootstrap_mean_difference(a, b, false).low);
}

}  // namespace
}  // namespace ablate::analysis
