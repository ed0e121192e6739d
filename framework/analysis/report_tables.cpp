// The cells and sentences of `ablate compare` (see report.hpp), built once from a Comparison: the
// arms, effects and interactions tables that the terminal, Markdown, LaTeX and HTML renderings
// lay out (so they always show the same numbers), the interpretation and the caveats.
#include "analysis/report_tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "analysis/report.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
using namespace detail;

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string signed_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", decimals, v);
  return buf;
}

// 3 significant digits (0.0123, 0.500, 1.00); below 0.001 just "<0.001" (the CSV has the value).
std::string p_text(double p) { return std::isnan(p) ? "n/a" : p < 0.001 ? "<0.001" : printf_text(p, "%#.3g"); }

// Decimals for the metric's mean, std and Δ: four significant digits of the largest mean, and at
// least two of the smallest non-zero std; between 0 and 6.
int metric_decimals(const Comparison& c) {
  double largest = 0.0, smallest_std = INFINITY;
  for (const auto& arm : c.arms) {
    if (std::isfinite(arm.mean)) largest = std::max(largest, std::fabs(arm.mean));
    if (std::isfinite(arm.std) && arm.std > 0.0) smallest_std = std::min(smallest_std, arm.std);
  }
  int decimals = largest > 0.0 ? 3 - static_cast<int>(std::floor(std::log10(largest))) : 4;
  if (std::isfinite(smallest_std)) decimals = std::max(decimals, 1 - static_cast<int>(std::floor(std::log10(smallest_std))));
  return std::clamp(decimals, 0, 6);
}

std::string interval(double low, double high, int decimals) {
  if (std::isnan(low) || std::isnan(high)) return "";
  std::string out = "[";  // appended, not "[" + ...: GCC 12 warns falsely (-Wrestrict) on that
  out += signed_fixed(low, decimals) + ", " + signed_fixed(high, decimals) + "]";
  return out;
}

std::string delta_cell(double delta, double low, double high, int decimals) {
  if (std::isnan(delta)) return "n/a";
  const std::string ci = interval(low, high, decimals);
  return signed_fixed(delta, decimals) + (ci.empty() ? "" : " " + ci);
}

std::string confidence_text(const Comparison& c) { return g(100.0 * (1.0 - c.alpha)) + "%"; }

std::string test_name(const Comparison& c) { return c.paired ? "a t-test paired by seed" : "Welch's t-test"; }

bool any_lost(const Comparison& c) {
  return std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) {
    return a.n_diverged + a.n_failed + a.n_interrupted + a.n_running + a.n_missing_metric > 0;
  });
}

std::string lost_cell(const Arm& arm) {
  std::vector<std::string> parts;
  if (arm.n_diverged > 0) parts.push_back(std::to_string(arm.n_diverged) + " div");
  if (arm.n_failed > 0) parts.push_back(std::to_string(arm.n_failed) + " fail");
  if (arm.n_interrupted + arm.n_running > 0) parts.push_back(std::to_string(arm.n_interrupted + arm.n_running) + " unfin");
  if (arm.n_missing_metric > 0) parts.push_back(std::to_string(arm.n_missing_metric) + " no value");
  return join(parts, ", ");
}

std::string effect_name(const MainEffect& e) { return e.level + " − " + e.reference; }

// Why an arm has no value: its runs by status ("2 failed, 1 completed without a value").
std::string no_value_reason(const Arm& a) {
  std::vector<std::string> parts;
  const std::pair<std::size_t, const char*> counts[] = {{a.n_failed, "failed"},
                                                        {a.n_diverged, "diverged"},
                                                        {a.n_interrupted, "interrupted"},
                                                        {a.n_running, "still running"},
                                                        {a.n_missing_metric, "completed without a finite value"}};
  for (const auto& [n, what] : counts)
    if (n) parts.push_back(std::to_string(n) + " " + what);
  return a.n_runs == 0 ? "no runs" : std::to_string(a.n_runs) + (a.n_runs == 1 ? " run: " : " runs: ") + join(parts, ", ");
}

}  // namespace

