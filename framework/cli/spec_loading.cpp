// load_validated_spec (spec_loading.hpp), with the plugin registry seen through the spec
// layer's narrow PluginCatalog interface, and the checks that need plugins created.
#include "cli/spec_loading.hpp"

#include <algorithm>

#include "ablate/components.hpp"
#include "ablate/task.hpp"
#include "core/text.hpp"
#include "plugins/plugin_call.hpp"
#include "spec/plugin_validation.hpp"
#include "spec/spec_tree.hpp"

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

// The spec's model and schedule plugins created once (cheap: no data, no backend), so that what
// their constructors refuse is a spec error naming the keys before any run starts; and, for a
// positional encoding with a limit, the task's longest sequence checked against it.
void check_components(spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  spec::SpecErrors errors;
  std::shared_ptr<PositionalEncoding> positions;
  for (const char* path : {"model.block", "model.positional_encoding", "model.ffn", "train.schedule"}) {
    const spec::PluginSlot& slot = *std::find_if(spec::plugin_slots().begin(), spec::plugin_slots().end(),
                                                 [&](const spec::PluginSlot& s) { return s.path == path; });
    const spec::PluginRef& ref = spec::plugin_at(spec, slot.path);
    try {
      std::shared_ptr<Component> c = registry.create(slot.kind, ref.name, ref.options);
      if (slot.kind == PositionalEncoding::kKind) positions = std::dynamic_pointer_cast<PositionalEncoding>(c);
    } catch (const PluginFault& f) {
      std::vector<std::string> inherited;  // options the message names that the spec took from other keys
      for (const auto& [option, value] : ref.options)
        if (auto key = spec::inherited_from(slot.path, option);
            key && !spec.marks.keys.count(slot.path + "." + option) && f.detail().find(option) != std::string::npos)
          inherited.push_back(option + " " + value + " is " + *key);
      errors.add(spec.marks.of(slot.path), slot.path,
                 slot.kind + " plugin '" + ref.name + "' refuses its options: " + f.detail() +
                     (inherited.empty() ? "" : " (" + join(inherited, ", ") + ")") + (f.hint().empty() ? "" : "; " + f.hint()));
    }
  }
  const std::int64_t limit = positions ? plugin_call(*positions, "max_positions", [&] { return positions->max_positions(); }) : 0;
  if (limit > 0) {
    const std::shared_ptr<Task> task = registry.create<Task>(spec.task.name, spec.task.options);
    const TaskInfo info = plugin_call(*task, "info", [&] { return task->info(); });
    const bool source = spec.model.arch != spec::Arch::decoder, target = spec.model.arch != spec::Arch::encoder;
    const std::int64_t need = std::max(source ? info.max_src_len : 0, target ? info.max_tgt_len + 1 : 0);
    if (need > limit)
      errors.add(spec.marks.of("model.positional_encoding"), "model.positional_encoding",
                 "positional_encoding plugin '" + spec.model.positional_encoding.name + "' represents " +
                     std::to_string(limit) + " positions, but the task (task: " + spec.task.name + ") has sequences of " +
                     std::to_string(need) + " (" + (source ? std::to_string(info.max_src_len) + " source tokens" : "") +
                     (source && target ? ", " : "") + (target ? std::to_string(info.max_tgt_len) + " target tokens + bos" : "") +
                     "); expected a limit of at least " + std::to_string(need));
  }
  errors.throw_if_any("`ablate plugins` lists every plugin's options and what they mean");
}

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
  check_components(loaded.spec, *loaded.registry);
  return loaded;
}

spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry) {
  spec::ExperimentSpec s = spec::load_spec(file, overrides);
  spec::validate_plugins(s, RegistryCatalog(registry));
  check_components(s, registry);
  return s;
}

}  // namespace ablate::cli
