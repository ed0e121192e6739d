// plan_sweep and run_arguments (sweep_plan.hpp).
#include "sweep/sweep_plan.hpp"

#include <map>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "train/runner.hpp"

namespace ablate::sweep {

SweepPlan plan_sweep(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                     const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& loaded,
                     const std::filesystem::path& dir) {
  return plan_points(spec_file, overrides, plugin_paths, loaded, dir, spec::expand_sweep(loaded.spec.sweep), "sweep");
}

SweepPlan plan_points(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                      const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& loaded,
                      const std::filesystem::path& dir, std::vector<spec::SweepPoint> points, const std::string& section) {
  const spec::ExperimentSpec& base = loaded.spec;
  SweepPlan plan;
  plan.spec_file = std::filesystem::absolute(spec_file);
  plan.overrides = overrides;
  plan.plugin_paths = plugin_paths;
  plan.experiment = base.name;
  plan.dir = dir;

  const spec::SourceMark where = base.marks.of(section);
  const std::string sweep_at =
      (section == "sweep" ? std::string("the sweep") : section) + (where.line > 0 ? " at " + where.str() : std::string());
  std::vector<std::string> problems;
  std::map<std::string, std::size_t> run_of_id;
  for (spec::SweepPoint& point : points) {
    // A point is loaded without the spec's sweep section (load_sweep_point), so without the
    // --set of sweep keys too: read against a sweep they belong to no longer, they would be checked
    // alone (sweep.tune.grid without its seeds). The run's own `ablate run` reads them whole.
    std::vector<std::string> all;
    for (const std::string& o : overrides)
      if (!o.starts_with("sweep.") && !o.starts_with("sweep=")) all.push_back(o);
    for (const std::string& o : point.overrides()) all.push_back(o);
    SweepRun run;
    try {
      run.spec = validation::load_spec_against(spec_file.string(), all, *loaded.registry);
    } catch (const UsageError& e) {
      problems.push_back("run " + point.name + " (from " + sweep_at + "):\n" + e.what());
      continue;
    }
    run.id = train::run_id(run.spec);
    if (const auto it = run_of_id.find(run.id); it != run_of_id.end()) {
      plan.notes.push_back(point.name + " resolves to the same spec as " + plan.runs[it->second].point.name + " (run " + run.id +
                           "): it runs once");
      plan.point_run.push_back(it->second);
      continue;
    }
    run_of_id[run.id] = plan.runs.size();
    plan.point_run.push_back(plan.runs.size());
    run.folder = point.name + "-" + run.id;
    run.point = std::move(point);
    plan.runs.push_back(std::move(run));
  }
  if (!problems.empty())
    throw UsageError(std::to_string(problems.size()) + " run" + (problems.size() == 1 ? "" : "s") + " of the sweep in " +
                         spec_file.string() + " cannot be loaded; nothing was run:\n" + join(problems, "\n"),
                     "fix the sweep values (or the spec) and run again; `ablate sweep SPEC --dry-run` checks without running");
  return plan;
}

bool backend_has_threads(const spec::ExperimentSpec& spec) { return spec.backend.options.count("threads") > 0; }

std::vector<std::string> run_arguments(const SweepPlan& plan, const SweepRun& run, bool resume, int threads) {
  std::vector<std::string> args = {"run", plan.spec_file.string()};
  auto set = [&](const std::string& assignment) {
    args.push_back("--set");
    args.push_back(assignment);
  };
  for (const std::string& o : plan.overrides) set(o);
  for (const std::string& o : run.point.overrides()) set(o);
  if (threads > 0 && backend_has_threads(run.spec)) set("backend.threads=" + std::to_string(threads));
  for (const std::string& p : plan.plugin_paths) {
    args.push_back("--plugin-path");
    args.push_back(p);
  }
  args.push_back("--out");
  args.push_back(plan.run_dir(run).string());
  if (resume) args.push_back("--resume");
  if (plan.stop_at > 0) {
    args.push_back("--stop-at");
    args.push_back(std::to_string(plan.stop_at));
  }
  args.push_back("--progress");
  args.push_back("lines");
  return args;
}

}  // namespace ablate::sweep
