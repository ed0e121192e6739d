// The outputs of `ablate compare`, rendered from a Comparison (compare.hpp): the arms table and the
// factorial effects as text (≤ 100 columns), markdown, LaTeX and HTML from one set of cells;
// report.md (tables, generated interpretation, caveats once), summary.csv and summary.json.
#pragma once

#include <string>
#include <vector>

#include "analysis/compare.hpp"

namespace ablate::analysis {

// A table as cells: the renderers below only lay them out.
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right;  // [columns]: right-aligned (numbers)
};

// One row per arm: arm, n, mean ± sd (≥ when censored values are in it), Δ [CI], p, p(Holm) and
// seeds needed where defined, lost runs where any.
Table arms_table(const Comparison& comparison);
// The factorial analysis: one row per main effect (factor, level − reference, Δ [CI], p, seeds per
// cell), then one per two-way interaction (F, p, and the difference of differences for 2 × 2).
// Empty rows when the analysis is undefined.
Table effects_table(const Comparison& comparison);
Table interactions_table(const Comparison& comparison);
// Across model sizes (--scale): one row per series and size (series, size, N, mean, n), the fit on
// the series' first row (E, A, alpha [interval]); empty rows when there is no scaling analysis.
Table scaling_table(const Comparison& comparison);
// What each arm's model is and costs (docs/training.md, "Compute"): arm, parameters, non-embedding
// parameters, training FLOPs per token; empty rows when no run recorded them (older run files).
Table compute_table(const Comparison& comparison);

// Aligned text (UTF-8 aware), markdown, and LaTeX (booktabs tabular) renderings of a table.
std::string text_table(const Table& table);
std::string markdown_table(const Table& table);
std::string latex_table(const Table& table);
std::string html_table(const Table& table);

// The few sentences that say what the comparison shows: each main effect detected or not (with
// the seeds that would detect one of the observed size), interactions detected, the best arm.
std::vector<std::string> interpretation(const Comparison& comparison);
// Everything a reader must know once: method, multiple comparisons, censoring, runs left out.
std::vector<std::string> caveats(const Comparison& comparison);

// The terminal output: header lines (what is compared, the keys, the baseline), the arms table,
// the effects tables, and the caveats; every line ≤ 100 columns. Ends with a newline.
std::string format_table(const Comparison& comparison);
// The same tables as one LaTeX fragment (booktabs), for a paper.
std::string format_latex(const Comparison& comparison);

// report.md: what was compared and how, the tables, the interpretation, the caveats.
std::string report_markdown(const Comparison& comparison);

// report.html: one self-contained page (no script, no server, no network): the tables, the
// interpretation, the figures inline (SVG as data: URIs), a drill-down per arm (its runs, and its
// own figures) and the caveats. `arm_figures` is [arms] (or empty). `figures_problem`: why the
// figures could not be drawn (a full disk, say), said on the page where they would be; "" if none.
struct HtmlFigure {
  std::string title;
  std::string caption;
  std::string svg;  // the SVG document's text
};
std::string report_html(const Comparison& comparison, const std::vector<HtmlFigure>& figures,
                        const std::vector<std::vector<HtmlFigure>>& arm_figures, const std::string& figures_problem = "");

// summary.csv: a header, then one row per arm. Columns: arm, key_label, one per varying key (its
// value, empty where unset), baseline, runs, completed, diverged, failed, interrupted, running,
// missing_metric, censored, metric, summary, n, mean, std, delta, ci_low, ci_high, t, df, p,
// p_holm, paired, p_note, bootstrap_low, bootstrap_high, seeds_needed, tokens_per_s_mean. NaN is
// an empty field; numbers are written with round-trip precision; fields are quoted as RFC 4180
// requires.
std::string summary_csv(const Comparison& comparison);

// summary.json: {"format": "ablate-compare", "format_version": 2, metric, summary, value,
// higher_is_better, keys, baseline, alpha, paired, arms: [...], factorial: {...} | null, notes}.
// NaN is null.
std::string summary_json(const Comparison& comparison);

// Wraps text at spaces to lines of at most `width` columns (UTF-8 aware), continuation lines
// indented by `indent` spaces.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent = 0);

}  // namespace ablate::analysis
