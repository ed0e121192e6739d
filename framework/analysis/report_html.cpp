// report.html of `ablate compare` (report_html, report.hpp): one self-contained page, the tables
// of report_tables.cpp as HTML, the figures inline as SVG data: URIs (text as text, not base64), a drill-down per arm and the
// caveats; no script, no server, no network.
#include "analysis/report.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <vector>

#include "analysis/report_tables.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
using namespace detail;

namespace {

// An SVG as a data: URI for a single-quoted attribute: the text as it is (a third smaller than
// base64), only the characters a URI or the attribute would misread percent-encoded.
std::string svg_data_uri(const std::string& svg) {
  std::string out = "data:image/svg+xml,";
  out.reserve(out.size() + svg.size() + svg.size() / 50);
  for (const char ch : svg) {
    switch (ch) {
      case '%': out += "%25"; break;
      case '#': out += "%23"; break;
      case '\'': out += "%27"; break;
      case '&': out += "%26"; break;
      case '\n': out += "%0A"; break;
      case '\r': out += "%0D"; break;
      case '\t': out += "%09"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string html_figure(const HtmlFigure& f) {
  return "<figure><img alt=\"" + xml_escape(f.title) + "\" src='" + svg_data_uri(f.svg) + "'><figcaption><b>" +
         xml_escape(f.title) + "</b>" + (f.caption.empty() ? "" : " — " + xml_escape(f.caption)) + "</figcaption></figure>\n";
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

std::string html_table(const Table& t) {
  std::string out = "<table>\n<thead><tr>";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out +=
        std::string("<th") + (i < t.right.size() && t.right[i] ? " class=\"num\"" : "") + ">" + xml_escape(t.header[i]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i)
      out += std::string("<td") + (i < t.right.size() && t.right[i] ? " class=\"num\"" : "") + ">" + xml_escape(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string report_html(const Comparison& c, const std::vector<HtmlFigure>& figures,
                        const std::vector<std::vector<HtmlFigure>>& arm_figures, const std::string& figures_problem) {
  std::size_t total = 0;
  for (const auto& arm : c.arms) total += arm.n_runs;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Comparison: " << xml_escape(c.value_label)
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  out << "<h1>Comparison: " << xml_escape(c.value_label) << "</h1>\n<p class=\"meta\">" << total << " runs in " << c.arms.size()
      << (c.arms.size() == 1 ? " arm" : " arms");
  if (!c.keys.empty()) out << ", named by their values of " << xml_escape(join(c.keys, " · "));
  if (c.arms.size() > 1) out << "; baseline <b>" << xml_escape(c.arms[c.baseline].label) << "</b>";
  out << ". " << xml_escape(c.value_label) << ": " << direction(c) << ".</p>\n";
  out << "<h2>Arms</h2>\n" << html_table(arms_table(c));
  if (const Table t = compute_table(c); !t.rows.empty()) out << "<h2>" << xml_escape(t.title) << "</h2>\n" << html_table(t);
  if (c.factorial.defined) {
    out << "<h2>Main effects</h2>\n" << html_table(effects_table(c));
    const Table inter = interactions_table(c);
    if (!inter.rows.empty()) out << html_table(inter);
  }
  out << "<h2>What this shows</h2>\n<ul class=\"shows\">\n";
  for (const auto& s : interpretation(c)) out << "<li>" << xml_escape(s) << "</li>\n";
  out << "</ul>\n";
  if (!figures.empty() || !figures_problem.empty()) {
    out << "<h2>Figures</h2>\n";
    if (!figures_problem.empty())
      out << "<p class=\"meta\">The figures could not be drawn: " << xml_escape(figures_problem) << "</p>\n";
    for (const auto& f : figures) out << html_figure(f);
  }
  out << "<h2>Arms in detail</h2>\n";
  for (std::size_t a = 0; a < c.arms.size(); ++a) {
    const Arm& arm = c.arms[a];
    out << "<details id=\"arm-" << a << "\"><summary>" << xml_escape(arm.label) << (arm.is_baseline ? " (baseline)" : "") << " — "
        << arm.n_runs << (arm.n_runs == 1 ? " run" : " runs") << "</summary>\n";
    Table runs;
    runs.header = {"run", "seed", "status", c.value_label, "folder"};
    runs.right = {false, true, false, true, false};
    for (const auto& run : arm.runs)
      runs.rows.push_back({run.run_id, run.seed, to_string(run.status),
                           std::isnan(run.value) ? "n/a" : (run.censored ? "≥" : "") + number_text(run.value),
                           std::filesystem::path(run.path).parent_path().filename().string()});
    out << "<p class=\"meta\">" << xml_escape(arm.key_label) << "</p>\n" << html_table(runs);
    if (a < arm_figures.size())
      for (const auto& f : arm_figures[a]) out << html_figure(f);
    out << "</details>\n";
  }
  out << "<h2>Caveats</h2>\n<ul class=\"caveats\">\n";
  for (const auto& s : caveats(c)) out << "<li>" << xml_escape(s) << "</li>\n";
  out << "</ul>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace ablate::analysis
