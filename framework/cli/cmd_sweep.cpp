// `ablate sweep SPEC.yaml`: runs the sweep a spec describes (framework/sweep): every run of the
// grid/zip/seeds/runs expansion is loaded and validated first, then the runs that are not done
// are trained, by child processes here (--executor local) or as one Slurm array job (--executor
// slurm). Re-running the command skips finished runs, resumes interrupted ones and reruns failed
// ones only with --rerun-failed; --status and --dry-run only look. At the end it compares the
// runs (report.md, summary.csv/json) and draws the figures in the sweep directory.
#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <thread>

#include "ablate/error.hpp"
#include "analysis/report_files.hpp"
#include "analysis/run_summary.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "core/text.hpp"
#include "sweep/local_executor.hpp"
#include "sweep/manifest.hpp"
#include "sweep/sweep_execution.hpp"
#include "sweep/sweep_plan.hpp"
#include "sweep/sweep_status.hpp"
#include "sweep/tuning.hpp"
#include "train/runner.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

extern "C" void on_sweep_signal(int) { sweep::request_stop(); }

std::string settings_text(const spec::SweepPoint& point) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : point.settings) parts.push_back(k + "=" + v);
  return parts.empty() ? "(the base configuration)" : join(parts, " ");
}

// The `ablate` that trains each run: this program's file. When it was rebuilt while the sweep ran
// (the kernel then names the old file "PATH (deleted)"), the program now at PATH: a sweep reads
// the executable again for each phase, and each run records the code that made it.
fs::path executable_path() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the ablate executable (/proc/self/exe): " + ec.message());
  constexpr std::string_view kDeleted = " (deleted)";
  if (std::string text = self.string(); text.ends_with(kDeleted)) {
    text.resize(text.size() - kDeleted.size());
    if (fs::exists(text, ec)) self = text;
  }
  return self;
}

}  // namespace

std::string base_arm(const spec::ExperimentSpec& base) {
  // Without a grid the base configuration is the one point, and the runs are arms beside it.
  if (!base.sweep.zip.empty() || (base.sweep.grid.empty() && base.sweep.runs.empty())) return "";
  const std::map<std::string, std::string> flat = analysis::flatten_spec(spec::resolved_yaml(base));
  std::vector<std::string> parts, keys;
  const auto add = [&](const std::string& key) {  // the base's value of a varied key, or (unset)
    if (key == "train.seed" || std::find(keys.begin(), keys.end(), key) != keys.end()) return;
    const auto it = flat.find(key);
    keys.push_back(key);
    parts.push_back(key + "=" + (it == flat.end() ? std::string(analysis::kUnset) : it->second));
  };
  for (const auto& [key, values] : base.sweep.grid) {
    const auto it = flat.find(key);
    if (it == flat.end() || std::find(values.begin(), values.end(), it->second) == values.end()) return "";
    add(key);
  }
  // Keys only an explicit run sets tell its arm from the base's. A key the base does not set (a
  // run's `task.tokenizer` where the base reads the task's own tokens; a run's `model.block.gate`
  // of rezero, an option of a plugin the base does not use) is one the base's runs lack: (unset).
  for (const auto& run : base.sweep.runs)
    for (const auto& [key, value] : run) add(key);
  return join(parts, ",");
}

