// The spec options and run argument every command shares (spec_loading.hpp).
#include "cli/spec_loading.hpp"

#include "cli/cli.hpp"

namespace ablate::cli {

void add_spec_options(boost::program_options::options_description& options, const char* set_help) {
  namespace po = boost::program_options;
  if (set_help) options.add_options()("set,s", po::value<std::vector<std::string>>()->composing(), set_help);
  options.add_options()("plugin-path,p", po::value<std::vector<std::string>>()->composing(),
                        "extra plugin directory or file, searched last (repeatable)");
}

SpecOptions spec_options(const boost::program_options::variables_map& vm) {
  return {repeated(vm, "set"), repeated(vm, "plugin-path")};
}

void add_run_argument(boost::program_options::options_description& options) {
  options.add_options()("run", boost::program_options::value<std::string>(), "the run directory (positional)");
}

std::filesystem::path run_argument(const boost::program_options::variables_map& vm, const char* command, const char* usage) {
  if (!vm.count("run")) throw UsageError(std::string("ablate ") + command + ": no run directory given", usage);
  return vm["run"].as<std::string>();
}

}  // namespace ablate::cli
