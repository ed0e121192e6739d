// The statistics behind `ablate compare`: mean, sample standard deviation, median, the regularized
// incomplete beta function, the Student-t and F distributions, Welch's and the paired t-test with
// confidence intervals, Holm's correction, t-test power and a percentile bootstrap. Self-contained
// (no statistics library is packaged for C++ in Debian); checked against scipy and statsmodels.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ablate::analysis {

// Arithmetic mean; NaN for no values.
double mean(std::span<const double> values);
// Sample standard deviation (divisor n - 1); NaN for fewer than two values.
double sample_std(std::span<const double> values);
// Median (the mean of the two middle values for an even count); NaN for no values.
double median(std::span<const double> values);

// The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b), for a > 0, b > 0 and
// 0 <= x <= 1 (a continued fraction, evaluated by the modified Lentz method). Throws ablate::Error
// for arguments outside that domain, or if the fraction does not converge (very large a and b).
double regularized_incomplete_beta(double a, double b, double x);

// The Student-t distribution with `df` > 0 degrees of freedom (need not be an integer):
// P(T <= t), and the two-sided tail P(|T| >= |t|). Throw ablate::Error for df <= 0 or NaN input.
double student_t_cdf(double t, double df);
double student_t_two_sided_p(double t, double df);

// The t quantile: t with P(T <= t) = p, for 0 < p < 1 and df > 0 (bisection on student_t_cdf, to
// 1e-12 relative). Throws ablate::Error outside that domain.
double student_t_quantile(double p, double df);

// The F distribution's upper tail P(F >= f) with d1, d2 > 0 degrees of freedom; 1 for f <= 0.
double f_upper_tail(double f, double d1, double d2);

// A two-sided t-test of mean(a) == mean(b) (or of mean(a - b) == 0 when paired), with the
// confidence interval of the difference at level `confidence`.
struct WelchTest {
  double mean_difference = NAN;        // mean(a) - mean(b); defined whenever both have a value
  double se = NAN;                     // its standard error
  double t = NAN;                      // mean_difference / se
  double df = NAN;                     // Welch–Satterthwaite degrees of freedom (paired: pairs - 1)
  double p = NAN;                      // two-sided
  double ci_low = NAN, ci_high = NAN;  // mean_difference ± t_{(1+confidence)/2, df} · se
  bool paired = false;
  std::string note;  // why p is NaN ("fewer than 2 values in b", ...); empty when defined
  bool defined() const { return !std::isnan(p); }
};

// Welch's unequal-variance t-test. Never throws for data: fewer than two values in a group,
// non-finite values, or zero variance in both groups give p = NaN and a `note` that says why. One
// group with zero variance is fine.
WelchTest welch_t_test(std::span<const double> a, std::span<const double> b, double confidence = 0.95);
// The paired t-test on the differences a[i] - b[i] (same length; the pairs share a seed). Fewer
// than two pairs, non-finite values or constant differences give p = NaN and a note.
WelchTest paired_t_test(std::span<const double> a, std::span<const double> b, double confidence = 0.95);

// Holm's step-down adjustment of p-values for testing them as one family: the i-th smallest of
// the m defined values becomes max over j <= i of min(1, (m - j + 1) p_(j)). NaN entries stay NaN
// and do not count in m. Same order as the input.
std::vector<double> holm_adjust(std::span<const double> p);

// The power of a two-sided t-test at level alpha for a standardized effect d = Δ / σ:
// two independent groups of n each (df 2n - 2, noncentrality d·sqrt(n/2)), or one group of n
// differences (paired; df n - 1, noncentrality d·sqrt(n)). The noncentral t's tails are integrated
// over the chi distribution of the standard error (Simpson's rule, 1e-9). n >= 2.
double t_test_power(double d, double n, double alpha, bool paired);
// The same for a test statistic with noncentrality `delta` (effect / its standard error) and `df`
// degrees of freedom >= 1: P(|T'| > t_{1 - alpha/2, df}).
double t_power(double delta, double df, double alpha);
// The smallest n (per group, or pairs) >= 2 whose power reaches `power`; nullopt if d is 0, not
// finite, or needs more than 100000.
std::optional<std::size_t> n_for_power(double d, double alpha, double power, bool paired);

// A percentile bootstrap interval of mean(a) - mean(b) (paired: of mean(a[i] - b[i])), from
// `resamples` resamples drawn with a fixed seed (the same data give the same interval).
struct Interval {
  double low = NAN, high = NAN;
};
Interval bootstrap_mean_difference(std::span<const double> a, std::span<const double> b, bool paired, double confidence = 0.95,
                                   std::size_t resamples = 10000, std::uint64_t seed = 1);

}  // namespace ablate::analysis
