// Validation below the CLI: a spec is read, its plugins found, every plugin reference and option
// checked, and its task, model and schedule plugins created once, so that what they refuse (and
// what the machine cannot hold) is a spec error naming its keys before anything runs. `ablate
// validate`, `run`, `sweep`, the commands on trained runs and the sweep planner all call these.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::validation {

// Where a spec's overrides and extra plugins come from (a command's --set and --plugin-path).
struct SpecOptions {
  std::vector<std::string> overrides;     // --set KEY.PATH=VALUE, in order
  std::vector<std::string> plugin_paths;  // --plugin-path: extra plugin directories or files, searched last
};

struct LoadedSpec {
  spec::ExperimentSpec spec;                 // validated, plugin options resolved
  std::unique_ptr<PluginRegistry> registry;  // the plugins it was checked against
};

// Throws UsageError with one "FILE:LINE:COLUMN: KEY.PATH: ..." line per problem. Plugin files
// that could not be loaded are warnings on `err` (they matter only if the spec names them).
LoadedSpec load_validated_spec(const std::string& file, const SpecOptions& options, std::ostream& err);

// The spec of the trained run in `run_dir`, as its checkpoint holds it (the spec its weights
// belong to), checked like load_validated_spec. The overrides may set execution keys only
// (backend.threads): anything else is a UsageError. Throws UsageError when there is no checkpoint.
LoadedSpec load_run_spec(const std::filesystem::path& run_dir, const SpecOptions& options, std::ostream& err);

// One point of the spec file's sweep (the file with other overrides, its sweep not read),
// checked against an already scanned registry. Throws UsageError like load_validated_spec.
spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry);

// The spec's task, model and schedule plugins created once (cheap for the built-in ones: the
// task reads its data, nothing touches a backend), so that what their constructors refuse is a
// spec error naming the keys; then what needs the task's sizes: positions beyond what a
// positional encoding holds, attention sizes, eval lengths, the early-stopping metric, and a
// model too large for this machine's memory. Throws one UsageError for every problem.
// `run_dir` (may be empty): a trained run's folder, whose stored tokenizers the task reads text with.
void check_components(spec::ExperimentSpec& spec, const PluginRegistry& registry, const std::filesystem::path& run_dir = {});

}  // namespace ablate::validation
