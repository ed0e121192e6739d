// The command-line side of loading a spec: the --set and --plugin-path options every command on a
// spec takes, and the RUN_DIR argument of the commands on trained runs. Validation itself is below
// the CLI, in framework/validation.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cli/cli.hpp"
#include "validation/validation.hpp"

namespace ablate::cli {

// What a command's --set and --plugin-path said (add_spec_options), and what validation makes of a
// spec with them: the commands call validation:: (framework/validation) directly.
using validation::LoadedSpec;
using validation::SpecOptions;
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
void add_run_argument(boost::program_options::options_description& options);
inline constexpr Positional kRunArgument{"run", 1};
std::filesystem::path run_argument(const boost::program_options::variables_map& vm, const char* command, const char* usage);

}  // namespace ablate::cli
