// Across model sizes (`ablate compare --scale KEY[,KEY]`, docs/analysis.md "Across model sizes"):
// the arms that differ only in the size keys form a series; each series' compared value is fitted
// against its non-embedding parameters N as L = E + A N^-alpha, with a bootstrap interval for alpha,
// and the report says whether the series' ranking changes within the measured sizes or one size up.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/stats.hpp"

namespace ablate::analysis {

struct Comparison;  // compare.hpp

// y = e + a n^-alpha. rss: the residual sum of squares of the fit.
struct PowerLaw {
  double e = NAN, a = NAN, alpha = NAN, rss = NAN;
  bool defined() const { return std::isfinite(alpha); }
  double at(double n) const { return e + a * std::pow(n, -alpha); }
};

// The least-squares fit of y (one value per size) against e + a n^-alpha, on the values themselves
// (what scipy's curve_fit minimises): for a fixed alpha, e and a are a linear least-squares fit, so
// only alpha is searched (on a log grid over [1e-3, 4], then by golden section around the best),
// keeping a's sign `sign` (+1: y falls with n, a loss; -1: y rises, an accuracy). Undefined (NaN)
// with fewer than 3 sizes, or when no alpha gives a of that sign.
PowerLaw fit_power_law(const std::vector<double>& n, const std::vector<double>& y, int sign = 1);

struct ScalePoint {
  std::string arm;             // Arm::label
  std::string size;            // the size keys' values: "64 · 2"
  double n = NAN;              // non-embedding parameters (Arm::non_embedding_parameters)
  double mean = NAN;           // Arm::mean
  std::vector<double> values;  // Arm::metric_values
};

struct ScaleSeries {
  std::string label;               // the other keys' values ("swiglu"); "all runs" when only the size varies
  std::vector<ScalePoint> points;  // by N
  PowerLaw fit;
  Interval alpha_interval;  // percentile bootstrap over the seeds of each size (NaN with one value per size)
  double next_n = NAN;      // one size up: N times the ratio of its last two sizes
  std::string note;         // why there is no fit, when there is none
};

struct ScalingAnalysis {
  std::vector<std::string> keys;  // the size keys
  std::vector<ScaleSeries> series;
  std::vector<std::string> statements;  // the ranking within the measured sizes, and one size up
  bool defined() const { return !series.empty(); }
};

// From a comparison whose arms include the size keys among their keys. Throws ablate::UsageError
// when a size key is not a key the arms differ by.
ScalingAnalysis scaling_analysis(const Comparison& c, const std::vector<std::string>& size_keys);

// The figure: the compared value against log10 N, one line per series (mean over seeds, min–max
// band) and its fitted curve, dashed on to one size up. Written as `file`.
void draw_scaling_figure(const Comparison& c, const std::filesystem::path& file);

}  // namespace ablate::analysis
