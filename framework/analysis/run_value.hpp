// How one run is reduced to the number its arm is compared by (`ablate compare --summary`): the
// final eval value, the best, the mean of the last k evaluations, the area under the curve, or the
// steps / wall time to a target, where a run that never reaches the target is censored, not dropped.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

namespace ablate::analysis {

struct RunSummary;  // compare.hpp

struct RunValueSpec {
  enum class Kind { final, best, last_mean, auc, steps_to, time_to };
  Kind kind = Kind::final;
  double target = NAN;   // steps_to / time_to
  std::size_t last = 5;  // last_mean: how many evaluations

  // The text --summary takes: "final", "best", "last:5", "auc", "steps_to:0.9", "time_to:0.9".
  std::string text() const;
  // What the value is, for headers: "steps to exact_match ≥ 0.99", "final loss", "mean of the last 5 loss".
  std::string describe(const std::string& metric, bool metric_higher_is_better) const;
  // Whether larger values are better: the metric's direction, except fewer steps or seconds are.
  bool higher_is_better(bool metric_higher_is_better) const;
  bool to_target() const { return kind == Kind::steps_to || kind == Kind::time_to; }
};

// Parses the text of --summary; throws ablate::UsageError naming the allowed forms.
RunValueSpec parse_run_value(const std::string& text);

// One run's value. For steps_to / time_to: the first eval step (or the wall time at that step) at
// which the metric reaches the target (>= for a higher-is-better metric, <= otherwise); a run that
// never does is censored at its last evaluation (value = that step or time, censored = true).
// final: the last eval row; best: the best finite value; last_mean: the mean of the last k finite
// values; auc: the trapezoidal area under the curve over steps divided by the step range (the
// curve's average level; a single evaluation gives its value). NaN when the run has no such curve.
struct RunValue {
  double value = NAN;
  bool censored = false;
};
RunValue run_value(const RunSummary& run, const std::string& metric, bool metric_higher_is_better, const RunValueSpec& spec);

}  // namespace ablate::analysis
