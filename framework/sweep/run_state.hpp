// Where one run of a sweep stands, read from its directory alone (run.h5 and whether a live
// writer holds it): what `ablate sweep --status` shows and what a re-run of the sweep decides by.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ablate::sweep {

enum class RunPhase {
  Pending,      // no run file yet
  Running,      // a live writer holds the run file
  Completed,    // done
  Diverged,     // done: NaN/Inf (a result of the configuration, not rerun)
  Failed,       // an error ended it: rerun only with --rerun-failed
  Interrupted,  // stopped (a signal, --stop-after) or killed without recording it: resumed on the next sweep
};
const char* to_string(RunPhase phase);  // pending, running, done, diverged, failed, interrupted

struct RunPhaseInfo {
  RunPhase phase = RunPhase::Pending;
  std::int64_t step = 0;     // the last step recorded in the run file
  std::string reason;        // why it stopped, or why it is counted as it is
  bool writer_died = false;  // the file says running but no process writes it (a killed or crashed run)
};

// The phase of the run whose directory is `run_dir`. An unreadable run file counts as failed.
RunPhaseInfo read_run_phase(const std::filesystem::path& run_dir);
// Whether a run has got as far as a plan that trains to `stop_at` wants (0: to the end): completed
// or diverged, or with stop_at stopped (interrupted) at or past that step (a tuning rung).
bool reached(const RunPhaseInfo& p, std::int64_t stop_at);

}  // namespace ablate::sweep
