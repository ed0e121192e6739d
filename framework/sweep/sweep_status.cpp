// The runs of a sweep plan (sweep_status.hpp): states, the status table, the schedule of what
// each run needs (stale code and failed runs set aside under .attempts/), and the failure report.
#include "sweep/sweep_status.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"
#include "sweep/slurm_executor.hpp"
#include "train/code_identity.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;
namespace {

// Moves a run's folder to <sweep>/.attempts/<folder>.<n> (kept, not deleted) so the run starts
// afresh; hidden folders are not searched by `ablate compare` and `ablate plot`.
fs::path set_aside(const fs::path& sweep_dir, const std::string& folder) {
  const fs::path attempts = sweep_dir / ".attempts";
  std::error_code ec;
  fs::create_directories(attempts, ec);
  for (int n = 1;; ++n) {
    const fs::path to = attempts / (folder + "." + std::to_string(n));
    if (fs::exists(to)) continue;
    fs::rename(sweep_dir / folder, to, ec);
    if (ec)
      throw Error("cannot move the failed run " + (sweep_dir / folder).string() + " to " + to.string() + ": " + ec.message());
    return to;
  }
}

// If the finished or interrupted run in `run_dir` was made by other code than `spec` gets from
// `registry` now, what differs ("ffn/x 1.0.1 <hash> (was 1.0.0 <hash>)"); nullopt if the same, or
// if there is no readable run to judge (pending, or failed: handled as such).
std::optional<std::string> stale_code(const fs::path& run_dir, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                                      RunPhase phase) {
  if (phase != RunPhase::Completed && phase != RunPhase::Diverged && phase != RunPhase::Interrupted) return std::nullopt;
  const results::RunInfo info = results::RunReader(run_dir / "run.h5").info();
  const train::CodeIdentity now = train::code_identity(spec, registry);
  if (info.code_id == now.id) return std::nullopt;
  return train::code_difference(info.plugin_code, now.parts);
}

}  // namespace

std::vector<RunPhaseInfo> read_phases(const SweepPlan& plan) {
  std::vector<fs::path> files;  // those that exist, vetted by one child first (results::vet_run_files)
  for (const SweepRun& run : plan.runs)
    if (std::error_code ec; fs::is_regular_file(plan.run_dir(run) / "run.h5", ec)) files.push_back(plan.run_dir(run) / "run.h5");
  results::vet_run_files(files);
  std::vector<RunPhaseInfo> phases;
  for (const SweepRun& run : plan.runs) phases.push_back(read_run_phase(plan.run_dir(run)));
  return phases;
}

StaleRuns stale_runs(const SweepPlan& plan, const std::vector<RunPhaseInfo>& phases, const PluginRegistry& registry) {
  StaleRuns out;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    try {
      out.push_back(stale_code(plan.run_dir(plan.runs[i]), plan.runs[i].spec, registry, phases[i].phase));
    } catch (const std::exception&) {
      out.push_back(std::nullopt);  // an unreadable file: counted as failed already
    }
  }
  return out;
}

std::string counts_line(const std::vector<RunPhaseInfo>& phases, const StaleRuns& stale) {
  std::map<RunPhase, std::size_t> n;
  for (const auto& p : phases) ++n[p.phase];
  using P = RunPhase;
  std::size_t done_by_other_code = 0;
  for (std::size_t i = 0; i < stale.size() && i < phases.size(); ++i)
    done_by_other_code += stale[i] && phases[i].phase == P::Completed;
  std::string line = std::to_string(phases.size()) + " run" + (phases.size() == 1 ? "" : "s") + ": " +
                     std::to_string(n[P::Completed]) + " done" +
                     (done_by_other_code ? " (" + std::to_string(done_by_other_code) + " by other code: the sweep reruns them)"
                                         : std::string()) +
                     ", " + std::to_string(n[P::Running]) + " running, " + std::to_string(n[P::Failed]) + " failed, " +
                     std::to_string(n[P::Diverged]) + " diverged, " + std::to_string(n[P::Pending]) + " pending";
  if (n[P::Interrupted]) line += ", " + std::to_string(n[P::Interrupted]) + " interrupted";
  return line;
}

