// report.md of `ablate compare` (report_markdown, report.hpp): what was compared and how, the
// tables of report_tables.cpp as Markdown, the interpretation and the caveats.
#include "analysis/report.hpp"

#include <sstream>
#include <vector>

#include "analysis/report_tables.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
using namespace detail;

namespace {

std::string md_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

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
  if (const Table t = compute_table(c); !t.rows.empty()) out << "## " << t.title << "\n\n" << markdown_table(t) << "\n";
  if (c.scaling.defined()) {
    const Table t = scaling_table(c);
    out << "## " << t.title << "\n\n" << markdown_table(t) << "\n";
    for (const std::string& statement : c.scaling.statements) out << "- " << statement << "\n";
    out << "\n";
  }
  out << "## What this shows\n\n";
  for (const auto& s : interpretation(c)) out << "- " << s << "\n";
  out << "\n## Caveats\n\n";
  for (const auto& s : caveats(c)) out << "- " << s << "\n";
  return out.str();
}

}  // namespace ablate::analysis
