// The renderers of `ablate compare` (see report.hpp). One set of cells (Table) feeds the terminal,
// markdown, LaTeX and HTML tables, so they always show the same numbers; CSV and JSON carry the
// full-precision values instead.
#include "analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
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

// 3 significant digits (0.0123, 0.500, 1.00); below 0.001 just "<0.001" (the CSV has the value).
std::string p_text(double p) { return std::isnan(p) ? "n/a" : p < 0.001 ? "<0.001" : printf_text("%#.3g", p); }

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;  // count UTF-8 lead bytes, not continuations
  return n;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
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

std::string direction(const Comparison& c) { return std::string(c.higher_is_better ? "higher is better" : "lower is better"); }

std::string g(double v) { return printf_text("%g", v); }

std::string interval(double low, double high, int decimals) {
  if (std::isnan(low) || std::isnan(high)) return "";
  return "[" + signed_fixed(low, decimals) + ", " + signed_fixed(high, decimals) + "]";
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

}  // namespace

std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      out += line + "\n";
      line = std::string(indent, ' ');
    }
    if (!line.empty() && line.find_first_not_of(' ') != std::string::npos) line += " ";
    line += word;
  }
  if (!line.empty()) out += line + "\n";
  return out;
}

Table arms_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  Table t;
  t.title = c.value_label + " per arm";
  const bool holm = std::count_if(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.test.defined(); }) > 1;
  const bool seeds = std::any_of(c.arms.begin(), c.arms.end(), [](const Arm& a) { return a.seeds_needed.has_value(); });
  const bool lost = any_lost(c);
  t.header = {"arm", "n", "mean ± sd", "Δ [" + confidence_text(c) + " CI]", "p"};
  if (holm) t.header.push_back("p(Holm)");
  if (seeds) t.header.push_back("seeds");
  if (lost) t.header.push_back("lost");
  t.right.assign(t.header.size(), true);
  t.right[0] = false;
  for (const auto& arm : c.arms) {
    std::vector<std::string> row = {arm.label, std::to_string(arm.n())};
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

Table interactions_table(const Comparison& c) {
  const int decimals = metric_decimals(c);
  Table t;
  t.title = "interactions";
  t.header = {"interaction", "F", "p", "Δ of Δ [" + confidence_text(c) + " CI]"};
  t.right = {false, true, true, true};
  if (!c.factorial.defined) return t;
  for (const auto& term : c.factorial.terms) {
    if (term.name.find(" × ") == std::string::npos) continue;
    t.rows.push_back({term.name, std::isnan(term.f) ? "n/a" : printf_text("%.3g", term.f),
                      p_text(term.p) + (term.p < c.alpha ? "*" : ""),
                      std::isnan(term.estimate) ? "" : delta_cell(term.estimate, term.ci_low, term.ci_high, decimals)});
  }
  return t;
}

std::string text_table(const Table& t) {
  std::vector<std::size_t> widths(t.header.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  };
  measure(t.header);
  for (const auto& row : t.rows) measure(row);
  std::string out;
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      const std::string pad(widths[i] - display_width(row[i]), ' ');
      text += (i < t.right.size() && t.right[i] && i > 0) ? pad + row[i] : row[i] + pad;
      if (i + 1 < row.size()) text += "  ";
    }
    out += text.substr(0, text.find_last_not_of(' ') + 1) + "\n";
  };
  line(t.header);
  for (const auto& row : t.rows) line(row);
  return out;
}

std::string markdown_table(const Table& t) {
  const auto row_text = [](const std::vector<std::string>& row) {
    std::vector<std::string> escaped;
    for (const auto& cell : row) escaped.push_back(md_escape(cell));
    return "| " + join(escaped, " | ") + " |\n";
  };
  std::string out = row_text(t.header) + "|";
  for (std::size_t i = 0; i < t.header.size(); ++i) out += (i < t.right.size() && t.right[i]) ? "---:|" : ":---|";
  out += "\n";
  for (const auto& row : t.rows) out += row_text(row);
  return out;
}