void print_runs(const SweepPlan& plan, const std::vector<RunPhaseInfo>& phases, Manifest& manifest, std::ostream& out,
                const StaleRuns& stale) {
  std::size_t width = 4;
  for (const auto& run : plan.runs) width = std::max(width, run.point.name.size());
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const SweepRun& run = plan.runs[i];
    const RunPhaseInfo& p = phases[i];
    std::string line = std::string(to_string(p.phase));
    line.resize(12, ' ');
    std::string steps = std::to_string(p.step) + "/" + std::to_string(run.spec.train.steps);
    steps.resize(12, ' ');
    std::string name = run.point.name;
    name.resize(width + 2, ' ');
    line += steps + name + run.id;
    const ManifestRun* m = manifest.find(run.id);
    if (m && !m->slurm_job.empty() && (p.phase == RunPhase::Pending || p.phase == RunPhase::Running))
      line += "  slurm job " + m->slurm_job;
    if (!p.reason.empty() && p.phase != RunPhase::Running) line += "  " + p.reason;
    if (i < stale.size() && stale[i]) line += "  made by other code, the sweep reruns it: now " + *stale[i];
    out << "  " << line << "\n";
  }
}

Schedule schedule_runs(const SweepPlan& plan, Manifest& manifest, const PluginRegistry& registry,
                       std::vector<RunPhaseInfo> before, const ScheduleOptions& options, std::ostream& out) {
  // Slurm: runs whose earlier array task is still queued are not submitted twice.
  std::map<std::string, std::optional<std::set<int>>> queue;
  auto still_queued = [&](const std::string& id) {
    const ManifestRun* m = manifest.find(id);
    if (!options.slurm || !m || m->slurm_job.empty()) return false;
    const auto underscore = m->slurm_job.find('_');
    const std::string job = m->slurm_job.substr(0, underscore);
    int index = -1;
    if (underscore != std::string::npos)
      std::from_chars(m->slurm_job.data() + underscore + 1, m->slurm_job.data() + m->slurm_job.size(), index);
    if (!queue.count(job)) queue[job] = queued_array_tasks(job);
    const auto& q = queue[job];
    return q && q->count(index) > 0;
  };

  Schedule s;
  const fs::path& dir = plan.dir;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const SweepRun& run = plan.runs[i];
    using P = RunPhase;
    // A run made by other code is not this sweep's result: rerun it (keeping its folder), or with
    // --keep-stale count a finished one as done; an interrupted one cannot continue with other code.
    if (const auto stale = stale_code(plan.run_dir(run), run.spec, registry, before[i].phase)) {
      const bool finished = before[i].phase == P::Completed || before[i].phase == P::Diverged;
      if (finished && options.keep_stale) {
        s.stale_kept.push_back(run.point.name + ": " + *stale);
      } else {
        out << (finished ? "rerunning run " : "restarting interrupted run ") << run.point.name
            << ": it was made by other code (now " << *stale << "); its folder is kept as " << set_aside(dir, run.folder).string()
            << "\n";
        before[i] = RunPhaseInfo{};
      }
    }
    bool resume = false;
    switch (before[i].phase) {
      case P::Completed:
      case P::Diverged: ++s.done; continue;
      case P::Running: ++s.busy; continue;
      case P::Failed:
        if (!options.rerun_failed) {
          ++s.failed;
          continue;
        }
        out << "rerunning failed run " << run.point.name << "; its folder is kept as " << set_aside(dir, run.folder).string()
            << "\n";
        break;
      case P::Interrupted:
        if (reached(before[i], plan.stop_at)) {  // at its tuning rung: done for this plan
          ++s.done;
          continue;
        }
        resume = true;
        break;
      case P::Pending: break;
    }
    if (still_queued(run.id)) {
      ++s.busy;
      continue;
    }
    s.resumed += resume;
    Task t;
    t.name = run.point.name;
    t.dir = plan.run_dir(run);
    t.args = run_arguments(plan, run, resume && !options.slurm, options.threads);  // the Slurm script decides --resume itself
    t.total_steps = run.spec.train.steps;
    t.resume = resume;
    s.tasks.push_back(std::move(t));
    s.task_run.push_back(i);
  }
  return s;
}

std::vector<std::string> failure_reports(const SweepPlan& plan, const std::vector<RunPhaseInfo>& after,
                                         const std::vector<TaskOutcome>& outcomes) {
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const fs::path log = plan.run_dir(plan.runs[i]) / "ablate.log";
    const auto o =
        std::find_if(outcomes.begin(), outcomes.end(), [&](const auto& t) { return t.dir == plan.run_dir(plan.runs[i]); });
    const bool failed_now = o != outcomes.end() && o->failed();
    if (after[i].phase != RunPhase::Failed && !failed_now) continue;
    const std::string reason = failed_now ? o->phase.reason : after[i].reason;
    std::string text = plan.runs[i].point.name + ": " + reason + "\n    log: " + log.string();
    std::string tail = tail_lines(log, 3);
    for (std::size_t at = tail.find('\n'); at != std::string::npos; at = tail.find('\n', at + 5)) tail.replace(at, 1, "\n    | ");
    if (!tail.empty()) text += "\n    | " + tail;
    failures.push_back(text);
  }
  return failures;
}

}  // namespace ablate::sweep