namespace {

po::options_description sweep_options() {
  po::options_description options(
      "ablate sweep SPEC.yaml [options]\n\n"
      "Runs every run of the spec's sweep (sweep.grid x sweep.zip, explicit sweep.runs, each per\n"
      "seed of sweep.seeds) into the sweep directory: one folder <name>-<run id> per run and the\n"
      "manifest sweep.yaml. Every run is validated before any starts. Running it again skips done\n"
      "and diverged runs, resumes interrupted ones from their checkpoints, and reruns failed ones\n"
      "with --rerun-failed only; runs added to the spec are run, old ones are left alone. A run\n"
      "made by other code (a plugin's library or Ablate's compute version changed: run.h5 code_id)\n"
      "is rerun, its folder kept under .attempts/ (--keep-stale keeps finished ones). Then it\n"
      "compares the runs (report.md, summary.csv/json) and draws figures/ in the sweep directory.\n"
      "With sweep.tune, each arm first tries the listed settings on the tuning seeds (DIR/tuning), then\n"
      "every arm runs at its own best setting on sweep.seeds, and only those runs are compared.\n"
      "Exit 0 when no run failed (diverged runs are results), 1 when some failed, 130 when stopped.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("spec", po::value<std::string>(), "the spec file (positional)")
      ("out,o", po::value<std::string>(), "the sweep directory (default: results/<name>)")
      ("dry-run", "print the runs, their ids and folders; run nothing")
      ("status", "print the state of every run (done / running / failed / diverged / pending / interrupted)")
      ("rerun-failed", "run failed runs again (their folders are kept under .attempts/)")
      ("keep-stale", "count finished runs made by other code (another plugin library or Ablate compute version) as done "
                     "instead of rerunning them; interrupted ones are restarted either way")
      ("executor,e", po::value<std::string>()->default_value("local"), "local (child processes here) or slurm (one sbatch array job)")
      ("jobs,j", po::value<int>(), "local: runs at a time (default 1)")
      ("threads-per-run,t", po::value<int>(),
       "threads of each run's backend (default local: cores / jobs; slurm: the spec's) — not part of the run id")
      ("progress", po::value<std::string>()->default_value("auto"), "auto, bar, lines or quiet (the sweep display)")
      ("no-compare", "skip the comparison and figures at the end")
      ("baseline,b", po::value<std::string>(),
       "the comparison's baseline arm, KEY=VALUE[,KEY=VALUE] (default: the spec's base configuration if it is an arm)")
      ("metric,m", po::value<std::string>(), "the compared eval metric (default: as ablate compare)")
      ("summary", po::value<std::string>(), "how the comparison reduces a run to one value (see ablate compare --help)")
      ("partition", po::value<std::string>(), "slurm: sbatch --partition")
      ("time", po::value<std::string>(), "slurm: sbatch --time limit per run, e.g. 2:00:00")
      ("mem", po::value<std::string>(), "slurm: sbatch --mem per run, e.g. 4G")
      ("sbatch-line", po::value<std::vector<std::string>>()->composing(), "slurm: another sbatch option, e.g. --qos=high (repeatable)")
      ("wait", "slurm: wait until the job has left the queue, then compare");
  // clang-format on
  add_spec_options(options, kOverridesHelp);
  return options;
}

// The command line read and checked before anything is loaded: the comparison's options too, so
// a mistake there fails now, not after the runs.
struct SweepArgs {
  std::string file;
  bool slurm = false;
  int jobs = 1, threads = 0;  // threads: 0 = the spec's own
  analysis::CompareOptions compare;
  train::ProgressMode progress = train::ProgressMode::Lines;
};

SweepArgs read_args(const po::variables_map& vm) {
  if (!vm.count("spec"))
    throw UsageError("ablate sweep: no spec file given", "usage: ablate sweep SPEC.yaml [--status | --dry-run] [options]");
  if (vm.count("dry-run") && vm.count("status"))
    throw UsageError("ablate sweep: --dry-run and --status are two different questions; give one",
                     "--dry-run lists the runs the spec defines; --status the state of those in the directory");
  SweepArgs a;
  a.file = vm["spec"].as<std::string>();
  const std::string executor = vm["executor"].as<std::string>();
  if (executor != "local" && executor != "slurm")
    throw UsageError("ablate sweep: --executor '" + executor + "' is not one of local, slurm");
  a.slurm = executor == "slurm";
  for (const char* o : {"partition", "time", "mem", "sbatch-line", "wait"})
    if (!a.slurm && vm.count(o)) throw UsageError(std::string("ablate sweep: --") + o + " is an option of --executor slurm");
  if (a.slurm && vm.count("jobs"))
    throw UsageError("ablate sweep: --jobs is an option of --executor local; Slurm decides how many run at once");
  a.compare.baseline_is_default = !vm.count("baseline");
  if (vm.count("baseline")) a.compare.baseline = vm["baseline"].as<std::string>();
  if (vm.count("metric")) a.compare.metric = vm["metric"].as<std::string>();
  if (vm.count("summary")) a.compare.summary = analysis::parse_run_value(vm["summary"].as<std::string>());
  a.progress = progress_mode("sweep", vm["progress"].as<std::string>());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  a.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : 1;
  if (a.jobs < 1) throw UsageError("ablate sweep: --jobs must be at least 1");
  if (vm.count("threads-per-run")) {
    a.threads = vm["threads-per-run"].as<int>();
    if (a.threads < 1) throw UsageError("ablate sweep: --threads-per-run must be at least 1");
  } else if (!a.slurm) {
    a.threads = std::max(1, cores / a.jobs);
  }
  return a;
}

// --dry-run: the runs the spec defines, their ids, folders and settings, and those its folder holds
// already made by other code (which the sweep reruns).
void print_dry_run(const sweep::SweepPlan& plan, const PluginRegistry& registry, std::ostream& out) {
  out << "sweep " << plan.experiment << ": " << plan.runs.size() << " run" << (plan.runs.size() == 1 ? "" : "s") << " in "
      << plan.dir.string() << "\n";
  const sweep::StaleRuns stale = sweep::stale_runs(plan, sweep::read_phases(plan), registry);
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const sweep::SweepRun& run = plan.runs[i];
    out << "  " << run.id << "  " << run.folder << (stale[i] ? "  (made by other code: the sweep reruns it)" : "") << "\n      "
        << settings_text(run.point) << "\n";
  }
}

// --status: the state of every run in the directory (runs made by other code marked: the sweep
// reruns them), and how many runs of earlier versions of the spec the manifest also holds.
void print_status(const sweep::SweepPlan& plan, const PluginRegistry& registry, std::ostream& out) {
  sweep::Manifest manifest = sweep::read_manifest(plan.dir);
  const auto phases = sweep::read_phases(plan);
  const sweep::StaleRuns stale = sweep::stale_runs(plan, phases, registry);
  out << "sweep " << plan.experiment << " in " << plan.dir.string() << "\n";
  sweep::print_runs(plan, phases, manifest, out, stale);
  out << sweep::counts_line(phases, stale) << "\n";
  std::size_t others = 0;
  for (const sweep::ManifestRun& m : manifest.runs)
    others += std::none_of(plan.runs.begin(), plan.runs.end(), [&](const auto& r) { return r.id == m.id; });
  if (others)
    out << others << " more run(s) in " << (plan.dir / sweep::kManifestFile).string()
        << " belong to earlier versions of the spec\n";
}

sweep::ExecutionOptions execution_options(const po::variables_map& vm, const SweepArgs& a, const LoadedSpec& base,
                                          const fs::path& dir) {
  sweep::ExecutionOptions run;
  run.executable = executable_path();
  run.rerun_failed = vm.count("rerun-failed") > 0;
  run.keep_stale = vm.count("keep-stale") > 0;
  run.slurm = a.slurm;
  run.jobs = a.jobs;
  run.threads = a.threads;
  run.progress = a.progress;
  if (vm.count("partition")) run.slurm_options.partition = vm["partition"].as<std::string>();
  if (vm.count("time")) run.slurm_options.time = vm["time"].as<std::string>();
  if (vm.count("mem")) run.slurm_options.mem = vm["mem"].as<std::string>();
  run.slurm_options.extra_lines = repeated(vm, "sbatch-line");
  run.wait = vm.count("wait") > 0;
  run.baseline = base_arm(base.spec);
  run.status_command = "ablate sweep " + a.file + " --status" + (vm.count("out") ? " --out " + dir.string() : "");
  return run;
}

// The comparison and figures at the end; a failure there is reported, and the exit code says so
// unless a run failed already.
int compare_runs(const sweep::ExecutionReport& report, analysis::CompareOptions compare, const std::string& baseline,
                 const fs::path& dir, int code, std::ostream& out, std::ostream& err) {
  out << "\n";
  try {
    if (compare.baseline_is_default) compare.baseline = baseline;
    print_analysis(analysis::analyse(report.run_files, compare, dir, dir / "figures"), "text", "ablate sweep", out, err);
  } catch (const std::exception& e) {
    err << "ablate sweep: the comparison failed: " << e.what() << "\n";
    if (const auto* ae = dynamic_cast<const Error*>(&e); ae && !ae->hint().empty()) err << "  hint: " << ae->hint() << "\n";
    if (code == kExitOk) code = dynamic_cast<const UsageError*>(&e) ? kExitUsage : kExitRunFailed;
  }
  return code;
}

// --baseline names an arm of the plan's runs (else the comparison after them would fail): checked
// before anything runs.
void check_baseline(const sweep::SweepPlan& plan, const analysis::CompareOptions& compare) {
  if (compare.baseline_is_default) return;
  std::vector<std::string> specs;
  for (const sweep::SweepRun& run : plan.runs) specs.push_back(train::resolved_run_yaml(run.spec));
  try {
    analysis::check_baseline(specs, compare);
  } catch (const UsageError& e) {
    throw UsageError(std::string("ablate sweep: --") + e.what(), e.hint());
  }
}

// The end of a sweep whose runs ran: the comparison (unless --no-compare), and the exit code.
int finish(const sweep::ExecutionReport& report, const po::variables_map& vm, const analysis::CompareOptions& compare,
           const std::string& baseline, const fs::path& dir, std::ostream& out, std::ostream& err) {
  const int code = report.failures.empty() ? kExitOk : kExitRunFailed;
  if (vm.count("no-compare") || report.run_files.empty()) return code;
  return compare_runs(report, compare, baseline, dir, code, out, err);
}

// Runs one plan (a sweep, or a phase of a tuned one) to its end; the exit code when the command
// stops there (submitted to Slurm without waiting, or interrupted), else nothing.
std::optional<int> execute(const sweep::SweepPlan& plan, const LoadedSpec& base, const sweep::ExecutionOptions& run,
                           sweep::ExecutionReport& report, std::ostream& out) {
  {
    const StopSignals signals(on_sweep_signal);
    report = sweep::execute_sweep(plan, base, run, out);
  }
  if (report.left_queued) {
    out << "follow it with: " << run.status_command << "\n";
    return kExitOk;
  }
  if (report.interrupted) {
    out << "stopped: interrupted runs resume from their checkpoints when you run the same command again\n";
    return kExitInterrupted;
  }
  return std::nullopt;
}

// A sweep with sweep.tune: the tuning phase (every arm x setting x tuning seed, in DIR/tuning),
// each arm's choice, then the confirmation phase (every arm at its choice x sweep.seeds, in DIR),
// which alone is compared. Each phase is an ordinary sweep: rerunning the command continues it.
int tuned_sweep(const po::variables_map& vm, SweepArgs& a, const SpecOptions& spec_opts, const LoadedSpec& base,
                const fs::path& dir, std::ostream& out, std::ostream& err) {
  const spec::TuneSpec& tune = base.spec.sweep.tune;
  const sweep::TuningPlan tuning = sweep::plan_tuning(a.file, spec_opts.overrides, spec_opts.plugin_paths, base, dir);
  for (const std::string& note : tuning.plan.notes) out << "note: " << note << "\n";
  a.compare.tuned_keys = sweep::tuned_keys(tune);
  check_baseline(tuning.plan, a.compare);
  const std::string confirmation = std::to_string(tuning.arms.size()) + " arms x " +
                                   std::to_string(base.spec.sweep.seeds.size()) + " seeds at each arm's chosen setting";
  out << "tuning phase: " << tuning.plan.runs.size() << " runs (" << tuning.arms.size() << " arms x " << tuning.settings.size()
      << " settings x " << tuning.seeds.size() << " seeds) in " << tuning.plan.dir.string() << "\n";
  if (vm.count("dry-run")) {
    print_dry_run(tuning.plan, *base.registry, out);
    out << "confirmation phase: " << confirmation << ", in " << dir.string() << " (planned once tuning is done)\n";
    return kExitOk;
  }
  // The tuning phase (rung by rung with sweep.tune.eta); --status only reads where it stands.
  std::optional<int> stopped;
  sweep::ExecutionOptions tuning_run = execution_options(vm, a, base, dir);
  tuning_run.baseline = "";  // the tuning runs are not compared as arms
  const auto execute_rung = [&](const sweep::SweepPlan& rung) {
    if (vm.count("status")) return true;
    sweep::ExecutionReport report;
    stopped = execute(rung, base, tuning_run, report, out);
    return !stopped;
  };
  const sweep::TuningProgress progress = sweep::advance_tuning(tuning, tune, execute_rung, out);
  if (stopped) return *stopped;
  if (!progress.done) {
    if (vm.count("status")) {
      print_status(tuning.plan, *base.registry, out);
      out << "confirmation phase: waits for tuning (" << progress.finished << " of " << progress.needed
          << " runs of its current rung finished)\n";
      return kExitOk;
    }
    out << "tuning: " << progress.finished << " of " << progress.needed
        << " runs finished; each arm's setting is chosen once all have (fix the failed ones, then --rerun-failed)\n";
    return kExitRunFailed;
  }
  if (vm.count("status")) print_status(tuning.plan, *base.registry, out);
  const sweep::TuningValues values = sweep::read_tuning_values(tuning, tune);
  std::vector<std::string> arm_names;
  for (const spec::SweepPoint& arm : tuning.arms) arm_names.push_back(arm.name);
  const std::vector<sweep::ArmChoice> choices =
      sweep::choose_settings(values.values, values.higher_is_better, tune, tuning.settings, arm_names);
  sweep::print_choices(tuning, values, choices, progress, out);
  const sweep::SweepPlan plan =
      sweep::plan_confirmation(a.file, spec_opts.overrides, spec_opts.plugin_paths, base, dir, tuning, choices);
  for (const std::string& note : plan.notes) out << "note: " << note << "\n";
  out << "confirmation phase: " << confirmation << "\n";
  if (vm.count("status")) {
    print_status(plan, *base.registry, out);
    return kExitOk;
  }
  sweep::write_choices(tuning, values, choices, progress);
  try {
    const fs::path figure = dir / "figures" / "tuning_sensitivity.png";
    sweep::draw_sensitivity(tuning, values, figure);
    out << "wrote " << figure.string() << "\n";
  } catch (const Error& e) {  // no finite value to draw: the table above says as much
    err << "ablate sweep: no sensitivity figure: " << e.what() << "\n";
  }
  sweep::ExecutionOptions run = execution_options(vm, a, base, dir);
  run.tuned_keys = sweep::tuned_keys(tune);
  sweep::ExecutionReport report;
  if (const auto stop = execute(plan, base, run, report, out)) return *stop;
  return finish(report, vm, a.compare, run.baseline, dir, out, err);
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const po::options_description options = sweep_options();
  po::variables_map vm;
  if (!parse_command("sweep", options, args, {"spec", 1}, vm, out)) return kExitOk;  // --help
  SweepArgs a = read_args(vm);

  const SpecOptions spec_opts = spec_options(vm);
  const LoadedSpec base = validation::load_validated_spec(a.file, spec_opts, err);
  const fs::path dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path("results") / base.spec.name;
  if (!base.spec.sweep.tune.empty()) return tuned_sweep(vm, a, spec_opts, base, dir, out, err);
  const sweep::SweepPlan plan = sweep::plan_sweep(a.file, spec_opts.overrides, spec_opts.plugin_paths, base, dir);
  for (const std::string& note : plan.notes) out << "note: " << note << "\n";
  check_baseline(plan, a.compare);
  if (vm.count("dry-run")) {
    print_dry_run(plan, *base.registry, out);
    return kExitOk;
  }
  if (vm.count("status")) {
    print_status(plan, *base.registry, out);
    return kExitOk;
  }

  const sweep::ExecutionOptions run = execution_options(vm, a, base, dir);
  sweep::ExecutionReport report;
  if (const auto stop = execute(plan, base, run, report, out)) return *stop;
  return finish(report, vm, a.compare, run.baseline, dir, out, err);
}

}  // namespace ablate::cli
