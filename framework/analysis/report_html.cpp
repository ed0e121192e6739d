// report.html of `ablate compare` (report_html, report.hpp): one self-contained page, the tables
// of report_tables.cpp as HTML, the figures inline as SVG data: URIs, a drill-down per arm and the
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
  if (const Table t = compute_table(c); !t.rows.empty()) out << "<h2>" << html_escape(t.title) << "</h2>\n" << html_table(t);
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

}  // namespace ablate::analysis
