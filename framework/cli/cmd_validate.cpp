// `ablate validate SPEC.yaml`: loads a spec (extends, --set overrides), checks every key and every
// plugin reference against the plugins found on the search path, and prints "SPEC: valid" (and
// with --print the resolved spec, every default written out) or one line per problem (exit 2).
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "sweep/sweep_plan.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate validate SPEC.yaml [options]\n\n"
      "Checks an experiment spec: every key, type and range, the `extends:` chain, the\n"
      "--set overrides, and each plugin reference and its options against the plugins on\n"
      "the search path (built-in directory, ABLATE_PLUGIN_PATH, the spec's plugin_paths,\n"
      "--plugin-path). Prints 'SPEC: valid', or one line per problem on stderr\n"
      "(FILE:LINE:COLUMN: KEY.PATH: ...) and exits 2.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("spec", po::value<std::string>(), "the spec file (positional)")
      ("print", "print the resolved spec (every value, defaults included) on stdout");
  // clang-format on
  add_spec_options(options, kOverridesHelp);
  po::variables_map vm;
  if (!parse_command("validate", options, args, {"spec", 1}, vm, out)) return kExitOk;  // --help
  if (!vm.count("spec"))
    throw UsageError("ablate validate: no spec file given", "usage: ablate validate SPEC.yaml [--set k=v ...]");
  const std::string file = vm["spec"].as<std::string>();

  try {
    const SpecOptions options = spec_options(vm);
    const LoadedSpec loaded = validation::load_validated_spec(file, options, err);
    std::string runs;
    if (!loaded.spec.sweep.empty()) {  // every point, exactly as `ablate sweep --dry-run` checks them
      const sweep::SweepPlan plan = sweep::plan_sweep(file, options.overrides, options.plugin_paths, loaded,
                                                      std::filesystem::path("results") / loaded.spec.name);
      runs = " (and the " + std::to_string(plan.runs.size()) + " runs of its sweep)";
    }
    out << file << ": valid" << runs << "\n";
    if (vm.count("print")) out << spec::resolved_yaml(loaded.spec);
    return kExitOk;
  } catch (const UsageError& e) {
    // Compiler-style: one FILE:LINE:COLUMN line per problem, then the hint.
    err << e.what() << "\n";
    if (!e.hint().empty()) err << "  hint: " << e.hint() << "\n";
    err << file << ": invalid\n";
    return kExitUsage;
  }
}

}  // namespace ablate::cli
