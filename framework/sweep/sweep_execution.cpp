// execute_sweep (sweep_execution.hpp): the manifest, the schedule, the local or Slurm executor, and
// the report of how the runs ended.
#include "sweep/sweep_execution.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <system_error>
#include <thread>

#include "ablate/error.hpp"
#include "sweep/local_executor.hpp"
#include "sweep/manifest.hpp"
#include "sweep/run_state.hpp"
#include "sweep/sweep_status.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;
namespace {

// Submits the tasks as one array job and records each run's array task in the manifest; with
// `wait`, follows the job until it has left the queue. True if a stop ended the wait.
bool submit_to_slurm(const SweepPlan& plan, const validation::LoadedSpec& base, const Schedule& schedule, Manifest& manifest,
                     const ExecutionOptions& options, std::ostream& out) {
  const std::vector<Task>& tasks = schedule.tasks;
  if (tasks.empty()) {
    out << "nothing to submit\n";
    return false;
  }
  SlurmOptions so = options.slurm_options;
  so.job_name = "ablate-" + plan.experiment;
  so.cpus_per_task = options.threads > 0 ? options.threads : 1;
  if (options.threads == 0 && backend_has_threads(base.spec))
    so.cpus_per_task = std::stoi(base.spec.backend.options.at("threads"));
  const SlurmSubmission sub = submit_array(options.executable, tasks, plan.dir, so);
  for (std::size_t k = 0; k < tasks.size(); ++k)
    manifest.find(plan.runs[schedule.task_run[k]].id)->slurm_job = sub.job_id + "_" + std::to_string(k);
  write_manifest(plan.dir, manifest);
  out << "submitted slurm job " << sub.job_id << ": " << tasks.size() << " array task(s), script " << sub.script.string() << "\n";
  if (!options.wait) return false;
  const bool interrupted = !wait_for_job(sub.job_id, tasks, options.progress, out);
  if (interrupted) out << "stopped waiting; the slurm job keeps running (" << options.status_command << ")\n";
  return interrupted;
}

// log.tensorboard: SWEEP/tensorboard/<point name> links to each run's folder (where its event
// file is), so that `tensorboard --logdir SWEEP/tensorboard` lists the runs by arm and seed.
void link_tensorboard_runs(const SweepPlan& plan, std::ostream& out) {
  std::map<std::string, int> uses;
  auto name_of = [](const SweepRun& run) {
    std::string name = run.point.name;
    std::replace(name.begin(), name.end(), '/', '_');
    return name;
  };
  for (const SweepRun& run : plan.runs) ++uses[name_of(run)];
  const fs::path links = plan.dir / "tensorboard";
  for (const SweepRun& run : plan.runs) {
    if (!run.spec.log.tensorboard) continue;
    const std::string name = uses[name_of(run)] > 1 ? run.folder : name_of(run);  // two runs of one point: by folder
    std::error_code ec;
    fs::create_directories(links, ec);
    const fs::path link = links / name, target = fs::path("..") / run.folder;
    if (fs::is_symlink(fs::symlink_status(link, ec))) {
      if (fs::read_symlink(link, ec) == target) continue;  // linked by an earlier invocation
      fs::remove(link, ec);                                // to the folder of an earlier spec of this point
    }
    ec.clear();  // not there yet (symlink_status says so through ec)
    fs::create_directory_symlink(target, link, ec);
    if (ec) out << "warning: cannot link " << link.string() << " to the run's folder: " << ec.message() << "\n";
  }
}

}  // namespace

ExecutionReport execute_sweep(const SweepPlan& plan, const validation::LoadedSpec& base, const ExecutionOptions& options,
                              std::ostream& out) {
  // Take the directory, record the runs, decide what each needs.
  const fs::path& dir = plan.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw UsageError("cannot create the sweep directory " + dir.string() + ": " + ec.message(), "choose another with --out");
  const SweepLock lock(dir);
  Manifest manifest = read_manifest(dir);  // under the lock: no other sweep can change it now
  const std::size_t added = manifest.merge(plan);
  manifest.baseline = options.baseline;
  manifest.tuned_keys = options.tuned_keys;
  write_manifest(dir, manifest);
  link_tensorboard_runs(plan, out);

  ScheduleOptions schedule_options;
  schedule_options.rerun_failed = options.rerun_failed;
  schedule_options.keep_stale = options.keep_stale;
  schedule_options.slurm = options.slurm;
  schedule_options.threads = options.threads;
  const Schedule schedule = schedule_runs(plan, manifest, *base.registry, read_phases(plan), schedule_options, out);
  const std::vector<Task>& tasks = schedule.tasks;
  out << "sweep " << plan.experiment << ": " << plan.runs.size() << " runs in " << dir.string() << " (" << added
      << " new to the manifest)\n  " << tasks.size() << " to run (" << schedule.resumed << " resumed), " << schedule.done
      << " already done or diverged, " << schedule.busy << " running or queued elsewhere";
  if (schedule.failed) out << ", " << schedule.failed << " failed (not rerun: add --rerun-failed)";
  out << "\n";
  for (const std::string& k : schedule.stale_kept) out << "warning: kept (--keep-stale) a run made by other code: " << k << "\n";

  ExecutionReport report;
  std::vector<TaskOutcome> outcomes;
  if (options.slurm) {
    report.interrupted = submit_to_slurm(plan, base, schedule, manifest, options, out);
    if (!options.wait) {
      report.left_queued = true;
      return report;
    }
  } else if (!tasks.empty()) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    out << "local: " << std::min<std::size_t>(static_cast<std::size_t>(options.jobs), tasks.size()) << " at a time, "
        << options.threads << " thread(s) each, " << cores << " cores\n";
    LocalReport local = run_local(options.executable, tasks, {options.jobs, options.progress}, out);
    report.interrupted = local.interrupted;
    outcomes = std::move(local.outcomes);
  }

  // The end: every failure with its log, the state of all runs.
  const std::vector<RunPhaseInfo> after = read_phases(plan);
  report.failures = failure_reports(plan, after, outcomes);
  out << "\n" << counts_line(after) << "\n";
  if (!report.failures.empty()) {
    out << report.failures.size() << " failed run(s):\n";
    for (const std::string& f : report.failures) out << "  " << f << "\n";
    if (!options.rerun_failed) out << "fix the cause, then run again with --rerun-failed\n";
  }
  for (const SweepRun& run : plan.runs)
    if (fs::exists(plan.run_dir(run) / "run.h5")) report.run_files.push_back(plan.run_dir(run) / "run.h5");
  return report;
}

}  // namespace ablate::sweep
