// The plugin registry seen through the spec layer's PluginCatalog interface: what
// spec::validate_plugins checks a spec's plugin references and options against (validation, and
// the reference model of model.match_parameters).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "spec/plugin_validation.hpp"

namespace ablate::train {

class RegistryCatalog final : public spec::PluginCatalog {
 public:
  explicit RegistryCatalog(const PluginRegistry& registry) : registry_(registry) {}

  std::optional<std::vector<OptionDescriptor>> options(const std::string& kind, const std::string& name) const override {
    for (const PluginDescriptor* d : registry_.list(kind))
      if (d->name == name) return d->options;
    return std::nullopt;
  }

  void check_not_refused(const std::string& kind, const std::string& name) const override {
    if (const PluginProblem* p = registry_.refused(kind, name)) throw PluginError(p->message, p->hint);
  }

  std::vector<std::string> names(const std::string& kind) const override {
    std::vector<std::string> out;
    for (const PluginDescriptor* d : registry_.list(kind)) out.push_back(d->name);
    return out;
  }

 private:
  const PluginRegistry& registry_;
};

}  // namespace ablate::train
