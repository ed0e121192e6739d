// The comparison as files: reading a sweep's run files (damaged ones left out with a warning),
// comparing them, and writing report.md, report.html, summary.csv, summary.json and table.tex —
// one code path for `ablate compare` and the end of `ablate sweep`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/compare.hpp"
#include "analysis/figures.hpp"

namespace ablate::analysis {

// The runs under `paths` (find_runs), vetted by a child process first so that a damaged file cannot
// crash this one; unreadable files are left out and named in `unreadable`.
struct LoadedRuns {
  std::vector<RunSummary> runs;
  std::vector<std::string> unreadable;  // "path: why"
};
LoadedRuns load_runs(const std::vector<std::filesystem::path>& paths);

// compare() on the loaded runs, with a note per unreadable file. Throws UsageError when there is
// no readable run, or for a metric or baseline that matches nothing.
Comparison compare_runs(const LoadedRuns& loaded, const CompareOptions& options);
// What a sweep directory among `paths` (or holding a run file among them) says of its tuning
// (DIR/tuning/selection.yaml, sweep.tune):
// each arm's choice and the tuning's cost, and a warning for a choice at the edge of its grid.
std::vector<std::string> tuning_notes(const std::vector<std::filesystem::path>& paths);

// Writes the report files into `out_dir` (created); returns their paths in writing order. The
// figures of report.html are drawn as SVG from the comparison's run files (draw_figures, and
// draw_arm_figures per arm) into a hidden folder that is removed afterwards; what drawing them
// had to say (or why they could not be drawn: the page then says so) is added to `notes`.
std::vector<std::filesystem::path> write_reports(const Comparison& comparison, const std::filesystem::path& out_dir,
                                                 std::vector<std::string>& notes, CurveAxis curves_x = CurveAxis::step);

// The whole analysis as `ablate compare` and the end of `ablate sweep` run it: load the runs under
// `paths`, compare, write the reports into `out_dir`, and (when `figures_dir` is given) draw the
// figures there as PNG, the curves against `curves_x` (report.html's too). The caller prints the comparison, the files and the notes (unreadable
// runs, figures left out). While the set is written, `out_dir`/kIncompleteMarker says that it is
// (removed when the whole set is in place; left by a kill or a failure).
inline constexpr const char* kIncompleteMarker = "INCOMPLETE.txt";
struct Analysis {
  Comparison comparison;
  std::vector<std::filesystem::path> written;
  std::vector<std::string> notes;
};
Analysis analyse(const std::vector<std::filesystem::path>& paths, const CompareOptions& options,
                 const std::filesystem::path& out_dir, const std::optional<std::filesystem::path>& figures_dir = {},
                 CurveAxis curves_x = CurveAxis::step);

}  // namespace ablate::analysis
