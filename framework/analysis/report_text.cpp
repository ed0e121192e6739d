// The terminal output of `ablate compare` (format_table, report.hpp): the header lines, the
// tables of report_tables.cpp as aligned text (UTF-8 aware), why p is n/a, and the caveats, every
// line at most 100 columns.
#include "analysis/report.hpp"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "analysis/report_tables.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
using namespace detail;

namespace {

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (const char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;  // count UTF-8 lead bytes, not continuations
  return n;
}

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

std::string format_table(const Comparison& c) {
  std::string out = wrap(c.value_label + " (" + direction(c) + "; " + c.summary_source + ")", 100, 2);
  if (!c.keys.empty()) {
    std::string line = "arms by " + join(c.keys, " · ");
    if (c.arms.size() > 1) line += "; baseline: " + c.arms[c.baseline].label;
    out += wrap(line, 100, 2);
  }
  out += "\n";  // then appended, not "\n" + ...: GCC 12 warns falsely (-Wrestrict) on that
  out += text_table(arms_table(c));
  if (auto nothing = nothing_to_compare(c)) {
    out += "\n";
    out += wrap(*nothing, 100, 2);
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
    out += wrap("p n/a for " + (labels.size() > 1 && labels.size() == compared ? std::string("every arm") : join(labels, "; ")) +
                    ": " + note,
                100, 2);
  if (c.factorial.defined) {
    out += "\n";
    out += wrap(effects_table(c).title + " (linear model over " + std::to_string(c.factorial.observations) +
                    " runs, residual df " + g(c.factorial.df_resid) + ")",
                100, 2);
    out += text_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) {
      out += "\n";
      out += text_table(inter);
    }
  }
  if (c.scaling.defined()) {
    const Table t = scaling_table(c);
    out += "\n";
    out += wrap(t.title, 100, 2);
    out += text_table(t);
    for (const std::string& statement : c.scaling.statements) out += wrap("- " + statement, 100, 2);
  }
  out += "\n";
  for (const auto& caveat : caveats(c)) out += wrap("- " + caveat, 100, 2);
  return out;
}

}  // namespace ablate::analysis