namespace detail {

std::string direction(const Comparison& c) { return std::string(c.higher_is_better ? "higher is better" : "lower is better"); }

std::string g(double v) { return printf_text(v, "%g"); }

std::optional<std::string> nothing_to_compare(const Comparison& c) {
  const bool any_value = std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.n() > 0; });
  if (!any_value) {
    std::vector<std::string> why;
    for (const Arm& a : c.arms) why.push_back(a.label + " (" + no_value_reason(a) + ")");
    return "Nothing to compare: no run has a value of " + c.value_label + " (" + join(why, "; ") +
           "). No arm is better or worse than another on these runs.";
  }
  if (c.arms.size() > 1 && c.arms[c.baseline].n() == 0)
    return "Nothing to compare against: the baseline arm " + c.arms[c.baseline].label + " has no value of " + c.value_label +
           " (" + no_value_reason(c.arms[c.baseline]) +
           "), so no arm is tested against it and none is called better; the other arms' values are in the table.";
  return std::nullopt;
}

}  // namespace detail

Table arms_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  Table t;
  t.title = c.value_label + " per arm";
  const bool holm = std::count_if(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.test.defined(); }) > 1;
  const bool seeds = std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.seeds_needed.has_value(); });
  const bool lost = any_lost(c);
  t.header = {"arm"};
  for (const std::string& key : c.tuned_keys) t.header.push_back(key.substr(key.rfind('.') + 1) + " (tuned)");
  for (const char* h : {"n", "mean ± sd"}) t.header.push_back(h);
  t.header.push_back("Δ [" + confidence_text(c) + " CI]");
  t.header.push_back("p");
  if (holm) t.header.push_back("p(Holm)");
  if (seeds) t.header.push_back("seeds");
  if (lost) t.header.push_back("lost");
  t.right.assign(t.header.size(), true);
  t.right[0] = false;
  for (const auto& arm : c.arms) {
    std::vector<std::string> row = {arm.label};
    for (const std::string& key : c.tuned_keys) row.push_back(arm.tuned.count(key) ? arm.tuned.at(key) : "");
    row.push_back(std::to_string(arm.n()));
    std::string value = arm.n() == 0 ? "n/a" : (arm.n_censored > 0 ? "≥" : "") + fixed(arm.mean, decimals);
    if (arm.n() > 1) value += " ± " + fixed(arm.std, decimals);
    row.push_back(value);
    if (arm.is_baseline) {
      row.push_back(c.arms.size() > 1 ? "baseline" : "");
      row.push_back("");
      if (holm) row.push_back("");
    } else {
      row.push_back(delta_cell(arm.delta, arm.test.ci_low, arm.test.ci_high, decimals));
      row.push_back(p_text(arm.test.p) + (arm.test.p < c.alpha ? "*" : ""));
      if (holm) row.push_back(p_text(arm.p_holm) + (arm.p_holm < c.alpha ? "*" : ""));
    }
    if (seeds) row.push_back(arm.seeds_needed ? std::to_string(*arm.seeds_needed) : "");
    if (lost) row.push_back(lost_cell(arm));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table effects_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  Table t;
  t.title = "main effects on " + c.value_label;
  const bool seeds = std::any_of(c.factorial.main_effects.begin(), c.factorial.main_effects.end(),
                                 [](const MainEffect& e) { return !std::isnan(e.seeds_per_cell_needed); });
  t.header = {"factor", "level − reference", "Δ [" + confidence_text(c) + " CI]", "p"};
  if (seeds) t.header.push_back("seeds/cell");
  t.right = {false, false, true, true, true};
  t.right.resize(t.header.size());
  if (!c.factorial.defined) return t;
  for (const auto& e : c.factorial.main_effects) {
    std::vector<std::string> row = {e.factor, effect_name(e), delta_cell(e.estimate, e.ci_low, e.ci_high, decimals),
                                    p_text(e.p) + (e.p < c.alpha ? "*" : "")};
    if (seeds) row.push_back(std::isnan(e.seeds_per_cell_needed) ? "" : fixed(e.seeds_per_cell_needed, 0));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table scaling_table(const Comparison& c) {
  Table t;
  t.title = "Across model sizes (" + join(c.scaling.keys, " · ") + "): " + c.value_label + " = E + A N^-alpha per series";
  t.header = {"series", "size", "N (non-embedding)", "mean", "n", "E", "A", "alpha [" + g(100 * (1 - c.alpha)) + "% CI]"};
  t.right = {false, false, true, true, true, true, true, true};
  for (const ScaleSeries& s : c.scaling.series)
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const ScalePoint& p = s.points[i];
      std::vector<std::string> row = {i == 0 ? s.label : "", p.size, p.n > 0 ? g(p.n) : "?", g(p.mean),
                                      std::to_string(p.values.size())};
      if (i == 0 && s.fit.defined()) {
        const Interval& ci = s.alpha_interval;
        row.insert(row.end(), {g(s.fit.e), g(s.fit.a),
                               g(s.fit.alpha) + (std::isfinite(ci.low) ? " [" + g(ci.low) + ", " + g(ci.high) + "]" : "")});
      } else {
        row.insert(row.end(), {"", "", i == 0 || (i == 1 && s.fit.defined()) ? s.note : ""});
      }
      t.rows.push_back(std::move(row));
    }
  return t;
}

Table compute_table(const Comparison& c) {
  Table t;
  t.title = "Compute per arm";
  t.header = {"arm", "parameters", "non-embedding", "training FLOPs / token"};
  t.right = {false, true, true, true};
  for (const Arm& arm : c.arms)
    if (arm.parameters >= 0 || std::isfinite(arm.flops_per_token))
      t.rows.push_back({arm.label, arm.parameters >= 0 ? std::to_string(arm.parameters) : "?",
                        arm.non_embedding_parameters >= 0 ? std::to_string(arm.non_embedding_parameters) : "?",
                        std::isfinite(arm.flops_per_token) ? printf_text(arm.flops_per_token, "%.4g") : "?"});
  return t;
}

Table interactions_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  Table t;
  t.title = "interactions";
  t.header = {"interaction", "F", "p", "Δ of Δ [" + confidence_text(c) + " CI]"};
  t.right = {false, true, true, true};
  if (!c.factorial.defined) return t;
  for (const auto& term : c.factorial.terms) {
    if (term.name.find(" × ") == std::string::npos) continue;
    t.rows.push_back({term.name, std::isnan(term.f) ? "n/a" : printf_text(term.f, "%.3g"),
                      p_text(term.p) + (term.p < c.alpha ? "*" : ""),
                      std::isnan(term.estimate) ? "" : delta_cell(term.estimate, term.ci_low, term.ci_high, decimals)});
  }
  return t;
}

