// The Slurm executor of `ablate sweep`: the pending runs of a sweep become one `sbatch --array`
// job (one array task per run) whose script trains each run with `ablate run` into its folder,
// resuming it if it has a run file. Slurm does the scheduling; the state of each run is read
// back from its run file (`ablate sweep --status`). Optionally waits for the job to leave the queue.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "sweep/local_executor.hpp"

namespace ablate::sweep {

struct SlurmOptions {
  std::string job_name;                  // --job-name
  std::string partition, time, mem;      // passed on when set (--partition, --time, --mem)
  int cpus_per_task = 1;                 // --cpus-per-task
  std::vector<std::string> extra_lines;  // more sbatch options: "--qos=high" or "#SBATCH --qos=high"
};

struct SlurmSubmission {
  std::string job_id;
  std::filesystem::path script;
};

// The batch script for `tasks` (array index i trains tasks[i]; args without --resume, which the
// script adds when the run already has a run file). Pure, for tests.
std::string sbatch_script(const std::filesystem::path& executable, const std::vector<Task>& tasks,
                          const std::filesystem::path& output_dir, const SlurmOptions& options);

// Writes the script into `sweep_dir`/slurm/ and submits it with `sbatch --parsable`. Throws
// ablate::Error with sbatch's message if the submission fails (the script is kept for a look).
SlurmSubmission submit_array(const std::filesystem::path& executable, const std::vector<Task>& tasks,
                             const std::filesystem::path& sweep_dir, const SlurmOptions& options);

// The array indices of `job_id` still in the queue (pending or running), from squeue; empty if
// the job has left it; nullopt if squeue cannot be asked (not a Slurm host).
std::optional<std::set<int>> queued_array_tasks(const std::string& job_id);

// Polls squeue until `job_id` has left the queue, showing the runs' steps (read from their run
// files) on `out`. Returns false if a stop was requested first (the job keeps running).
bool wait_for_job(const std::string& job_id, const std::vector<Task>& tasks, train::ProgressMode progress, std::ostream& out);

// `word` quoted for a POSIX shell.
std::string shell_quote(const std::string& word);

}  // namespace ablate::sweep
