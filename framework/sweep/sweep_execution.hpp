// Running a planned sweep (what `ablate sweep` does after planning): the sweep directory taken
// under its lock, the manifest merged and written, what each run needs decided (run, resume,
// skip, rerun), the runs trained here (child processes) or submitted as one Slurm array job, and
// at the end the failures with their logs and the state of every run. The command only parses
// its options, installs the stop signals and prints the comparison.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "sweep/slurm_executor.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/progress.hpp"
#include "validation/validation.hpp"

namespace ablate::sweep {

struct ExecutionOptions {
  std::filesystem::path executable;  // the `ablate` that trains each run
  bool rerun_failed = false;         // failed runs again (their folders kept under .attempts/)
  bool keep_stale = false;           // finished runs made by other code count as done
  bool slurm = false;                // one Slurm array job instead of child processes here
  int jobs = 1;                      // local: runs at a time
  int threads = 0;                   // each run's backend threads; 0: the spec's own
  train::ProgressMode progress = train::ProgressMode::Lines;
  SlurmOptions slurm_options;           // partition, time, mem, extra sbatch lines (job name and cpus are set here)
  bool wait = false;                    // slurm: wait until the job has left the queue
  std::string baseline;                 // the manifest's baseline arm ("" = none)
  std::vector<std::string> tuned_keys;  // the manifest's tuned keys (a tuned sweep's confirmation phase)
  std::string status_command;           // how to follow the sweep, for the messages ("ablate sweep SPEC --status")
};

struct ExecutionReport {
  bool left_queued = false;                      // slurm without wait: submitted (or nothing to submit); nothing ran here
  bool interrupted = false;                      // a stop was requested
  std::vector<std::string> failures;             // one line per failed run: its reason and log
  std::vector<std::filesystem::path> run_files;  // every run.h5 the plan's runs have, in plan order
};

// Runs what `plan` still needs in plan.dir; progress and the summary go to `out`. Throws
// UsageError when the directory cannot be created or another sweep holds its lock.
ExecutionReport execute_sweep(const SweepPlan& plan, const validation::LoadedSpec& base, const ExecutionOptions& options,
                              std::ostream& out);

}  // namespace ablate::sweep
