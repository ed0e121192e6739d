// The figures of a set of runs (what `ablate plot` and `ablate sweep` draw): curves per arm, one
// run's attention heatmaps and decode cross-attention, attention entropy, and the head-score,
// head-difference and rollout figures across arms. Arms come from group_runs() (compare.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/plot.hpp"

namespace ablate::analysis {

// What the curves put on the x axis (`--x`): the training step, the tokens or the training FLOPs
// seen so far (the train log's `tokens` and `flops` columns), or the wall time (`elapsed_s`, which
// depends on the machine). Arms of different cost per step are compared at matched compute on the
// tokens or flops axis. Eval points between two train log rows are placed by linear interpolation.
enum class CurveAxis { step, tokens, flops, time };
CurveAxis parse_curve_axis(const std::string& name);  // "step" | "tokens" | "flops" | "time"; UsageError otherwise
std::string curve_axis_title(CurveAxis axis);         // the axis title: "step", "tokens seen", ...

// A run's values by step, steps ascending: an eval metric, the train loss, or a cumulative
// column (tokens, flops, elapsed_s) that places steps on another x axis.
using StepCurve = std::vector<std::pair<std::int64_t, double>>;

// Where `step` lies on a cumulative axis: its value at a logged step, linear between the logged
// rows (from 0 at step 0), the last two rows' rate past the last one; NaN when nothing is logged.
double place_on_axis(const StepCurve& axis, std::int64_t step);

// One run's curve and the axis it is drawn on (null: by step).
struct PlacedCurve {
  const StepCurve* values;
  const StepCurve* axis;
};

// An arm's line: per step, the mean with a min–max band over the runs that have a finite value
// there, at x = the step, or the mean over those runs of where the step lies on their axes.
Series band_series(const std::string& label, const std::vector<PlacedCurve>& curves);

struct FigureOptions {
  std::filesystem::path out_dir;  // created when missing
  std::string format = "png";     // png | svg
  std::optional<std::filesystem::path>
      attention_run;                           // the run whose attention heatmaps to draw (dir or run.h5); empty: the first run
  std::optional<std::int64_t> attention_step;  // that run's attention log, by step; empty: its last
  std::string baseline;       // the baseline arm, "key=value[,key=value]" as `ablate compare --baseline`; empty: the first arm
  std::size_t top_heads = 4;  // heads drawn in head_differences
  CurveAxis x = CurveAxis::step;  // the curves' x axis
};

struct FigureReport {
  std::vector<std::filesystem::path> written;  // in the order drawn
  std::vector<std::string> notes;              // "warning: ..." / "note: ...": what the caller should print
  std::vector<std::string> head_score_panels;  // the scores head_scores shows, in panel order ("induction" only where defined)
};

// Draws every figure the runs support into options.out_dir:
//   curves_<metric>, curves_train_loss  eval metrics and train loss per arm (mean over seeds, min–max band,
//                      by step; on options.x, each step's point at the seeds' mean x there)
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
// seed) on the x axis `x`, and the attention heatmaps of its first run with attention logs, at its
// last log. Same notes and errors as draw_figures.
FigureReport draw_arm_figures(const std::vector<std::filesystem::path>& run_files, const std::string& metric,
                              const std::filesystem::path& out_dir, const std::string& format, CurveAxis x = CurveAxis::step);

}  // namespace ablate::analysis