namespace {

std::string latex_escape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (std::string("&%$#_{}").find(ch) != std::string::npos)
      out += std::string("\\") + ch;
    else if (ch == '~')
      out += "\\textasciitilde{}";
    else if (ch == '^')
      out += "\\textasciicircum{}";
    else if (ch == '\\')
      out += "\\textbackslash{}";
    else if (s.compare(i, 2, "±") == 0) {
      out += "$\\pm$";
      i += 1;
    } else if (s.compare(i, 2, "Δ") == 0) {
      out += "$\\Delta$";
      i += 1;
    } else if (s.compare(i, 2, "·") == 0) {
      out += "$\\cdot$";
      i += 1;
    } else if (s.compare(i, 2, "×") == 0) {
      out += "$\\times$";
      i += 1;
    } else if (s.compare(i, 3, "≥") == 0) {
      out += "$\\geq$";
      i += 2;
    } else if (s.compare(i, 3, "≤") == 0) {
      out += "$\\leq$";
      i += 2;
    } else if (s.compare(i, 3, "−") == 0) {
      out += "$-$";
      i += 2;
    } else
      out += ch;
  }
  return out;
}

}  // namespace

std::string latex_table(const Table& t) {
  std::string spec;
  for (std::size_t i = 0; i < t.header.size(); ++i) spec += (i < t.right.size() && t.right[i]) ? "r" : "l";
  const auto row_text = [](const std::vector<std::string>& row) {
    std::vector<std::string> escaped;
    for (const auto& cell : row) escaped.push_back(latex_escape(cell));
    return join(escaped, " & ") + " \\\\\n";
  };
  std::string out = "% " + t.title + "\n\\begin{tabular}{" + spec + "}\n\\toprule\n" + row_text(t.header) + "\\midrule\n";
  for (const auto& row : t.rows) out += row_text(row);
  return out + "\\bottomrule\n\\end{tabular}\n";
}

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace

std::string html_table(const Table& t) {
  std::string out = "<table>\n<thead><tr>";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out += std::string("<th") + (i < t.right.size() && t.right[i] ? " class=\"num\"" : "") + ">" + html_escape(t.header[i]) +
           "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i)
      out +=
          std::string("<td") + (i < t.right.size() && t.right[i] ? " class=\"num\"" : "") + ">" + html_escape(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

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

// Why nothing can be concluded from these runs (no arm has a value, or the baseline has none to
// test against), said in the terminal and the reports instead of a verdict; nullopt otherwise.
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
        out.push_back("The factors " + term.name + " interact (F = " + printf_text("%.3g", term.f) + ", p = " + p_text(term.p) +
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

std::string format_table(const Comparison& c) {
  std::string out = wrap(c.value_label + " (" + direction(c) + "; " + c.summary_source + ")", 100, 2);
  if (!c.keys.empty()) {
    std::string line = "arms by " + join(c.keys, " · ");
    if (c.arms.size() > 1) line += "; baseline: " + c.arms[c.baseline].label;
    out += wrap(line, 100, 2);
  }
  out += "\n" + text_table(arms_table(c));
  if (auto nothing = nothing_to_compare(c)) out += "\n" + wrap(*nothing, 100, 2);
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
    out += wrap("p n/a for " + (labels.size() > 1 && labels.size() == compared ? std::string("every arm") : join(labels, "; ")) +
                    ": " + note,
                100, 2);
  if (c.factorial.defined) {
    out += "\n" + wrap(effects_table(c).title + " (linear model over " + std::to_string(c.factorial.observations) +
                           " runs, residual df " + g(c.factorial.df_resid) + ")",
                       100, 2);
    out += text_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) out += "\n" + text_table(inter);
  }
  out += "\n";
  for (const auto& caveat : caveats(c)) out += wrap("- " + caveat, 100, 2);
  return out;
}

std::string format_latex(const Comparison& c) {
  std::string out = latex_table(arms_table(c));
  if (c.factorial.defined) {
    out += "\n" + latex_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) out += "\n" + latex_table(inter);
  }
  return out;
}

std::string report_markdown(const Comparison& c) {
  std::size_t total = 0;
  for (const auto& arm : c.arms) total += arm.n_runs;
  std::ostringstream out;
  out << "# Comparison: " << c.value_label << "\n\n";
  out << total << " runs in " << c.arms.size() << (c.arms.size() == 1 ? " arm" : " arms");
  if (!c.keys.empty()) out << ", named by their values of " << join(c.keys, " · ");
  if (c.arms.size() > 1) out << "; baseline " << c.arms[c.baseline].label;
  out << ". " << c.value_label << ": " << direction(c) << ".\n\n";
  out << "## Arms\n\n" << markdown_table(arms_table(c)) << "\n";
  if (c.factorial.defined) {
    out << "## Main effects\n\n" << markdown_table(effects_table(c)) << "\n";
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) out << markdown_table(inter) << "\n";
  }
  out << "## What this shows\n\n";
  for (const auto& s : interpretation(c)) out << "- " << s << "\n";
  out << "\n## Caveats\n\n";
  for (const auto& s : caveats(c)) out << "- " << s << "\n";
  return out.str();
}

