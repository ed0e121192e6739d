// Checking a spec's plugin references against the plugins that exist, without the spec layer
// knowing how plugins are found or loaded: the CLI injects a PluginCatalog (an adapter over the
// plugin registry); tests inject a fake one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plugin_host/plugin_descriptor.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::spec {

struct PluginCatalog {
  virtual ~PluginCatalog() = default;
  // The declared options of plugin (kind, name), or nullopt if there is no such plugin.
  virtual std::optional<std::vector<OptionDescriptor>> options(const std::string& kind, const std::string& name) const = 0;
  // The names of every plugin of `kind` (for "expected one of ...").
  virtual std::vector<std::string> names(const std::string& kind) const = 0;
  // Throws PluginError when (kind, name) is defined by a file that was refused (another ABI): the
  // user must see that refusal, not "unknown plugin".
  virtual void check_not_refused(const std::string& kind, const std::string& name) const { (void)kind, (void)name; }
};

// Checks every plugin reference of `spec` (task, model.block, model.positional_encoding,
// model.ffn, backend, train.schedule): the plugin exists, each option is declared and well
// typed, required options are set. Fills in options not given, so the resolved spec names every
// value: a train.schedule option named lr, d_model or total_steps takes train.optimizer.lr,
// model.d_model or train.steps; any other option its declared default. All problems are
// reported in one UsageError, one line each ("FILE:LINE:COLUMN: KEY.PATH: ...").
void validate_plugins(ExperimentSpec& spec, const PluginCatalog& catalog);

// The spec key a plugin option takes its value from when the spec does not set it (slot
// "train.schedule", option "total_steps" -> "train.steps"), or nullopt.
std::optional<std::string> inherited_from(const std::string& slot, const std::string& option);
// The plugin options that take `key`'s value unless set (inherited_from's inverse): for
// train.optimizer.lr, {"train.schedule.lr"}.
std::vector<std::string> inheriting_options(const std::string& key);

}  // namespace ablate::spec
