// Across model sizes (scaling.hpp): series of arms by their non-size keys, the power-law fit of
// each, its bootstrap interval, the ranking statements and the figure.
#include "analysis/scaling.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"
#include "analysis/plot.hpp"
#include "core/text.hpp"

namespace ablate::analysis {

namespace {

constexpr std::size_t kResamples = 1000;
constexpr double kAlphaLow = 1e-3, kAlphaHigh = 4.0;

// e and a of the linear least-squares fit y = e + a x, and its residual sum of squares.
struct Linear {
  double e = NAN, a = NAN, rss = INFINITY;
};
Linear linear_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double k = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  }
  const double det = k * sxx - sx * sx;
  Linear f;
  if (!(std::abs(det) > 1e-300)) return f;
  f.a = (k * sxy - sx * sy) / det;
  f.e = (sy - f.a * sx) / k;
  f.rss = 0;
  for (std::size_t i = 0; i < x.size(); ++i) f.rss += std::pow(y[i] - f.e - f.a * x[i], 2);
  return f;
}

}  // namespace

PowerLaw fit_power_law(const std::vector<double>& n, const std::vector<double>& y, int sign) {
  PowerLaw best;
  if (n.size() < 3 || n.size() != y.size()) return best;
  const double n0 = *std::min_element(n.begin(), n.end());  // n / n0: x in (0, 1], well scaled for any alpha
  if (!(n0 > 0)) return best;
  const auto at = [&](double alpha) {
    std::vector<double> x(n.size());
    for (std::size_t i = 0; i < n.size(); ++i) x[i] = std::pow(n[i] / n0, -alpha);
    Linear f = linear_fit(x, y);
    if (!(f.a * sign > 0)) f.rss = INFINITY;  // the other direction: no law of this kind
    return f;
  };
  // A log grid, then golden section between the best point's neighbours.
  constexpr int kGrid = 400;
  double best_alpha = NAN, best_rss = INFINITY;
  int best_i = -1;
  for (int i = 0; i <= kGrid; ++i) {
    const double alpha = kAlphaLow * std::pow(kAlphaHigh / kAlphaLow, static_cast<double>(i) / kGrid);
    const double rss = at(alpha).rss;
    if (rss < best_rss) best_rss = rss, best_alpha = alpha, best_i = i;
  }
  if (best_i < 0) return best;
  const auto grid = [&](int i) {
    return kAlphaLow * std::pow(kAlphaHigh / kAlphaLow, static_cast<double>(std::clamp(i, 0, kGrid)) / kGrid);
  };
  double lo = grid(best_i - 1), hi = grid(best_i + 1);
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
    const double m1 = hi - phi * (hi - lo), m2 = lo + phi * (hi - lo);
    if (at(m1).rss < at(m2).rss)
      hi = m2;
    else
      lo = m1;
  }
  const double alpha = at((lo + hi) / 2).rss <= best_rss ? (lo + hi) / 2 : best_alpha;
  const Linear f = at(alpha);
  best.alpha = alpha;
  best.e = f.e;
  best.a = f.a * std::pow(n0, alpha);  // back from x = (n / n0)^-alpha to n^-alpha
  best.rss = f.rss;
  return best;
}

