// The renderers of `ablate compare` (see report.hpp). One set of cell formatters feeds both the
// terminal and the markdown table, so the two always show the same numbers; CSV and JSON carry
// the full-precision values instead.
#include "analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <vector>

#include "core/text.hpp"

namespace ablate::analysis {
namespace {

std::string printf_text(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

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

std::string p_text(double p) { return printf_text("%#.3g", p); }  // 3 significant digits: 0.0123, 0.500, 1.00

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;  // count UTF-8 lead bytes, not continuations
  return n;
}

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

bool any_other_status(const Comparison& c) {
  return std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.n_interrupted + a.n_running > 0; });
}

std::string threshold_header(const Comparison& c) {
  return std::string("steps to ") + (c.higher_is_better ? "≥ " : "≤ ") + printf_text("%g", *c.threshold);
}

std::string direction(const Comparison& c) {
  return std::string(c.higher_is_better ? "higher is better" : "lower is better") +
         (c.higher_is_better_inferred ? "" : ", as set");
}

std::vector<std::string> header(const Comparison& c) {
  std::vector<std::string> h = {"arm", "runs", c.metric + " mean ± std (n)", "Δ vs baseline", "p", "diverged", "failed"};
  if (any_other_status(c)) h.push_back("interrupted/running");
  if (c.threshold) h.push_back(threshold_header(c));
  h.push_back("tokens/s");
  return h;
}

// The cells of one arm, shared by the terminal and markdown tables.
std::vector<std::string> cells(const Comparison& c, const Arm& arm, int decimals) {
  std::vector<std::string> row;
  row.push_back(arm.label);
  row.push_back(std::to_string(arm.n_runs));
  const std::string n = " (" + std::to_string(arm.n()) + ")";
  if (arm.n() == 0) row.push_back("n/a" + n);
  else if (arm.n() == 1) row.push_back(fixed(arm.mean, decimals) + n);
  else row.push_back(fixed(arm.mean, decimals) + " ± " + fixed(arm.std, decimals) + n);
  if (arm.is_baseline) {
    row.push_back(c.arms.size() > 1 ? "baseline" : "");
    row.push_back("");
  } else {
    row.push_back(std::isnan(arm.delta) ? "n/a" : signed_fixed(arm.delta, decimals));
    row.push_back(arm.test.defined() ? p_text(arm.test.p) + (arm.test.p < c.alpha ? " *" : "") : "n/a");
  }
  row.push_back(std::to_string(arm.n_diverged));
  row.push_back(std::to_string(arm.n_failed));
  if (any_other_status(c)) row.push_back(std::to_string(arm.n_interrupted + arm.n_running));
  if (c.threshold) {
    const std::string count = " (" + std::to_string(arm.threshold_reached) + "/" + std::to_string(arm.threshold_considered) + ")";
    row.push_back(arm.threshold_reached > 0 ? fixed(arm.threshold_step_mean, 0) + count : "n/a" + count);
  }
  row.push_back(std::isnan(arm.tokens_per_s_mean) ? "n/a" : fixed(arm.tokens_per_s_mean, 0));
  return row;
}

