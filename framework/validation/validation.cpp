// The checks of validation.hpp that read a spec: the spec file (or a trained run's checkpoint)
// read, its plugins found, every plugin reference and option checked against them (through the
// spec layer's PluginCatalog interface), then check_components.
#include "validation/validation.hpp"

#include <algorithm>

#include "core/text.hpp"
#include "spec/plugin_validation.hpp"
#include "spec/spec_tree.hpp"
#include "train/checkpoint.hpp"
#include "train/registry_catalog.hpp"
#include "train/run_eval.hpp"

namespace ablate::validation {
namespace {

using train::RegistryCatalog;

// `run_dir`: a trained run's folder, whose stored tokenizers the task is checked with.
LoadedSpec validated(spec::ExperimentSpec spec, const std::vector<std::string>& plugin_paths, std::ostream& err,
                     const std::filesystem::path& run_dir = {}) {
  LoadedSpec loaded{std::move(spec), std::make_unique<PluginRegistry>()};
  std::vector<std::filesystem::path> extra(loaded.spec.plugin_paths.begin(), loaded.spec.plugin_paths.end());
  extra.insert(extra.end(), plugin_paths.begin(), plugin_paths.end());
  loaded.registry->scan(plugin_search_path(extra));
  for (const PluginProblem& p : loaded.registry->problems()) {
    err << "ablate: plugin warning: " << p.message << "\n";
    if (!p.hint.empty()) err << "  hint: " << p.hint << "\n";
  }
  spec::validate_plugins(loaded.spec, RegistryCatalog(*loaded.registry));
  check_components(loaded.spec, *loaded.registry, run_dir);
  return loaded;
}

}  // namespace

LoadedSpec load_validated_spec(const std::string& file, const SpecOptions& options, std::ostream& err) {
  return validated(spec::load_spec(file, options.overrides), options.plugin_paths, err);
}

LoadedSpec load_run_spec(const std::filesystem::path& run_dir, const SpecOptions& options, std::ostream& err) {
  const std::vector<std::string>& allowed = spec::execution_keys();
  for (const std::string& o : options.overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      throw UsageError("--set " + o + ": only execution keys (" + join(allowed, ", ") +
                           ") may change: the weights belong to the run's own spec",
                       "to use another configuration, train it");
  }
  const std::filesystem::path checkpoint = train::run_checkpoint(run_dir);
  return validated(spec::parse_spec(spec::upgraded_run_yaml(train::read_checkpoint(checkpoint).spec_yaml), checkpoint.string(),
                                    options.overrides),
                   options.plugin_paths, err, run_dir);
}

spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry) {
  spec::ExperimentSpec s = spec::load_sweep_point(file, overrides);
  spec::validate_plugins(s, RegistryCatalog(registry));
  check_components(s, registry);
  return s;
}

}  // namespace ablate::validation