ScalingAnalysis scaling_analysis(const Comparison& c, const std::vector<std::string>& size_keys) {
  ScalingAnalysis s;
  s.keys = size_keys;
  std::vector<std::string> other;  // the keys a series is named by
  for (const std::string& key : size_keys)
    if (std::find(c.keys.begin(), c.keys.end(), key) == c.keys.end())
      throw UsageError("ablate compare: --scale " + key + ": the runs do not differ in " + key,
                       "name the keys that set the model's size, among those the arms differ by: " + join(c.keys, ", "));
  for (const std::string& key : c.keys)
    if (std::find(size_keys.begin(), size_keys.end(), key) == size_keys.end()) other.push_back(key);
  const int sign = c.higher_is_better ? -1 : 1;

  std::map<std::string, std::size_t> index;  // series label -> position
  for (const Arm& arm : c.arms) {
    const std::string label = short_label(other, arm.values);  // short_label reads only the keys it is given
    auto [it, added] = index.emplace(label, s.series.size());
    if (added) s.series.push_back({label, {}, {}, {}, NAN, ""});
    ScalePoint p;
    p.arm = arm.label;
    p.size = short_label(size_keys, arm.values);
    p.n = static_cast<double>(arm.non_embedding_parameters);
    p.mean = arm.mean;
    p.values = arm.metric_values;
    s.series[it->second].points.push_back(std::move(p));
  }

  for (ScaleSeries& series : s.series) {
    std::sort(series.points.begin(), series.points.end(), [](const ScalePoint& a, const ScalePoint& b) { return a.n < b.n; });
    std::vector<double> n, y;
    for (const ScalePoint& p : series.points)
      if (p.n > 0 && std::isfinite(p.mean)) n.push_back(p.n), y.push_back(p.mean);
    if (n.size() < 3) {
      series.note = std::to_string(n.size()) + " sizes with parameter counts and values; a fit of E, A and alpha needs 3";
      continue;
    }
    series.fit = fit_power_law(n, y, sign);
    if (!series.fit.defined()) {
      series.note = std::string("the values do not ") + (sign > 0 ? "fall" : "rise") + " with N as a power law";
      continue;
    }
    series.next_n = n.back() * n.back() / n[n.size() - 2];
    if (sign > 0 && series.fit.e < 0)
      series.note =
          "E < 0: the fitted floor is below zero, so the sizes do not pin it down (too few, too close or too "
          "noisy); read alpha with care";
    // Percentile bootstrap of alpha: each size's values resampled with replacement, refitted.
    bool replicated = true;
    for (const ScalePoint& p : series.points) replicated &= p.values.size() >= 2;
    if (!replicated) continue;
    std::mt19937_64 rng(1);
    std::vector<double> alphas;
    for (std::size_t r = 0; r < kResamples; ++r) {
      std::vector<double> ys;
      for (const ScalePoint& p : series.points) {
        if (!(p.n > 0 && std::isfinite(p.mean))) continue;
        std::uniform_int_distribution<std::size_t> pick(0, p.values.size() - 1);
        double sum = 0;
        for (std::size_t k = 0; k < p.values.size(); ++k) sum += p.values[pick(rng)];
        ys.push_back(sum / static_cast<double>(p.values.size()));
      }
      const PowerLaw f = fit_power_law(n, ys, sign);
      if (f.defined()) alphas.push_back(f.alpha);
    }
    if (alphas.size() * 10 >= kResamples * 9) {  // a resample without a law of this kind is rare, or no interval
      std::sort(alphas.begin(), alphas.end());
      const double tail = c.alpha / 2;
      const auto q = [&](double p) { return alphas[static_cast<std::size_t>(std::floor(p * (alphas.size() - 1)))]; };
      series.alpha_interval = {q(tail), q(1 - tail)};
    }
  }

  // The ranking at each measured size (by the size keys' values), and one size up from the fits.
  if (s.series.size() < 2) return s;
  const auto better = [&](double a, double b) { return c.higher_is_better ? a > b : a < b; };
  std::vector<std::string> orders;  // "64 · 2: relu < swiglu"
  std::map<std::string, std::vector<std::pair<double, std::string>>> by_size;
  std::vector<std::string> size_order;
  for (const ScaleSeries& series : s.series)
    for (const ScalePoint& p : series.points) {
      if (!by_size.count(p.size)) size_order.push_back(p.size);
      if (std::isfinite(p.mean)) by_size[p.size].emplace_back(p.mean, series.label);
    }
  const auto ranked = [&](std::vector<std::pair<double, std::string>> v) {
    std::stable_sort(v.begin(), v.end(), [&](const auto& a, const auto& b) { return better(a.first, b.first); });
    std::vector<std::string> names;
    for (const auto& [value, name] : v) names.push_back(name);
    return names;
  };
  std::vector<std::string> first, changed_at;
  for (const std::string& size : size_order) {
    if (by_size[size].size() < 2) continue;
    const std::vector<std::string> order = ranked(by_size[size]);
    orders.push_back(size + ": " + join(order, " > "));
    if (first.empty())
      first = order;
    else if (order != first)
      changed_at.push_back(size);
  }
  if (!orders.empty())
    s.statements.push_back(std::string(changed_at.empty() ? "the ranking is the same at every measured size"
                                                          : "the ranking changes within the measured sizes") +
                           " (best first; " + join(orders, "; ") + ")");
  std::vector<std::pair<double, std::string>> up;
  std::string where;
  for (const ScaleSeries& series : s.series)
    if (series.fit.defined()) {
      up.emplace_back(series.fit.at(series.next_n), series.label);
      where += (where.empty() ? "" : ", ") + series.label + " at N " + printf_text(series.next_n, "%.4g") + ": " +
               printf_text(series.fit.at(series.next_n), "%.4g");
    }
  if (up.size() >= 2) {
    const std::vector<std::string> order = ranked(up);
    s.statements.push_back(
        "extrapolated one size up (beyond the measured range: an extrapolation of the fits, not a "
        "measurement): " +
        join(order, " > ") + (first.empty() || order == first ? " (as measured)" : " (not as measured)") + "; " + where);
  }
  return s;
}

void draw_scaling_figure(const Comparison& c, const std::filesystem::path& file) {
  const ScalingAnalysis& s = c.scaling;
  LinePlot plot;
  plot.title = c.value_label + " against model size, with the fits L = E + A N^-alpha";
  plot.subtitle = "sizes: " + join(s.keys, " · ") + "; fits drawn on to one size up (extrapolation)";
  plot.x_label = "log10 non-embedding parameters";
  plot.y_label = c.value_label;
  for (const ScaleSeries& series : s.series) {
    Series data;
    data.label = series.label;
    for (const ScalePoint& p : series.points) {
      if (!(p.n > 0)) continue;
      data.x.push_back(std::log10(p.n));
      data.mean.push_back(p.mean);
      data.lower.push_back(p.values.empty() ? p.mean : *std::min_element(p.values.begin(), p.values.end()));
      data.upper.push_back(p.values.empty() ? p.mean : *std::max_element(p.values.begin(), p.values.end()));
    }
    plot.series.push_back(std::move(data));
    if (!series.fit.defined()) continue;
    Series fit;
    fit.label = series.label + " fit (alpha " + printf_text(series.fit.alpha, "%.3g") + ")";
    const double lo = std::log10(series.points.front().n), hi = std::log10(series.next_n);
    for (int i = 0; i <= 40; ++i) {
      const double x = lo + (hi - lo) * i / 40.0;
      fit.x.push_back(x);
      fit.mean.push_back(series.fit.at(std::pow(10.0, x)));
    }
    plot.series.push_back(std::move(fit));
  }
  line_plot(file, plot);
}

}  // namespace ablate::analysis
