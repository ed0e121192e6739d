// The figures of a set of runs (what `ablate plot` and `ablate sweep` draw): curves per arm, one
// run's attention heatmaps and decode cross-attention, attention entropy, and the head-score,
// head-difference and rollout figures across arms. Arms come from group_runs() (compare.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ablate::analysis {

struct FigureOptions {
  std::filesystem::path out_dir;  // created when missing
  std::string format = "png";     // png | svg
  std::optional<std::filesystem::path>
      attention_run;                           // the run whose attention heatmaps to draw (dir or run.h5); empty: the first run
  std::optional<std::int64_t> attention_step;  // that run's attention log, by step; empty: its last
  std::string baseline;       // the baseline arm, "key=value[,key=value]" as `ablate compare --baseline`; empty: the first arm
  std::size_t top_heads = 4;  // heads drawn in head_differences
};

struct FigureReport {
  std::vector<std::filesystem::path> written;  // in the order drawn
  std::vector<std::string> notes;              // "warning: ..." / "note: ...": what the caller should print
  std::vector<std::string> head_score_panels;  // the scores head_scores shows, in panel order ("induction" only where defined)
};

// Draws every figure the runs support into options.out_dir:
//   curves_<metric>, curves_train_loss  eval metrics and train loss per arm (mean over seeds, min–max band)
//   attention_<stack>_<kind>, decode_cross   one run's probe attention at one log (layers × heads)
//   entropy            final attention entropy per head, mean ± std over seeds per arm
//   head_scores        heads × arms grids of the head scores (attention_heads.hpp), mean over seeds
//   head_differences   the heads whose maps differ most (Jensen–Shannon distance) between the
//                      baseline arm and the arm most different from it, side by side
//   rollout_<stack>    attention rollout through each stack's self-attention, one panel per arm
// Run files that cannot be read are skipped with a warning note; figures a run set cannot have
// (no attention logs, one arm) are left out with a note. Throws ablate::UsageError for no readable
// run, a bad format, an attention_run that names no single run file, an attention_step that was
// not logged, or a baseline that names no arm; ablate::Error when a figure cannot be written.
FigureReport draw_figures(const std::vector<std::filesystem::path>& run_files, const FigureOptions& options);

// What a figure file shows, from its name (its stem: "curves_loss", "head_scores", ...), one
// sentence for a caption; empty for a name draw_figures does not write.
std::string figure_caption(const std::string& stem);

// The drill-down of one arm (report.html): runs_<metric> with one line per run (labelled by its
// seed), and the attention heatmaps of its first run with attention logs, at its last log. Same
// notes and errors as draw_figures.
FigureReport draw_arm_figures(const std::vector<std::filesystem::path>& run_files, const std::string& metric,
                              const std::filesystem::path& out_dir, const std::string& format);

}  // namespace ablate::analysis
