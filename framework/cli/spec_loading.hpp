// The front half of `ablate validate` and `ablate run`: read a spec (extends, --set), find the
// plugins on the search path, and check every plugin reference and option against them.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"
#include "sweep/sweep_plan.hpp"

namespace ablate::cli {

// What a command's --set and --plugin-path said (add_spec_options).
struct SpecOptions {
  std::vector<std::string> overrides;     // --set KEY.PATH=VALUE, in order
  std::vector<std::string> plugin_paths;  // --plugin-path: extra plugin directories or files, searched last
};
// Adds --set (repeatable; `set_help` says what it may change in this command; nullptr: no --set)
// and --plugin-path to a command's options; spec_options() reads them back.
void add_spec_options(boost::program_options::options_description& options, const char* set_help);
SpecOptions spec_options(const boost::program_options::variables_map& vm);
// What --set does in a command on a spec file (run, sweep, validate).
inline constexpr const char* kOverridesHelp =
    "override KEY.PATH=VALUE after extends, VALUE parsed as YAML (repeatable), e.g. --set model.d_model=256";
// What --set may change in a command on a trained run (load_run_spec).
inline constexpr const char* kExecutionKeysHelp = "an execution key of the run's spec (backend.threads=N)";

// A command on a trained run (eval, export, generate, translate) takes RUN_DIR as its positional
// argument: add_run_argument declares it, run_argument reads it (UsageError "ablate COMMAND: no
// run directory given", with `usage` as the hint, without one).
void add_run_argument(boost::program_options::options_description& options,
                      boost::program_options::positional_options_description& positional);
std::filesystem::path run_argument(const boost::program_options::variables_map& vm, const char* command, const char* usage);

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

// Every point of `base`'s sweep, loaded and checked as above, in directory `dir`: what `ablate
// sweep` (also with --dry-run) and `ablate validate` check. Throws one UsageError for them all.
sweep::SweepPlan plan_validated_sweep(const std::string& file, const SpecOptions& options, const LoadedSpec& base,
                                      const std::filesystem::path& dir);

}  // namespace ablate::cli
