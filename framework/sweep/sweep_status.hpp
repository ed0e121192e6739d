// What `ablate sweep` knows and decides about the runs of a plan: each run's state read from its
// folder, the one-line counts and the per-run table (--status), what each run needs now (skip,
// resume, rerun, set aside) as executor tasks, and the failures to report at the end.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "sweep/local_executor.hpp"
#include "sweep/manifest.hpp"
#include "sweep/run_state.hpp"
#include "sweep/sweep_plan.hpp"

namespace ablate::sweep {

// The state of every run of `plan`, in plan order (the existing run files vetted by one child first).
std::vector<RunPhaseInfo> read_phases(const SweepPlan& plan);
// Per run of `plan` (`phases` from read_phases): for a finished or interrupted run made by other
// code than `registry` gives its spec now, what differs ("ffn/x 1.0.1 <hash> (was 1.0.0 <hash>)"):
// a run the sweep reruns (schedule_runs); nullopt for the others.
using StaleRuns = std::vector<std::optional<std::string>>;
StaleRuns stale_runs(const SweepPlan& plan, const std::vector<RunPhaseInfo>& phases, const PluginRegistry& registry);
// "8 runs: 5 done, 1 running, 1 failed, 0 diverged, 1 pending" (+ ", N interrupted" when any);
// with `stale`, "5 done (2 by other code: the sweep reruns them)".
std::string counts_line(const std::vector<RunPhaseInfo>& phases, const StaleRuns& stale = {});
// One line per run: state, step/total, name, id (and its Slurm job), why; with `stale`, that the
// sweep reruns a run made by other code, and what differs.
void print_runs(const SweepPlan& plan, const std::vector<RunPhaseInfo>& phases, Manifest& manifest, std::ostream& out,
                const StaleRuns& stale = {});

struct ScheduleOptions {
  bool rerun_failed = false;  // --rerun-failed
  bool keep_stale = false;    // --keep-stale: finished runs made by other code count as done
  bool slurm = false;         // the Slurm executor (which decides --resume itself; queued runs are not resubmitted)
  int threads = 0;            // each run's backend threads (0: the spec's)
};

struct Schedule {
  std::vector<Task> tasks;
  std::vector<std::size_t> task_run;                        // the plan index of each task
  std::size_t done = 0, failed = 0, busy = 0, resumed = 0;  // skipped as done/diverged, failed, running or queued; resumed tasks
  std::vector<std::string> stale_kept;                      // "name: what differs" of the runs --keep-stale kept
};

// What each run of `plan` needs, given `before` (read_phases). A run made by other code than
// `registry` gives it now is rerun (or restarted, if interrupted) with its folder kept under
// .attempts/, unless finished and `keep_stale`; failed runs are rerun likewise with `rerun_failed`.
// Folders set aside are said on `out`. Reads the Slurm queue for runs submitted before.
Schedule schedule_runs(const SweepPlan& plan, Manifest& manifest, const PluginRegistry& registry,
                       std::vector<RunPhaseInfo> before, const ScheduleOptions& options, std::ostream& out);

// One text per failed run (its reason, its log and the log's last lines), from the run files
// (`after`) and this invocation's `outcomes`.
std::vector<std::string> failure_reports(const SweepPlan& plan, const std::vector<RunPhaseInfo>& after,
                                         const std::vector<TaskOutcome>& outcomes);

}  // namespace ablate::sweep
