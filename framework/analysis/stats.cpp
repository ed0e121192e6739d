// The statistics behind `ablate compare` (see stats.hpp). The incomplete beta function is a
// continued fraction evaluated by the modified Lentz method, with the symmetry
// I_x(a, b) = 1 - I_{1-x}(b, a) to stay in the region where the fraction converges quickly.
#include "analysis/stats.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/philox.hpp"

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
  throw Error("regularized incomplete beta I_x(a, b) did not converge for a = " + num(a) + ", b = " + num(b) + ", x = " + num(x),
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
    throw Error("regularized incomplete beta I_x(a, b): a = " + num(a) + " and b = " + num(b) + " must be finite and > 0");
  if (!(x >= 0.0 && x <= 1.0)) throw Error("regularized incomplete beta I_x(a, b): x = " + num(x) + " is outside [0, 1]");
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

double student_t_quantile(double p, double df) {
  if (!(p > 0.0 && p < 1.0) || !(df > 0.0))
    throw Error("Student-t quantile: p = " + num(p) + ", df = " + num(df) + "; need 0 < p < 1 and df > 0");
  if (p == 0.5) return 0.0;
  // The t cdf is increasing: widen a bracket until it holds p, then bisect.
  double lo = -1.0, hi = 1.0;
  while (student_t_cdf(lo, df) > p) lo *= 2.0;
  while (student_t_cdf(hi, df) < p) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::fabs(hi)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double f_upper_tail(double f, double d1, double d2) {
  if (!(d1 > 0.0) || !(d2 > 0.0) || std::isnan(f))
    throw Error("F distribution: f = " + num(f) + ", d1 = " + num(d1) + ", d2 = " + num(d2) + "; need d1, d2 > 0");
  if (f <= 0.0) return 1.0;
  if (std::isinf(f)) return 0.0;
  // P(F >= f) = I_x(d2/2, d1/2) with x = d2 / (d2 + d1 f); 1 - x = d1 f / (d2 + d1 f).
  const double denom = d2 + d1 * f;
  return incomplete_beta(0.5 * d2, 0.5 * d1, d2 / denom, d1 * f / denom);
}

namespace {

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Fills t, p and the interval from mean_difference, se and df.
void finish_test(WelchTest& r, double confidence) {
  r.t = r.mean_difference / r.se;
  r.p = student_t_two_sided_p(r.t, r.df);
  const double q = student_t_quantile(0.5 + 0.5 * confidence, r.df);
  r.ci_low = r.mean_difference - q * r.se;
  r.ci_high = r.mean_difference + q * r.se;
}

}  // namespace

WelchTest welch_t_test(std::span<const double> a, std::span<const double> b, double confidence) {
  WelchTest r;
  if (!all_finite(a) || !all_finite(b)) {
    r.note = "a value is NaN or infinite";
    return r;
  }
  if (!a.empty() && !b.empty()) r.mean_difference = mean(a) - mean(b);
  if (a.size() < 2 || b.size() < 2) {
    r.note =
        "a t-test needs at least 2 values per group (have " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")";
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
  r.se = std::sqrt(va + vb);
  r.df = (va + vb) * (va + vb) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
  finish_test(r, confidence);
  return r;
}

WelchTest paired_t_test(std::span<const double> a, std::span<const double> b, double confidence) {
  WelchTest r;
  r.paired = true;
  if (a.size() != b.size())
    throw Error("paired t-test: " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                " values; pairs need the same count");
  if (!all_finite(a) || !all_finite(b)) {
    r.note = "a value is NaN or infinite";
    return r;
  }
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  if (!d.empty()) r.mean_difference = mean(d);
  if (d.size() < 2) {
    r.note = "a paired t-test needs at least 2 pairs (have " + std::to_string(d.size()) + ")";
    return r;
  }
  const double sd = sample_std(d);
  if (sd == 0.0) {
    r.note = "the paired differences are constant (zero variance): the test does not apply";
    return r;
  }
  r.se = sd / std::sqrt(static_cast<double>(d.size()));
  r.df = static_cast<double>(d.size()) - 1.0;
  finish_test(r, confidence);
  return r;
}

std::vector<double> holm_adjust(std::span<const double> p) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
  std::vector<double> out(p.begin(), p.end());
  const double m = static_cast<double>(order.size());
  double running = 0.0;  // adjusted values never decrease along the sorted order
  for (std::size_t j = 0; j < order.size(); ++j) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(j)) * p[order[j]]));
    out[order[j]] = running;
  }
  return out;
}

double t_test_power(double d, double n, double alpha, bool paired) {
  if (!(n >= 2.0) || !std::isfinite(d))
    throw Error("t-test power: d = " + num(d) + ", n = " + num(n) + "; need a finite d and n >= 2");
  return t_power(paired ? d * std::sqrt(n) : d * std::sqrt(n / 2.0), paired ? n - 1.0 : 2.0 * n - 2.0, alpha);
}

