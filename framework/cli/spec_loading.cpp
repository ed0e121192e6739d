// load_validated_spec (spec_loading.hpp), with the plugin registry seen through the spec
// layer's narrow PluginCatalog interface.
#include "cli/spec_loading.hpp"

#include "spec/plugin_validation.hpp"

namespace ablate::cli {
namespace {

class RegistryCatalog final : public spec::PluginCatalog {
 public:
  explicit RegistryCatalog(const PluginRegistry& registry) : registry_(registry) {}

  std::optional<std::vector<OptionDescriptor>> options(const std::string& kind, const std::string& name) const override {
    for (const PluginDescriptor* d : registry_.list(kind))
      if (d->name == name) return d->options;
    return std::nullopt;
  }

  std::vector<std::string> names(const std::string& kind) const override {
    std::vector<std::string> out;
    for (const PluginDescriptor* d : registry_.list(kind)) out.push_back(d->name);
    return out;
  }

 private:
  const PluginRegistry& registry_;
};

}  // namespace

LoadedSpec load_validated_spec(const std::string& file, const std::vector<std::string>& overrides,
                               const std::vector<std::string>& plugin_paths, std::ostream& err) {
  LoadedSpec loaded{spec::load_spec(file, overrides), std::make_unique<PluginRegistry>()};
  std::vector<std::filesystem::path> extra(loaded.spec.plugin_paths.begin(), loaded.spec.plugin_paths.end());
  extra.insert(extra.end(), plugin_paths.begin(), plugin_paths.end());
  loaded.registry->scan(plugin_search_path(extra));
  for (const PluginProblem& p : loaded.registry->problems()) {
    err << "ablate: plugin warning: " << p.message << "\n";
    if (!p.hint.empty()) err << "  hint: " << p.hint << "\n";
  }
  spec::validate_plugins(loaded.spec, RegistryCatalog(*loaded.registry));
  return loaded;
}

spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry) {
  spec::ExperimentSpec s = spec::load_spec(file, overrides);
  spec::validate_plugins(s, RegistryCatalog(registry));
  return s;
}

}  // namespace ablate::cli