namespace {

std::string base64(const std::string& data) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < data.size(); i += 3) {
    const std::uint32_t b0 = static_cast<unsigned char>(data[i]);
    const std::uint32_t b1 = i + 1 < data.size() ? static_cast<unsigned char>(data[i + 1]) : 0;
    const std::uint32_t b2 = i + 2 < data.size() ? static_cast<unsigned char>(data[i + 2]) : 0;
    const std::uint32_t v = (b0 << 16) | (b1 << 8) | b2;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < data.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < data.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string html_figure(const HtmlFigure& f) {
  return "<figure><img alt=\"" + html_escape(f.title) + "\" src=\"data:image/svg+xml;base64," + base64(f.svg) +
         "\"><figcaption><b>" + html_escape(f.title) + "</b>" + (f.caption.empty() ? "" : " — " + html_escape(f.caption)) +
         "</figcaption></figure>\n";
}

const char* kStyle = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e3e3e3; text-align: left; white-space: nowrap; }
th { border-bottom: 2px solid #888; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; } details { margin: 0.5em 0; } summary { cursor: pointer; font-weight: bold; }
.caveats li, .shows li { margin: 0.3em 0; } .meta { color: #555; }
)css";

}  // namespace

std::string report_html(const Comparison& c, const std::vector<HtmlFigure>& figures,
                        const std::vector<std::vector<HtmlFigure>>& arm_figures, const std::string& figures_problem) {
  std::size_t total = 0;
  for (const auto& arm : c.arms) total += arm.n_runs;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Comparison: "
      << html_escape(c.value_label) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  out << "<h1>Comparison: " << html_escape(c.value_label) << "</h1>\n<p class=\"meta\">" << total << " runs in " << c.arms.size()
      << (c.arms.size() == 1 ? " arm" : " arms");
  if (!c.keys.empty()) out << ", named by their values of " << html_escape(join(c.keys, " · "));
  if (c.arms.size() > 1) out << "; baseline <b>" << html_escape(c.arms[c.baseline].label) << "</b>";
  out << ". " << html_escape(c.value_label) << ": " << direction(c) << ".</p>\n";
  out << "<h2>Arms</h2>\n" << html_table(arms_table(c));
  if (c.factorial.defined) {
    out << "<h2>Main effects</h2>\n" << html_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) out << html_table(inter);
  }
  out << "<h2>What this shows</h2>\n<ul class=\"shows\">\n";
  for (const auto& s : interpretation(c)) out << "<li>" << html_escape(s) << "</li>\n";
  out << "</ul>\n";
  if (!figures.empty() || !figures_problem.empty()) {
    out << "<h2>Figures</h2>\n";
    if (!figures_problem.empty())
      out << "<p class=\"meta\">The figures could not be drawn: " << html_escape(figures_problem) << "</p>\n";
    for (const auto& f : figures) out << html_figure(f);
  }
  out << "<h2>Arms in detail</h2>\n";
  for (std::size_t a = 0; a < c.arms.size(); ++a) {
    const Arm& arm = c.arms[a];
    out << "<details id=\"arm-" << a << "\"><summary>" << html_escape(arm.label) << (arm.is_baseline ? " (baseline)" : "")
        << " — " << arm.n_runs << (arm.n_runs == 1 ? " run" : " runs") << "</summary>\n";
    Table runs;
    runs.header = {"run", "seed", "status", c.value_label, "folder"};
    runs.right = {false, true, false, true, false};
    for (const auto& run : arm.runs)
      runs.rows.push_back({run.run_id, run.seed, to_string(run.status),
                           std::isnan(run.value) ? "n/a" : (run.censored ? "≥" : "") + number_text(run.value),
                           std::filesystem::path(run.path).parent_path().filename().string()});
    out << "<p class=\"meta\">" << html_escape(arm.key_label) << "</p>\n" << html_table(runs);
    if (a < arm_figures.size())
      for (const auto& f : arm_figures[a]) out << html_figure(f);
    out << "</details>\n";
  }
  out << "<h2>Caveats</h2>\n<ul class=\"caveats\">\n";
  for (const auto& s : caveats(c)) out << "<li>" << html_escape(s) << "</li>\n";
  out << "</ul>\n</body>\n</html>\n";
  return out.str();
}