std::vector<std::string> interpretation(const Comparison& c) {
  std::vector<std::string> out;
  if (auto nothing = nothing_to_compare(c)) {
    out.push_back(*nothing);
    return out;
  }
  const int decimals = metric_decimals(c);
  const auto verdict = [&](double delta) {
    if (delta == 0.0) return std::string();
    return std::string((delta > 0) == c.higher_is_better ? " (better)" : " (worse)");
  };
  if (c.factorial.defined) {
    for (const auto& e : c.factorial.main_effects) {
      const std::string ci = interval(e.ci_low, e.ci_high, decimals);
      if (e.p < c.alpha) {
        out.push_back(e.factor + ": " + e.level + " instead of " + e.reference + " changes " + c.value_label + " by " +
                      signed_fixed(e.estimate, decimals) + verdict(e.estimate) + ", " + confidence_text(c) + " CI " + ci +
                      ", p = " + p_text(e.p) + ", averaged over the other factors.");
      } else {
        std::string s = e.factor + ": no effect of " + e.level + " against " + e.reference + " was detected (Δ " +
                        signed_fixed(e.estimate, decimals) + ", CI " + ci + ", p = " + p_text(e.p) +
                        "); the interval says how large an effect these runs cannot rule out.";
        if (!std::isnan(e.seeds_per_cell_needed))
          s += " An effect of the observed size would be detected (80% power) with about " + fixed(e.seeds_per_cell_needed, 0) +
               " seed(s) per cell.";
        out.push_back(s);
      }
    }
    for (const auto& term : c.factorial.terms)
      if (term.name.find(" × ") != std::string::npos && term.p < c.alpha)
        out.push_back("The factors " + term.name + " interact (F = " + printf_text(term.f, "%.3g") + ", p = " + p_text(term.p) +
                      "): the effect of one depends on the level of the other, so read its main "
                      "effect as an average.");
  } else if (c.arms.size() > 1) {
    std::vector<std::string> detected;
    for (const auto& arm : c.arms) {
      if (arm.is_baseline || !(arm.p_holm < c.alpha)) continue;
      detected.push_back(arm.label + " differs from the baseline by " + signed_fixed(arm.delta, decimals) + verdict(arm.delta) +
                         " (CI " + interval(arm.test.ci_low, arm.test.ci_high, decimals) + ", p(Holm) = " + p_text(arm.p_holm) +
                         ").");
    }
    if (detected.empty())
      out.push_back("No arm differs detectably from the baseline (" + test_name(c) + ", Holm-corrected); the " +
                    "intervals say how large a difference these runs cannot rule out.");
    out.insert(out.end(), detected.begin(), detected.end());
  }
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < c.arms.size(); ++i) {
    if (std::isnan(c.arms[i].mean)) continue;
    if (!best || (c.higher_is_better ? c.arms[i].mean > c.arms[*best].mean : c.arms[i].mean < c.arms[*best].mean)) best = i;
  }
  if (best && c.arms.size() > 1) {
    std::size_t fewest = SIZE_MAX;
    for (const auto& arm : c.arms) fewest = std::min(fewest, arm.n());
    std::vector<std::string> tied;  // every arm with the best mean
    for (const auto& arm : c.arms)
      if (arm.mean == c.arms[*best].mean) tied.push_back(arm.label);
    out.push_back((tied.size() == 1 ? "The best arm by mean is " : "The best arms by mean, tied, are ") + join(tied, "; ") +
                  " (" + fixed(c.arms[*best].mean, decimals) + ")" +
                  (fewest <= 1 ? "; with one run per arm the ranking of arms is itself noisy." : "."));
  }
  return out;
}

