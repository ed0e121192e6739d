// Reducing a run to one number (see run_value.hpp): the forms of --summary and their values over
// a run's eval curve (and, for time_to, its train rows' elapsed seconds).
#include "analysis/run_value.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
namespace {

const char* kForms = "final | best | last:K | auc | steps_to:TARGET | time_to:TARGET (e.g. steps_to:0.9)";

}  // namespace

std::string RunValueSpec::text() const {
  switch (kind) {
    case Kind::final: return "final";
    case Kind::best: return "best";
    case Kind::last_mean: return "last:" + std::to_string(last);
    case Kind::auc: return "auc";
    case Kind::steps_to: return "steps_to:" + number_text(target);
    case Kind::time_to: return "time_to:" + number_text(target);
  }
  return "?";
}

std::string RunValueSpec::describe(const std::string& metric, bool metric_higher_is_better) const {
  const std::string reach = metric + (metric_higher_is_better ? " ≥ " : " ≤ ") + number_text(target);
  switch (kind) {
    case Kind::final: return "final " + metric;
    case Kind::best: return "best " + metric;
    case Kind::last_mean: return "mean of the last " + std::to_string(last) + " " + metric;
    case Kind::auc: return metric + " averaged over training (area under the curve)";
    case Kind::steps_to: return "steps to " + reach;
    case Kind::time_to: return "seconds to " + reach;
  }
  return "?";
}

bool RunValueSpec::higher_is_better(bool metric_higher_is_better) const { return to_target() ? false : metric_higher_is_better; }

RunValueSpec parse_run_value(const std::string& text) {
  RunValueSpec spec;
  const auto colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? std::string() : text.substr(colon + 1);
  const auto bad = [&](const std::string& why) {
    return UsageError("--summary '" + text + "': " + why, std::string("allowed: ") + kForms);
  };
  const auto no_argument = [&](RunValueSpec::Kind kind) {
    if (colon != std::string::npos) throw bad("'" + head + "' takes no argument");
    spec.kind = kind;
    return spec;
  };
  if (head == "final") return no_argument(RunValueSpec::Kind::final);
  if (head == "best") return no_argument(RunValueSpec::Kind::best);
  if (head == "auc") return no_argument(RunValueSpec::Kind::auc);
  if (head == "last") {
    std::size_t k = 0;
    const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), k);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size() || k == 0)
      throw bad("last:K needs a whole number K >= 1 of evaluations");
    spec.kind = RunValueSpec::Kind::last_mean;
    spec.last = k;
    return spec;
  }
  if (head == "steps_to" || head == "time_to") {
    double target = 0.0;
    const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), target);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size() || !std::isfinite(target))
      throw bad(head + ":TARGET needs a number, the metric value to reach");
    spec.kind = head == "steps_to" ? RunValueSpec::Kind::steps_to : RunValueSpec::Kind::time_to;
    spec.target = target;
    return spec;
  }
  throw bad("unknown summary '" + head + "'");
}

RunValue run_value(const RunSummary& run, const std::string& metric, bool metric_higher_is_better, const RunValueSpec& spec) {
  RunValue out;
  if (spec.kind == RunValueSpec::Kind::final) {
    const auto it = run.final_metrics.find(metric);
    if (it != run.final_metrics.end()) out.value = it->second;
    return out;
  }
  const auto curve_it = run.eval_curves.find(metric);
  if (curve_it == run.eval_curves.end() || curve_it->second.empty()) return out;
  const auto& curve = curve_it->second;  // (step, value), steps increasing
  std::vector<std::pair<double, double>> finite;
  for (const auto& [step, v] : curve)
    if (std::isfinite(v)) finite.emplace_back(static_cast<double>(step), v);
  switch (spec.kind) {
    case RunValueSpec::Kind::final: break;
    case RunValueSpec::Kind::best:
      for (const auto& [step, v] : finite)
        if (std::isnan(out.value) || (metric_higher_is_better ? v > out.value : v < out.value)) out.value = v;
      break;
    case RunValueSpec::Kind::last_mean: {
      if (finite.empty()) break;
      const std::size_t k = std::min(spec.last, finite.size());
      double sum = 0.0;
      for (std::size_t i = finite.size() - k; i < finite.size(); ++i) sum += finite[i].second;
      out.value = sum / static_cast<double>(k);
      break;
    }
    case RunValueSpec::Kind::auc: {
      if (finite.empty()) break;
      if (finite.size() == 1) {
        out.value = finite[0].second;
        break;
      }
      double area = 0.0;
      for (std::size_t i = 1; i < finite.size(); ++i)
        area += 0.5 * (finite[i].second + finite[i - 1].second) * (finite[i].first - finite[i - 1].first);
      out.value = area / (finite.back().first - finite.front().first);
      break;
    }
    case RunValueSpec::Kind::steps_to:
    case RunValueSpec::Kind::time_to: {
      std::int64_t at = curve.back().first;
      out.censored = true;
      for (const auto& [step, v] : curve) {
        if (metric_higher_is_better ? v >= spec.target : v <= spec.target) {  // NaN never reaches
          at = step;
          out.censored = false;
          break;
        }
      }
      if (spec.kind == RunValueSpec::Kind::steps_to) {
        out.value = static_cast<double>(at);
      } else {  // the elapsed seconds of the last train row at or before that step
        for (const auto& [step, seconds] : run.elapsed_s)
          if (step <= at) out.value = seconds;
      }
      break;
    }
  }
  return out;
}

}  // namespace ablate::analysis