std::string summary_line(const Comparison& c) {
  std::string line = "metric: " + c.metric + " (final eval value; " + direction(c) + ")";
  if (c.arms.size() > 1) line += " · baseline: " + c.arms[c.baseline].label;
  line += " · mean ± sample std over completed runs · p: Welch's two-sided t-test, * p < " + printf_text("%g", c.alpha);
  return line;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string run_list(const Arm& arm, RunStatus status) {
  std::vector<std::string> names;
  for (const auto& run : arm.runs)
    if (run.status == status) names.push_back(run.run_id.empty() ? run.path : run.run_id);
  return join(names, ", ");
}

std::string arm_paragraph(const Comparison& c, const Arm& arm, int decimals) {
  const Arm& base = c.arms[c.baseline];
  std::ostringstream out;
  out << "**`" << arm.label << "`**" << (arm.is_baseline ? " (baseline)" : "") << ": ";
  if (arm.n() == 0) {
    out << "no completed run has a final " << c.metric << ", so this arm has no mean.";
  } else if (arm.n() == 1) {
    out << c.metric << " = " << fixed(arm.mean, decimals) << " from a single completed run: no spread can be estimated.";
  } else {
    out << "mean " << c.metric << " " << fixed(arm.mean, decimals) << " ± " << fixed(arm.std, decimals)
        << " (sample std) over n = " << arm.n() << " completed runs.";
  }
  if (!arm.is_baseline && !std::isnan(arm.delta)) {
    out << " Δ = " << signed_fixed(arm.delta, decimals) << " against the baseline";
    if (arm.delta != 0.0)
      out << " (" << ((arm.delta > 0) == c.higher_is_better ? "better" : "worse") << " on average, as " << direction(c) << ")";
    out << ".";
  }
  if (!arm.is_baseline) {
    const std::string ns = "n = " + std::to_string(arm.n()) + " and " + std::to_string(base.n());
    if (!arm.test.defined()) {
      out << " No p-value: " << arm.test.note << ".";
    } else if (arm.test.p < c.alpha) {
      out << " p = " << p_text(arm.test.p) << " < " << printf_text("%g", c.alpha)
          << ": a difference this large would be unlikely if both arms had the same mean, so a difference was "
             "detected; with "
          << ns << " runs its size is only roughly known.";
    } else {
      out << " p = " << p_text(arm.test.p) << " ≥ " << printf_text("%g", c.alpha) << ": with " << ns
          << " runs no difference was detected. That is not evidence that there is none: a real difference of this "
             "size can go unnoticed with so few seeds.";
    }
  }
  if (arm.n_diverged > 0)
    out << " " << arm.n_diverged << " of its " << arm.n_runs << " runs diverged (" << run_list(arm, RunStatus::diverged)
        << ") and " << (arm.n_diverged == 1 ? "is" : "are")
        << " not in the mean: the mean describes only the runs that completed, and divergence is a result in itself.";
  std::vector<std::string> left_out;
  if (arm.n_failed > 0) left_out.push_back(std::to_string(arm.n_failed) + " failed (" + run_list(arm, RunStatus::failed) + ")");
  if (arm.n_interrupted > 0)
    left_out.push_back(std::to_string(arm.n_interrupted) + " interrupted (" + run_list(arm, RunStatus::interrupted) + ")");
  if (arm.n_running > 0)
    left_out.push_back(std::to_string(arm.n_running) + " still running (" + run_list(arm, RunStatus::running) + ")");
  if (!left_out.empty()) out << " Not counted in the mean: " << join(left_out, ", ") << ".";
  if (arm.n_missing_metric > 0)
    out << " " << arm.n_missing_metric << " completed run(s) have no finite final " << c.metric << " and are not in the mean.";
  if (c.threshold && arm.threshold_considered > 0) {
    const std::string what = c.metric + (c.higher_is_better ? " ≥ " : " ≤ ") + printf_text("%g", *c.threshold);
    if (arm.threshold_reached == 0) {
      out << " No completed run reached " << what << ".";
    } else {
      out << " " << arm.threshold_reached << " of " << arm.threshold_considered << " completed runs reached " << what
          << ", at step " << fixed(arm.threshold_step_mean, 0) << " on average";
      if (arm.threshold_reached < arm.threshold_considered)
        out << " (an average over those that did only: it leaves out the slowest)";
      out << ".";
    }
  }
  return out.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csv_number(double v) { return std::isnan(v) ? std::string() : number_text(v); }

std::string json_number(double v) { return std::isfinite(v) ? number_text(v) : std::string("null"); }

std::string json_strings(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(json_quote(s));
  std::string out = "[";  // appended, not "[" + join(...): GCC 12 warns falsely (-Wrestrict) on that
  out += join(quoted, ", ");
  return out + "]";
}

}  // namespace

std::string format_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  std::vector<std::vector<std::string>> rows = {header(c)};
  for (const auto& arm : c.arms) rows.push_back(cells(c, arm, decimals));
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));

  std::string out = summary_line(c) + "\n";
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - display_width(row[i]) + 2, ' ');
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  // Why p is n/a, once per reason (one seed per arm gives every arm the same one).
  std::vector<std::pair<std::string, std::vector<std::string>>> untested;  // note -> arm labels
  std::size_t compared = 0;
  for (const auto& arm : c.arms) {
    if (arm.is_baseline) continue;
    ++compared;
    if (arm.test.defined()) continue;
    auto it = std::find_if(untested.begin(), untested.end(), [&](const auto& u) { return u.first == arm.test.note; });
    if (it == untested.end()) it = untested.insert(untested.end(), {arm.test.note, {}});
    it->second.push_back(arm.label);
  }
  for (const auto& [note, labels] : untested)
    out += "p n/a for " + (labels.size() > 1 && labels.size() == compared ? std::string("every arm") : join(labels, "; ")) + ": " +
           note + "\n";
  for (const auto& note : c.notes) out += "note: " + note + "\n";
  return out;
}