namespace {

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

std::string summary_csv(const Comparison& c) {
  std::vector<std::string> head = {"arm", "key_label"};
  head.insert(head.end(), c.keys.begin(), c.keys.end());
  for (const char* name : {"baseline",
                           "runs",
                           "completed",
                           "diverged",
                           "failed",
                           "interrupted",
                           "running",
                           "missing_metric",
                           "censored",
                           "metric",
                           "summary",
                           "n",
                           "mean",
                           "std",
                           "delta",
                           "ci_low",
                           "ci_high",
                           "t",
                           "df",
                           "p",
                           "p_holm",
                           "paired",
                           "p_note",
                           "bootstrap_low",
                           "bootstrap_high",
                           "seeds_needed",
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
    std::vector<std::string> f = {arm.label, arm.key_label};
    for (const auto& key : c.keys) {
      const auto it = arm.values.find(key);
      f.push_back(it == arm.values.end() ? std::string() : it->second);
    }
    f.push_back(arm.is_baseline ? "true" : "false");
    for (const std::size_t n : {arm.n_runs, arm.n_completed, arm.n_diverged, arm.n_failed, arm.n_interrupted, arm.n_running,
                                arm.n_missing_metric, arm.n_censored})
      f.push_back(std::to_string(n));
    f.push_back(c.metric);
    f.push_back(c.summary.text());
    f.push_back(std::to_string(arm.n()));
    for (const double v :
         {arm.mean, arm.std, arm.delta, arm.test.ci_low, arm.test.ci_high, arm.test.t, arm.test.df, arm.test.p, arm.p_holm})
      f.push_back(csv_number(v));
    f.push_back(arm.is_baseline ? std::string() : arm.test.paired ? "true" : "false");
    f.push_back(arm.is_baseline ? std::string() : arm.test.note);
    f.push_back(csv_number(arm.bootstrap.low));
    f.push_back(csv_number(arm.bootstrap.high));
    f.push_back(arm.seeds_needed ? std::to_string(*arm.seeds_needed) : std::string());
    f.push_back(csv_number(arm.tokens_per_s_mean));
    line(f);
  }
  return out;
}

std::string summary_json(const Comparison& c) {
  std::ostringstream out;
  out << "{\n  \"format\": \"ablate-compare\",\n  \"format_version\": 2,\n";
  out << "  \"metric\": " << json_quote(c.metric) << ",\n";
  out << "  \"summary\": " << json_quote(c.summary.text()) << ",\n";
  out << "  \"value\": " << json_quote(c.value_label) << ",\n";
  out << "  \"higher_is_better\": " << (c.higher_is_better ? "true" : "false") << ",\n";
  out << "  \"keys\": " << json_strings(c.keys) << ",\n";
  out << "  \"baseline\": " << json_quote(c.arms.empty() ? std::string() : c.arms[c.baseline].label) << ",\n";
  out << "  \"alpha\": " << json_number(c.alpha) << ",\n";
  out << "  \"paired\": " << (c.paired ? "true" : "false") << ",\n";
  out << "  \"arms\": [";
  for (std::size_t a = 0; a < c.arms.size(); ++a) {
    const Arm& arm = c.arms[a];
    out << (a == 0 ? "\n" : ",\n") << "    {\n";
    out << "      \"label\": " << json_quote(arm.label) << ",\n";
    out << "      \"key_label\": " << json_quote(arm.key_label) << ",\n";
    out << "      \"baseline\": " << (arm.is_baseline ? "true" : "false") << ",\n";
    std::vector<std::string> values;
    for (const auto& [k, v] : arm.values) values.push_back(json_quote(k) + ": " + json_quote(v));
    out << "      \"values\": {" << join(values, ", ") << "},\n";
    out << "      \"counts\": {\"runs\": " << arm.n_runs << ", \"completed\": " << arm.n_completed
        << ", \"diverged\": " << arm.n_diverged << ", \"failed\": " << arm.n_failed << ", \"interrupted\": " << arm.n_interrupted
        << ", \"running\": " << arm.n_running << ", \"missing_metric\": " << arm.n_missing_metric
        << ", \"censored\": " << arm.n_censored << "},\n";
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
      out << "      \"test\": {\"name\": " << (arm.test.paired ? "\"paired_t\"" : "\"welch_t\"")
          << ", \"t\": " << json_number(arm.test.t) << ", \"df\": " << json_number(arm.test.df)
          << ", \"p\": " << json_number(arm.test.p) << ", \"p_holm\": " << json_number(arm.p_holm) << ", \"ci\": ["
          << json_number(arm.test.ci_low) << ", " << json_number(arm.test.ci_high) << "]"
          << ", \"bootstrap_ci\": [" << json_number(arm.bootstrap.low) << ", " << json_number(arm.bootstrap.high) << "]"
          << ", \"seeds_needed\": " << (arm.seeds_needed ? std::to_string(*arm.seeds_needed) : "null")
          << ", \"note\": " << (arm.test.note.empty() ? "null" : json_quote(arm.test.note)) << "},\n";
    }
    out << "      \"tokens_per_s\": {\"mean\": " << json_number(arm.tokens_per_s_mean) << ", \"n\": " << arm.tokens_per_s_n
        << "},\n";
    out << "      \"runs\": [";
    for (std::size_t r = 0; r < arm.runs.size(); ++r) {
      const ArmRun& run = arm.runs[r];
      out << (r == 0 ? "\n" : ",\n") << "        {\"run_id\": " << json_quote(run.run_id)
          << ", \"path\": " << json_quote(run.path) << ", \"status\": " << json_quote(to_string(run.status))
          << ", \"seed\": " << (run.seed.empty() ? "null" : json_quote(run.seed)) << ", \"value\": " << json_number(run.value)
          << ", \"censored\": " << (run.censored ? "true" : "false") << ", \"tokens_per_s\": " << json_number(run.tokens_per_s)
          << "}";
    }
    out << (arm.runs.empty() ? "]\n" : "\n      ]\n") << "    }";
  }
  out << (c.arms.empty() ? "],\n" : "\n  ],\n");
  const FactorialAnalysis& f = c.factorial;
  if (!f.defined) {
    out << "  \"factorial\": " << (f.note.empty() ? "null" : "{\"defined\": false, \"note\": " + json_quote(f.note) + "}")
        << ",\n";
  } else {
    out << "  \"factorial\": {\"defined\": true, \"observations\": " << f.observations << ", \"cells\": " << f.cells
        << ", \"interactions\": " << (f.interactions ? "true" : "false") << ", \"blocked\": " << (f.blocked ? "true" : "false")
        << ", \"df_resid\": " << json_number(f.df_resid) << ", \"residual_sd\": " << json_number(f.residual_sd)
        << ", \"note\": " << (f.note.empty() ? "null" : json_quote(f.note)) << ",\n    \"main_effects\": [";
    for (std::size_t i = 0; i < f.main_effects.size(); ++i) {
      const MainEffect& e = f.main_effects[i];
      out << (i ? ",\n" : "\n") << "      {\"factor\": " << json_quote(e.factor) << ", \"level\": " << json_quote(e.level)
          << ", \"reference\": " << json_quote(e.reference) << ", \"estimate\": " << json_number(e.estimate)
          << ", \"se\": " << json_number(e.se) << ", \"t\": " << json_number(e.t) << ", \"df\": " << json_number(e.df)
          << ", \"p\": " << json_number(e.p) << ", \"ci\": [" << json_number(e.ci_low) << ", " << json_number(e.ci_high)
          << "], \"seeds_per_cell_needed\": " << json_number(e.seeds_per_cell_needed) << "}";
    }
    out << "\n    ],\n    \"terms\": [";
    for (std::size_t i = 0; i < f.terms.size(); ++i) {
      const AnovaTerm& t = f.terms[i];
      out << (i ? ",\n" : "\n") << "      {\"name\": " << json_quote(t.name) << ", \"df\": " << json_number(t.df)
          << ", \"sum_sq\": " << json_number(t.sum_sq) << ", \"F\": " << json_number(t.f) << ", \"p\": " << json_number(t.p)
          << ", \"estimate\": " << json_number(t.estimate) << ", \"ci\": [" << json_number(t.ci_low) << ", "
          << json_number(t.ci_high) << "]}";
    }
    out << "\n    ]},\n";
  }
  out << "  \"notes\": " << json_strings(c.notes) << "\n}\n";
  return out.str();
}

}  // namespace ablate::analysis
