// A sweep as a plan of runs: the spec's `sweep:` expanded (spec/sweep_expansion.hpp), each point
// loaded and validated as a spec of its own before anything runs, given its stable id and its
// folder in the sweep directory; and the `ablate run` command line that trains one of its runs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec/experiment_spec.hpp"
#include "spec/sweep_expansion.hpp"
#include "validation/validation.hpp"

namespace ablate::sweep {

// One run of a sweep.
struct SweepRun {
  spec::SweepPoint point;
  spec::ExperimentSpec spec;  // validated, plugin options resolved
  std::string id;             // train::run_id(spec): a hash of the identity_yaml
  std::string folder;         // "<point name>-<id>", the run's directory under the sweep directory
};

struct SweepPlan {
  std::filesystem::path spec_file;        // absolute
  std::vector<std::string> overrides;     // the user's --set, applied before each point's settings
  std::vector<std::string> plugin_paths;  // --plugin-path, passed on to each run
  std::string experiment;                 // the spec's name
  std::filesystem::path dir;              // the sweep directory (default results/<experiment>)
  std::vector<SweepRun> runs;             // one per distinct id, in expansion order
  std::vector<std::size_t> point_run;     // [points]: the run of each expanded point (merged points share one)
  std::vector<std::string> notes;         // points merged because they resolve to one spec, ...
  std::int64_t stop_at = 0;               // > 0: each run trains to this step only (`ablate run --stop-at`, a tuning rung)

  std::filesystem::path run_dir(const SweepRun& run) const { return dir / run.folder; }
};

// Expands `base.spec.sweep` (base: the spec file loaded and validated with `overrides` and
// `plugin_paths`) and loads every point (overrides + the point's settings) with
// validation::load_spec_against, against base's plugins. Every point's problems are reported
// together in one UsageError, naming the point and the sweep section, before any run starts.
SweepPlan plan_sweep(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                     const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base,
                     const std::filesystem::path& dir);
// The same for given `points` (a tuned sweep's phases, sweep/tuning.hpp); `section` names the spec
// section they come from in errors ("sweep", "sweep.tune").
SweepPlan plan_points(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                      const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base,
                      const std::filesystem::path& dir, std::vector<spec::SweepPoint> points, const std::string& section);

// The arguments after the executable that train `run` in its directory: `run SPEC --set ...
// --out DIR [--resume] [--stop-at plan.stop_at] --progress lines`, plus `--set backend.threads=T` when threads > 0 and the
// run's backend has that option (threads are an execution key: the run id stays the same).
std::vector<std::string> run_arguments(const SweepPlan& plan, const SweepRun& run, bool resume, int threads);

// True if the backend of `spec` takes a `threads` option.
bool backend_has_threads(const spec::ExperimentSpec& spec);

}  // namespace ablate::sweep