std::string report_markdown(const Comparison& c) {
  const int decimals = metric_decimals(c);
  std::size_t total = 0;
  for (const auto& arm : c.arms) total += arm.n_runs;
  std::ostringstream out;
  out << "# Comparison: " << c.metric << "\n\n";
  out << "- Runs: " << total << ", in " << c.arms.size() << (c.arms.size() == 1 ? " arm" : " arms");
  if (!c.keys.empty()) {
    std::vector<std::string> keys;
    for (const auto& k : c.keys) keys.push_back("`" + k + "`");
    out << " that differ in " << join(keys, ", ");
  }
  out << ". Runs that differ only in `train.seed` are replicates of one arm.\n";
  out << "- Metric: `" << c.metric << "`, the final evaluation value of each run (" << direction(c) << ").\n";
  if (c.arms.size() > 1)
    out << "- Baseline: `" << c.arms[c.baseline].label
        << "`. Δ is an arm's mean minus the baseline's mean; p is Welch's two-sided t-test of that difference "
           "(unequal variances), * marks p < "
        << printf_text("%g", c.alpha) << ".\n";
  out << "- mean ± std (n): std is the sample standard deviation across runs (n − 1 in the denominator); n counts the "
         "completed runs with a final "
      << c.metric << ". Diverged, failed, interrupted and running runs are counted in their own columns, not in the means.\n";
  if (c.threshold)
    out << "- " << threshold_header(c) << ": the first evaluation step at which " << c.metric << " reached "
        << printf_text("%g", *c.threshold)
        << ", averaged over the completed runs that reached it (reached/considered in brackets).\n";
  out << "- tokens/s: the mean over completed runs of each run's median training throughput.\n\n";

  const auto h = header(c);
  std::vector<std::string> escaped;
  for (const auto& cell : h) escaped.push_back(md_escape(cell));
  out << "| " << join(escaped, " | ") << " |\n|";
  for (std::size_t i = 0; i < h.size(); ++i) out << (i == 0 ? ":---|" : "---:|");
  out << "\n";
  for (const auto& arm : c.arms) {
    auto row = cells(c, arm, decimals);
    for (auto& cell : row) cell = md_escape(cell);
    row.front() = "`" + row.front() + "`";
    out << "| " << join(row, " | ") << " |\n";
  }

  out << "\n## What the numbers show, and what they do not\n\n";
  for (const auto& arm : c.arms) out << arm_paragraph(c, arm, decimals) << "\n\n";
  std::size_t smallest = SIZE_MAX;
  for (const auto& arm : c.arms) smallest = std::min(smallest, arm.n());
  if (c.arms.size() > 1 && smallest < 10)
    out << "With as few as " << smallest << " completed run(s) in an arm, only large differences can be detected: a "
        << "p-value above " << printf_text("%g", c.alpha) << " means no difference was detected, not that there is none; "
        << "a p-value below it is evidence of a difference whose size the means only roughly estimate.\n\n";
  if (!c.notes.empty()) {
    out << "## Notes\n\n";
    for (const auto& note : c.notes) out << "- " << note << "\n";
  }
  return out.str();
}

std::string summary_csv(const Comparison& c) {
  std::vector<std::string> head = {"arm"};
  head.insert(head.end(), c.keys.begin(), c.keys.end());
  for (const char* name : {"baseline", "runs", "completed", "diverged", "failed", "interrupted", "running",
                           "missing_metric", "metric", "n", "mean", "std", "delta", "t", "df", "p", "p_note",
                           "threshold", "steps_to_threshold_mean", "threshold_reached", "threshold_considered",
                           "tokens_per_s_mean"})
    head.push_back(name);
  std::string out;
  const auto line = [&](const std::vector<std::string>& fields) {
    std::vector<std::string> quoted;
    for (const auto& f : fields) quoted.push_back(csv_field(f));
    out += join(quoted, ",") + "\n";
  };
  line(head);
  for (const auto& arm : c.arms) {
    std::vector<std::string> f = {arm.label};
    for (const auto& key : c.keys) {
      const auto it = arm.values.find(key);
      f.push_back(it == arm.values.end() ? std::string() : it->second);
    }
    f.push_back(arm.is_baseline ? "true" : "false");
    for (const std::size_t n : {arm.n_runs, arm.n_completed, arm.n_diverged, arm.n_failed, arm.n_interrupted,
                                arm.n_running, arm.n_missing_metric})
      f.push_back(std::to_string(n));
    f.push_back(c.metric);
    f.push_back(std::to_string(arm.n()));
    for (const double v : {arm.mean, arm.std, arm.delta, arm.test.t, arm.test.df, arm.test.p}) f.push_back(csv_number(v));
    f.push_back(arm.is_baseline ? std::string() : arm.test.note);
    f.push_back(c.threshold ? number_text(*c.threshold) : std::string());
    f.push_back(csv_number(arm.threshold_step_mean));
    f.push_back(c.threshold ? std::to_string(arm.threshold_reached) : std::string());
    f.push_back(c.threshold ? std::to_string(arm.threshold_considered) : std::string());
    f.push_back(csv_number(arm.tokens_per_s_mean));
    line(f);
  }
  return out;
}

