// The local executor of `ablate sweep`: each run is its own `ablate run` child process (a crash
// takes down one run, not the sweep), at most `jobs` at a time, with its output in the run's
// ablate.log; a sweep-level progress display; a stop request (Ctrl-C, SIGTERM) forwards SIGTERM
// to the children, which checkpoint and record "interrupted", and starts nothing new. Children
// get SIGTERM too if the sweep process itself dies (PR_SET_PDEATHSIG).
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "sweep/run_state.hpp"
#include "train/progress.hpp"

namespace ablate::sweep {

// One run to train: `executable args...` in `dir`.
struct Task {
  std::string name;               // the run's readable name, for the display
  std::filesystem::path dir;      // its run directory (created here if missing)
  std::vector<std::string> args;  // after the executable: `run SPEC --set ... --out DIR ...`
  std::int64_t total_steps = 0;   // train.steps, for the display
  bool resume = false;            // continues an interrupted run (display only: args say it)
};

struct TaskOutcome {
  std::string name;
  std::filesystem::path dir, log;
  RunPhaseInfo phase;  // read from the run file after the child ended (a crash is recorded as failed)
  int exit_code = -1;  // the child's exit status; -1 if a signal ended it or it never started
  int signal = 0;      // the signal that ended it, 0 if none
  double seconds = 0;  // wall time of the child
  bool started = false;
  bool failed() const;  // failed run, or a child that ended in error before recording a run
};

// The line a run's end prints: "[3/16] done  NAME: step 700, REASON (11s)", at most `width`
// bytes (the reason cut first; "reached train.steps" left out as "done" says it), and for a
// failed run a second line with the path of its log.
std::string ended_line(const TaskOutcome& outcome, std::size_t finished, std::size_t total, std::size_t width);

struct LocalOptions {
  int jobs = 1;  // children at a time
  train::ProgressMode progress = train::ProgressMode::Lines;
};

struct LocalReport {
  std::vector<TaskOutcome> outcomes;  // one per task, in task order (not started ones too)
  bool interrupted = false;           // a stop was requested
};

// Runs the tasks; returns when every started child has ended. Writes the display to `out`.
LocalReport run_local(const std::filesystem::path& executable, const std::vector<Task>& tasks, const LocalOptions& options,
                      std::ostream& out);

// Asks a running run_local (or wait_for_job) to stop; async-signal-safe: the CLI calls it from
// its SIGINT/SIGTERM handler.
void request_stop();
bool stop_requested();

// The last `n` lines of a text file ("" if unreadable), for failure reports.
std::string tail_lines(const std::filesystem::path& file, std::size_t n);

}  // namespace ablate::sweep
