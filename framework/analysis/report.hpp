// The outputs of `ablate compare`, rendered from a Comparison (compare.hpp): an aligned terminal
// table, report.md (the table plus plain statements of what the numbers do and do not show),
// summary.csv (one row per arm) and summary.json (everything, machine-readable).
#pragma once

#include <string>

#include "analysis/compare.hpp"

namespace ablate::analysis {

// The terminal table: one row per arm, "mean ± std (n)", Δ with its sign, p to 3 significant
// digits with "*" below alpha, diverged/failed counts, steps-to-threshold and tokens/s; a header
// line (metric, direction, baseline) above and the comparison's notes below. Columns are aligned
// by display width (UTF-8 aware). Ends with a newline.
std::string format_table(const Comparison& comparison);

// report.md: what was compared and how, a markdown table, one paragraph per arm, the notes.
std::string report_markdown(const Comparison& comparison);

// summary.csv: a header, then one row per arm. Columns: arm, one per varying key (its value, empty
// where unset), baseline, runs, completed, diverged, failed, interrupted, running, missing_metric,
// metric, n, mean, std, delta, t, df, p, p_note, threshold, steps_to_threshold_mean,
// threshold_reached, threshold_considered, tokens_per_s_mean. NaN is an empty field; numbers
// are written with round-trip precision; fields are quoted as RFC 4180 requires.
std::string summary_csv(const Comparison& comparison);

// summary.json: {"format": "ablate-compare", "format_version": 1, metric, higher_is_better,
// keys, baseline, threshold, alpha, arms: [{label, baseline, values, counts, metric statistics,
// delta, test, steps_to_threshold, tokens_per_s, runs: [...]}], notes}. NaN is null.
std::string summary_json(const Comparison& comparison);

}  // namespace ablate::analysis