std::string summary_json(const Comparison& c) {
  std::ostringstream out;
  out << "{\n  \"format\": \"ablate-compare\",\n  \"format_version\": 1,\n";
  out << "  \"metric\": " << json_quote(c.metric) << ",\n";
  out << "  \"higher_is_better\": " << (c.higher_is_better ? "true" : "false") << ",\n";
  out << "  \"keys\": " << json_strings(c.keys) << ",\n";
  out << "  \"baseline\": " << json_quote(c.arms.empty() ? std::string() : c.arms[c.baseline].label) << ",\n";
  out << "  \"threshold\": " << (c.threshold ? json_number(*c.threshold) : "null") << ",\n";
  out << "  \"alpha\": " << json_number(c.alpha) << ",\n";
  out << "  \"arms\": [";
  for (std::size_t a = 0; a < c.arms.size(); ++a) {
    const Arm& arm = c.arms[a];
    out << (a == 0 ? "\n" : ",\n") << "    {\n";
    out << "      \"label\": " << json_quote(arm.label) << ",\n";
    out << "      \"baseline\": " << (arm.is_baseline ? "true" : "false") << ",\n";
    std::vector<std::string> values;
    for (const auto& [k, v] : arm.values) values.push_back(json_quote(k) + ": " + json_quote(v));
    out << "      \"values\": {" << join(values, ", ") << "},\n";
    out << "      \"counts\": {\"runs\": " << arm.n_runs << ", \"completed\": " << arm.n_completed
        << ", \"diverged\": " << arm.n_diverged << ", \"failed\": " << arm.n_failed
        << ", \"interrupted\": " << arm.n_interrupted << ", \"running\": " << arm.n_running
        << ", \"missing_metric\": " << arm.n_missing_metric << "},\n";
    std::vector<std::string> metric_values;
    for (const double v : arm.metric_values) metric_values.push_back(json_number(v));
    out << "      \"n\": " << arm.n() << ",\n";
    out << "      \"mean\": " << json_number(arm.mean) << ",\n";
    out << "      \"std\": " << json_number(arm.std) << ",\n";
    out << "      \"values_used\": [" << join(metric_values, ", ") << "],\n";
    out << "      \"delta\": " << json_number(arm.delta) << ",\n";
    if (arm.is_baseline) {
      out << "      \"test\": null,\n";
    } else {
      out << "      \"test\": {\"name\": \"welch_t\", \"t\": " << json_number(arm.test.t)
          << ", \"df\": " << json_number(arm.test.df) << ", \"p\": " << json_number(arm.test.p)
          << ", \"note\": " << (arm.test.note.empty() ? "null" : json_quote(arm.test.note)) << "},\n";
    }
    if (c.threshold) {
      out << "      \"steps_to_threshold\": {\"mean\": " << json_number(arm.threshold_step_mean)
          << ", \"reached\": " << arm.threshold_reached << ", \"considered\": " << arm.threshold_considered << "},\n";
    } else {
      out << "      \"steps_to_threshold\": null,\n";
    }
    out << "      \"tokens_per_s\": {\"mean\": " << json_number(arm.tokens_per_s_mean) << ", \"n\": " << arm.tokens_per_s_n
        << "},\n";
    out << "      \"runs\": [";
    for (std::size_t r = 0; r < arm.runs.size(); ++r) {
      const ArmRun& run = arm.runs[r];
      out << (r == 0 ? "\n" : ",\n") << "        {\"run_id\": " << json_quote(run.run_id) << ", \"path\": "
          << json_quote(run.path) << ", \"status\": " << json_quote(to_string(run.status))
          << ", \"seed\": " << (run.seed.empty() ? "null" : json_quote(run.seed)) << ", \"value\": " << json_number(run.value)
          << ", \"threshold_step\": " << (run.threshold_step ? std::to_string(*run.threshold_step) : "null")
          << ", \"tokens_per_s\": " << json_number(run.tokens_per_s) << "}";
    }
    out << (arm.runs.empty() ? "]\n" : "\n      ]\n") << "    }";
  }
  out << (c.arms.empty() ? "],\n" : "\n  ],\n");
  out << "  \"notes\": " << json_strings(c.notes) << "\n}\n";
  return out.str();
}

}  // namespace ablate::analysis
