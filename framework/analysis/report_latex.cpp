// table.tex of `ablate compare` (format_latex, report.hpp): the tables of report_tables.cpp as
// booktabs tabulars for a paper, the symbols of the cells (±, Δ, ×, ≥, −) in math mode.
#include "analysis/report.hpp"

#include <string>
#include <vector>

#include "core/text.hpp"

namespace ablate::analysis {

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

std::string format_latex(const Comparison& c) {
  std::string out = latex_table(arms_table(c));
  if (c.factorial.defined) {
    out += "\n";  // then appended, not "\n" + ...: GCC 12 warns falsely (-Wrestrict) on that
    out += latex_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) {
      out += "\n";
      out += latex_table(inter);
    }
  }
  return out;
}

}  // namespace ablate::analysis
