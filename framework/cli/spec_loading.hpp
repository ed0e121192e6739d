// The front half of `ablate validate` and `ablate run`: read a spec (extends, --set), find the
// plugins on the search path, and check every plugin reference and option against them.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "plugins/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"
#include "sweep/sweep_plan.hpp"

namespace ablate::cli {

struct LoadedSpec {
  spec::ExperimentSpec spec;                  // validated, plugin options resolved
  std::unique_ptr<PluginRegistry> registry;  // the plugins it was checked against
};

// Throws UsageError with one "FILE:LINE:COLUMN: KEY.PATH: ..." line per problem. Plugin files
// that could not be loaded are warnings on `err` (they matter only if the spec names them).
LoadedSpec load_validated_spec(const std::string& file, const std::vector<std::string>& overrides,
                               const std::vector<std::string>& plugin_paths, std::ostream& err);

// The spec of the trained run in `run_dir`, as its checkpoint holds it (the spec its weights
// belong to), checked like load_validated_spec. `overrides` may set execution keys only
// (backend.threads): anything else is a UsageError. Throws UsageError when there is no checkpoint.
LoadedSpec load_run_spec(const std::filesystem::path& run_dir, const std::vector<std::string>& overrides,
                         const std::vector<std::string>& plugin_paths, std::ostream& err);

// One point of the spec file's sweep (the file with other overrides, its sweep not read),
// checked against an already scanned registry. Throws UsageError like load_validated_spec.
spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry);

// Every point of `base`'s sweep, loaded and checked as above, in directory `dir`: what `ablate
// sweep` (also with --dry-run) and `ablate validate` check. Throws one UsageError for them all.
sweep::SweepPlan plan_validated_sweep(const std::string& file, const std::vector<std::string>& overrides,
                                      const std::vector<std::string>& plugin_paths, const LoadedSpec& base,
                                      const std::filesystem::path& dir);

}  // namespace ablate::cli