double t_power(double delta, double df, double alpha) {
  if (!(df >= 1.0) || !(alpha > 0.0 && alpha < 1.0) || !std::isfinite(delta))
    throw Error("t-test power: noncentrality = " + num(delta) + ", df = " + num(df) + ", alpha = " + num(alpha) +
                "; need a finite noncentrality, df >= 1 and 0 < alpha < 1");
  const double c = student_t_quantile(1.0 - alpha / 2.0, df);
  // T' = (Z + delta) / U with U = sqrt(V / df), V ~ chi^2_df. Power = E_U[Phi(delta - c U) + Phi(-delta - c U)].
  // U's density: 2 df u f_chi2(df u^2). Simpson's rule over u in [0, u_max].
  const double log_norm = -0.5 * df * std::log(2.0) - std::lgamma(0.5 * df);
  // In logarithms: log(2 df) + (df/2 - 1) log df + (df - 1) log u - df u^2 / 2 + log_norm; finite
  // at u = 0 for df = 1 (a constant), 0 there for df > 1.
  const double log_front = std::log(2.0 * df) + (0.5 * df - 1.0) * std::log(df) + log_norm;
  const auto density = [&](double u) {
    if (u <= 0.0) return df == 1.0 ? std::exp(log_front) : 0.0;
    return std::exp(log_front + (df - 1.0) * std::log(u) - 0.5 * df * u * u);
  };
  const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double u_max = std::sqrt((df + 40.0 * std::sqrt(2.0 * df) + 100.0) / df);
  constexpr int kIntervals = 4000;  // even
  const double h = u_max / kIntervals;
  double sum = 0.0;
  for (int i = 0; i <= kIntervals; ++i) {
    const double u = i * h;
    const double w = (i == 0 || i == kIntervals) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
    sum += w * density(u) * (phi(delta - c * u) + phi(-delta - c * u));
  }
  return sum * h / 3.0;
}

std::optional<std::size_t> n_for_power(double d, double alpha, double power, bool paired) {
  if (!std::isfinite(d) || d == 0.0) return std::nullopt;
  constexpr std::size_t kMax = 100000;
  const auto enough = [&](std::size_t n) { return t_test_power(d, static_cast<double>(n), alpha, paired) >= power; };
  if (!enough(kMax)) return std::nullopt;
  std::size_t lo = 1, hi = kMax;  // power grows with n: enough(hi), not enough(lo) (n = 1 has no test)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (enough(mid) ? hi : lo) = mid;
  }
  return std::max<std::size_t>(hi, 2);
}

Interval bootstrap_mean_difference(std::span<const double> a, std::span<const double> b, bool paired, double confidence,
                                   std::size_t resamples, std::uint64_t seed) {
  Interval out;
  if (a.empty() || b.empty() || (paired && a.size() != b.size()) || !all_finite(a) || !all_finite(b) || resamples == 0)
    return out;
  // Indices from the project's counter-based RNG (ablate/philox.hpp), keyed by `seed`: portable and fixed.
  const RngKey key{seed, 0, 0xB0075u};
  std::uint64_t draws = 0;
  float u[4];
  const auto pick = [&](std::size_t n) {
    if (draws % 4 == 0) philox_uniform4(key, draws / 4, u);
    const float x = u[draws++ % 4];  // [0, 1)
    return std::min(n - 1, static_cast<std::size_t>(x * static_cast<float>(n)));
  };
  std::vector<double> stats(resamples);
  for (std::size_t r = 0; r < resamples; ++r) {
    double sa = 0.0, sb = 0.0;
    if (paired) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::size_t j = pick(a.size());
        sa += a[j];
        sb += b[j];
      }
      stats[r] = (sa - sb) / static_cast<double>(a.size());
    } else {
      for (std::size_t i = 0; i < a.size(); ++i) sa += a[pick(a.size())];
      for (std::size_t i = 0; i < b.size(); ++i) sb += b[pick(b.size())];
      stats[r] = sa / static_cast<double>(a.size()) - sb / static_cast<double>(b.size());
    }
  }
  std::sort(stats.begin(), stats.end());
  const auto at = [&](double q) {  // linear interpolation between order statistics
    const double pos = q * static_cast<double>(resamples - 1);
    const auto i = static_cast<std::size_t>(pos);
    const double frac = pos - static_cast<double>(i);
    return i + 1 < resamples ? stats[i] * (1.0 - frac) + stats[i + 1] * frac : stats[i];
  };
  out.low = at(0.5 - 0.5 * confidence);
  out.high = at(0.5 + 0.5 * confidence);
  return out;
}

}  // namespace ablate::analysis
