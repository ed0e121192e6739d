// The Slurm executor (slurm_executor.hpp): the batch script, sbatch and squeue.
#include "sweep/slurm_executor.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"
#include "sweep/sweep_display.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;
namespace {

constexpr auto kPollInterval = std::chrono::seconds(2);

struct ProgramOutput {
  int status = -1;   // exit status; -1: could not run, or ended by a signal
  std::string text;  // stdout and stderr together
};

// Runs a program (looked up on PATH) and collects its output.
ProgramOutput run_program(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back(shell_quote(a));
  ProgramOutput result;
  FILE* pipe = ::popen((join(quoted, " ") + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) result.text.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A name for the script that no earlier submission has: sweep-<UTC time>[-n].sbatch.
fs::path new_script_path(const fs::path& dir) {
  std::string stamp = results::utc_now_iso8601();
  std::erase_if(stamp, [](char c) { return c == ':' || c == '-'; });
  for (int n = 0;; ++n) {
    std::ostringstream name;
    name << "sweep-" << stamp;
    if (n) name << "-" << n;
    const fs::path p = dir / (name.str() + ".sbatch");
    if (!fs::exists(p)) return p;
  }
}

}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string sbatch_script(const fs::path& executable, const std::vector<Task>& tasks, const fs::path& output_dir,
                          const SlurmOptions& options) {
  if (tasks.empty()) throw Error("no runs to submit");
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Written by `ablate sweep`: array task i trains run i of the list below with `ablate run`,\n"
    << "# resuming it if it already has a run file. Each run's output goes to its ablate.log.\n"
    << "#SBATCH --job-name=" << options.job_name << "\n"
    << "#SBATCH --array=0-" << tasks.size() - 1 << "\n"
    << "#SBATCH --output=" << (output_dir / "%A_%a.out").string() << "\n"
    << "#SBATCH --cpus-per-task=" << options.cpus_per_task << "\n";
  if (!options.partition.empty()) s << "#SBATCH --partition=" << options.partition << "\n";
  if (!options.time.empty()) s << "#SBATCH --time=" << options.time << "\n";
  if (!options.mem.empty()) s << "#SBATCH --mem=" << options.mem << "\n";
  for (const std::string& line : options.extra_lines) s << (line.starts_with("#") ? "" : "#SBATCH ") << line << "\n";
  s << "set -euo pipefail\n"
    << "case \"${SLURM_ARRAY_TASK_ID:?not started as a Slurm array task}\" in\n";
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::vector<std::string> args;
    for (const std::string& a : tasks[i].args) args.push_back(shell_quote(a));
    s << "  " << i << ")  # " << tasks[i].name << "\n"
      << "    dir=" << shell_quote(tasks[i].dir.string()) << "\n"
      << "    args=(" << join(args, " ") << ") ;;\n";
  }
  s << "  *) echo \"no run for array task $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\n"
    << "esac\n"
    << "mkdir -p \"$dir\"\n"
    << "if [ -e \"$dir/run.h5\" ]; then args+=(--resume); fi\n"
    << "echo \"== $(date -u +%Y-%m-%dT%H:%M:%SZ) slurm job ${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID} on $(hostname)\" >>\"$dir/ablate.log\"\n"
    << "exec " << shell_quote(executable.string()) << " \"${args[@]}\" >>\"$dir/ablate.log\" 2>&1\n";
  return s.str();
}

SlurmSubmission submit_array(const fs::path& executable, const std::vector<Task>& tasks, const fs::path& sweep_dir,
                             const SlurmOptions& options) {
  const fs::path dir = fs::absolute(sweep_dir / "slurm");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message(), "check that the sweep directory is writable");
  SlurmSubmission sub;
  sub.script = new_script_path(dir);
  {
    std::ofstream f(sub.script);
    f << sbatch_script(executable, tasks, dir, options);
    if (!f) throw Error("cannot write " + sub.script.string(), "check that the sweep directory is writable");
  }
  const ProgramOutput r = run_program({"sbatch", "--parsable", sub.script.string()});
  if (r.status != 0) {
    const bool missing = r.status == 127;
    throw Error(missing ? std::string("sbatch was not found: is this a Slurm login node?")
                        : "sbatch refused the sweep (exit " + std::to_string(r.status) + "): " + trimmed(r.text),
                missing ? "run the sweep with --executor local, or from a host with the Slurm client (sbatch) on PATH"
                        : "check --partition, --time, --mem and --sbatch-line; the script is " + sub.script.string());
  }
  // --parsable prints "<job id>[;<cluster>]".
  std::string out = trimmed(r.text);
  if (const auto nl = out.rfind('\n'); nl != std::string::npos) out = out.substr(nl + 1);  // after any warnings
  sub.job_id = out.substr(0, out.find(';'));
  if (sub.job_id.empty() || sub.job_id.find_first_not_of("0123456789") != std::string::npos)
    throw Error("sbatch printed no job id: '" + trimmed(r.text) + "'",
                "check the Slurm client; the script is " + sub.script.string());
  return sub;
}

std::optional<std::set<int>> queued_array_tasks(const std::string& job_id) {
  const ProgramOutput r = run_program({"squeue", "--noheader", "--array", "--jobs", job_id, "--format", "%K"});
  std::set<int> tasks;
  if (r.status != 0) {
    // A job Slurm has already purged from its memory is an error for squeue: it left the queue.
    if (r.text.find("Invalid job id") != std::string::npos) return tasks;
    return std::nullopt;
  }
  std::istringstream in(r.text);
  for (std::string line; std::getline(in, line);) {
    line = trimmed(line);
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) tasks.insert(std::stoi(line));
  }
  return tasks;
}

bool wait_for_job(const std::string& job_id, const std::vector<Task>& tasks, train::ProgressMode progress, std::ostream& out) {
  SweepDisplay display(out, progress);
  std::vector<const Task*> all;
  for (const Task& t : tasks) all.push_back(&t);
  const auto start = std::chrono::steady_clock::now();
  while (!stop_requested()) {
    const auto queued = queued_array_tasks(job_id);
    if (!queued) throw Error("cannot ask squeue about slurm job " + job_id, "is the Slurm client (squeue) on PATH?");
    if (queued->empty()) return true;
    if (display.status_due()) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      display.status("slurm job " + job_id + ": " + std::to_string(queued->size()) + " array task(s) queued or running; " +
                     running_steps(all) + " (" + train::format_duration(s) + ")");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return false;
}

}  // namespace ablate::sweep