std::vector<std::string> caveats(const Comparison& c) {
  std::vector<std::string> out;
  out.push_back("Each run is reduced to " + c.value_label + " (" + c.summary_source + "; " + direction(c) +
                "); an arm's mean ± sd is over its completed runs. Δ is arm minus baseline with a " + confidence_text(c) +
                " t-interval and the p of " + test_name(c) + ".");
  if (c.factorial.defined) {
    std::string model = "Main effects come from one linear model over all " + std::to_string(c.factorial.observations) +
                        " runs (sum-to-zero coded factors";
    if (c.factorial.interactions) model += ", their two-way interactions";
    if (c.factorial.blocked) model += ", seeds as blocks";
    model += "; residual df " + g(c.factorial.df_resid) +
             "): a main effect is the difference between a factor's levels "
             "averaged over the other factors, tested against the residual spread; interactions by Type III F tests. "
             "Their p-values are not corrected across factors.";
    out.push_back(model);
  }
  const bool seeds = std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.seeds_needed.has_value(); });
  const bool cells = std::any_of(c.factorial.main_effects.begin(), c.factorial.main_effects.end(),
                                 [](const MainEffect& e) { return !std::isnan(e.seeds_per_cell_needed); });
  if (seeds || cells) {
    const std::string what = seeds && cells ? "`seeds` (per arm) and `seeds/cell`: the seeds"
                             : seeds        ? "`seeds`: the seeds per arm"
                                            : "`seeds/cell`: the seeds per cell";
    out.push_back(what + " at which a test at α " + g(c.alpha) +
                  " would detect a difference of the observed size with "
                  "80% power, taking the observed spread as the truth (a guide for the next sweep, not a property of "
                  "this one).");
  }
  if (any_lost(c))
    out.push_back(
        "`lost`: runs not in the statistics — div(erged), fail(ed), unfin(ished: interrupted or running), or "
        "completed without a value.");
  if (!c.factorial.note.empty()) out.push_back("Factorial analysis: " + c.factorial.note + ".");
  for (const auto& note : c.notes) out.push_back(note + (note.ends_with(".") ? "" : "."));
  return out;
}

}  // namespace ablate::analysis
