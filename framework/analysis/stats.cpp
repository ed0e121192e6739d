// The statistics behind `ablate compare` (see stats.hpp). The incomplete beta function is a
// continued fraction evaluated by the modified Lentz method, with the symmetry
// I_x(a, b) = 1 - I_{1-x}(b, a) to stay in the region where the fraction converges quickly.
#include "analysis/stats.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <vector>

#include "ablate/error.hpp"

namespace ablate::analysis {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// I_x(a, b), with y = 1 - x given separately so that callers who know 1 - x more accurately than
// the subtraction would give (x close to 1) keep that accuracy. Arguments already validated.
double incomplete_beta(double a, double b, double x, double y) {
  if (x <= 0.0) return 0.0;
  if (y <= 0.0) return 1.0;
  // The fraction converges fast for x < (a + 1) / (a + b + 2); otherwise use the symmetry.
  if (x > (a + 1.0) / (a + b + 2.0)) return 1.0 - incomplete_beta(b, a, y, x);

  // Prefactor x^a (1-x)^b / (a B(a, b)), in logarithms so that large a, b do not overflow.
  const double log_beta = std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b);
  const double prefactor = std::exp(a * std::log(x) + b * std::log(y) - log_beta) / a;

  // I_x(a, b) = prefactor / (1 + d1 / (1 + d2 / (1 + ...))), with
  //   d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
  //   d_{2m}   =  m (b - m) x / ((a + 2m - 1)(a + 2m)).
  // Modified Lentz: the tail value f = 1 + d1/(1 + ...) is built as a product of C_j * D_j.
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  constexpr int kMaxTerms = 20000;
  double f = 1.0, c = 1.0, d = 0.0;
  for (int j = 1; j <= kMaxTerms; ++j) {
    double dj;
    if (j % 2 == 1) {
      const double m = (j - 1) / 2;
      dj = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
    } else {
      const double m = j / 2;
      dj = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
    }
    d = 1.0 + dj * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + dj / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = c * d;
    f *= step;
    if (std::fabs(step - 1.0) < kEps) return prefactor / f;
  }
  throw Error("regularized incomplete beta I_x(a, b) did not converge for a = " + num(a) + ", b = " + num(b) +
                  ", x = " + num(x),
              "the continued fraction needs about sqrt(max(a, b)) terms; such large parameters are outside what "
              "ablate compare needs");
}

}  // namespace

double mean(std::span<const double> values) {
  if (values.empty()) return NAN;
  double sum = 0.0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double sample_std(std::span<const double> values) {
  if (values.size() < 2) return NAN;
  // Identical values have exactly zero spread, although their rounded mean may differ from them
  // (mean{0.7, 0.7, 0.7} = 0.7000000000000001): a constant group must not look slightly spread.
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  if (*lo == *hi) return 0.0;
  const double m = mean(values);
  double sum_sq = 0.0;  // two passes: deviations from the mean, no cancellation of large squares
  for (const double v : values) sum_sq += (v - m) * (v - m);
  return std::sqrt(sum_sq / static_cast<double>(values.size() - 1));
}

double median(std::span<const double> values) {
  if (values.empty()) return NAN;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0) || std::isinf(a) || std::isinf(b))
    throw Error("regularized incomplete beta I_x(a, b): a = " + num(a) + " and b = " + num(b) +
                " must be finite and > 0");
  if (!(x >= 0.0 && x <= 1.0))
    throw Error("regularized incomplete beta I_x(a, b): x = " + num(x) + " is outside [0, 1]");
  return incomplete_beta(a, b, x, 1.0 - x);
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0.0) || std::isnan(t))
    throw Error("Student-t distribution: t = " + num(t) + ", df = " + num(df) + "; need df > 0 and t not NaN");
  if (std::isinf(t)) return 0.0;
  if (std::isinf(df)) return std::erfc(std::fabs(t) / std::sqrt(2.0));  // the normal limit
  // P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2); 1 - x = t^2 / (df + t^2) exactly.
  const double t2 = t * t;
  return incomplete_beta(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2));
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * student_t_two_sided_p(t, df);  // P(T >= |t|)
  return t < 0.0 ? tail : 1.0 - tail;
}

WelchTest welch_t_test(std::span<const double> a, std::span<const double> b) {
  WelchTest r;
  const auto all_finite = [](std::span<const double> v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (!all_finite(a) || !all_finite(b)) {
    r.note = "a value is NaN or infinite";
    return r;
  }
  if (!a.empty() && !b.empty()) r.mean_difference = mean(a) - mean(b);
  if (a.size() < 2 || b.size() < 2) {
    r.note = "a t-test needs at least 2 values per group (have " + std::to_string(a.size()) + " and " +
             std::to_string(b.size()) + ")";
    return r;
  }
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double sa = sample_std(a), sb = sample_std(b);
  const double va = sa * sa / na, vb = sb * sb / nb;  // squared standard errors of the means
  if (va + vb == 0.0) {
    r.note = r.mean_difference == 0.0
                 ? "both groups are constant and equal (zero variance): there is nothing to test"
                 : "both groups are constant (zero variance) but differ: the t statistic is infinite and the "
                   "test does not apply";
    return r;
  }
  r.t = r.mean_difference / std::sqrt(va + vb);
  r.df = (va + vb) * (va + vb) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
  r.p = student_t_two_sided_p(r.t, r.df);
  return r;
}

}  // namespace ablate::analysis
