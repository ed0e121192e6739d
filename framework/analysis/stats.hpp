// The statistics behind `ablate compare`: mean, sample standard deviation, median, the regularized
// incomplete beta function, the Student-t distribution, and Welch's unequal-variance t-test.
// Self-contained (no statistics library is packaged for C++ in Debian); checked against mpmath.
#pragma once

#include <cmath>
#include <span>
#include <string>

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

// Welch's t-test of mean(a) == mean(b) without assuming equal variances.
struct WelchTest {
  double mean_difference = NAN;  // mean(a) - mean(b); defined whenever both have a value
  double t = NAN;                // mean_difference / sqrt(var(a)/n_a + var(b)/n_b)
  double df = NAN;               // Welch–Satterthwaite degrees of freedom
  double p = NAN;                // two-sided
  std::string note;              // why p is NaN ("fewer than 2 values in b", ...); empty when defined
  bool defined() const { return !std::isnan(p); }
};

// Never throws for data: fewer than two values in a group, non-finite values, or zero variance in
// both groups give p = NaN and a `note` that says why. One group with zero variance is fine.
WelchTest welch_t_test(std::span<const double> a, std::span<const double> b);

}  // namespace ablate::analysis
