// Implementation of validate_plugins (plugin_validation.hpp): option values are parsed with the
// same parse_option_value the plugin host uses, so a spec that validates also creates.
#include "spec/plugin_validation.hpp"

#include <algorithm>
#include <optional>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "plugin_host/option_resolver.hpp"

namespace ablate::spec {

namespace {

// The plugin options that repeat a value the spec states elsewhere: (slot, option, key).
struct Inherited {
  const char *slot, *option, *key;
};
constexpr Inherited kInherited[] = {{"train.schedule", "lr", "train.optimizer.lr"},
                                    {"train.schedule", "d_model", "model.d_model"},
                                    {"train.schedule", "total_steps", "train.steps"}};

}  // namespace

std::optional<std::string> inherited_from(const std::string& slot, const std::string& option) {
  for (const Inherited& i : kInherited)
    if (slot == i.slot && option == i.option) return std::string(i.key);
  return std::nullopt;
}

std::vector<std::string> inheriting_options(const std::string& key) {
  std::vector<std::string> out;
  for (const Inherited& i : kInherited)
    if (key == i.key) out.push_back(std::string(i.slot) + "." + i.option);
  return out;
}

namespace {

// A schedule option that repeats a value the spec already states takes that value unless the
// spec sets the option itself (inherited_from names the key). One value, one place: sweeping
// model.d_model also moves noam's peak.
std::optional<std::string> inherited_option(const ExperimentSpec& spec, const std::string& slot, const std::string& option) {
  const std::optional<std::string> key = inherited_from(slot, option);
  if (!key) return std::nullopt;
  if (*key == "train.optimizer.lr") return number_text(spec.train.optimizer.lr);
  if (*key == "model.d_model") return std::to_string(spec.model.d_model);
  return std::to_string(spec.train.steps);  // train.steps
}

}  // namespace

void validate_plugins(ExperimentSpec& spec, const PluginCatalog& catalog) {
  SpecErrors errors;
  for (const PluginSlot& slot : plugin_slots()) {
    PluginRef& ref = plugin_at(spec, slot.path);
    if (slot.optional && ref.name.empty()) continue;
    const SourceMark at = spec.marks.of(slot.path);
    const auto declared = catalog.options(slot.kind, ref.name);
    if (!declared) {
      catalog.check_not_refused(slot.kind, ref.name);
      const std::vector<std::string> names = catalog.names(slot.kind);
      std::string what = "unknown " + slot.kind + " plugin '" + ref.name + "'; expected ";
      what +=
          names.empty()
              ? "a " + slot.kind +
                    " plugin, but none is installed (see `ablate plugins`; add a directory with --plugin-path or plugin_paths)"
              : "one of " + join(names, ", ");
      if (auto near = closest_match(ref.name, names)) what += " (did you mean '" + *near + "'?)";
      errors.add(at, slot.path, what);
      continue;
    }
    std::vector<std::string> option_names;
    for (const auto& o : *declared) option_names.push_back(o.name);
    for (const auto& [option, text] : ref.options) {
      const std::string path = slot.path + "." + option;
      const auto it =
          std::find_if(declared->begin(), declared->end(), [&](const OptionDescriptor& o) { return o.name == option; });
      if (it == declared->end()) {
        const auto key = spec.marks.keys.find(path);
        std::string what = slot.kind + " plugin '" + ref.name + "' has no option '" + option + "'; expected ";
        what += option_names.empty() ? "no options" : "one of " + join(option_names, ", ");
        if (auto near = closest_match(option, option_names)) what += " (did you mean '" + *near + "'?)";
        errors.add(key != spec.marks.keys.end() ? key->second : spec.marks.of(path), path, what);
        continue;
      }
      try {
        parse_option_value(*it, text, spec.marks.of(path).str() + ": " + path);
      } catch (const UsageError& e) {
        const std::string message = e.what();
        const auto expected = message.find("; expected");
        errors.add(spec.marks.of(path), path,
                   "'" + text + "' is not a valid value of " + slot.kind + " plugin '" + ref.name + "' option '" + option + "'" +
                       (expected == std::string::npos ? "; " + message : message.substr(expected)));
      }
    }
    for (const auto& o : *declared) {
      if (ref.options.count(o.name)) continue;
      if (auto inherited = inherited_option(spec, slot.path, o.name)) {
        ref.options[o.name] = *inherited;
      } else if (o.default_value) {
        ref.options[o.name] = *o.default_value;
      } else {
        errors.add(at, slot.path,
                   slot.kind + " plugin '" + ref.name + "' needs option '" + o.name + "'; expected " + o.name + ": " +
                       option_type_name(o.type) + (o.doc.empty() ? std::string() : " (" + o.doc + ")"));
      }
    }
  }
  errors.throw_if_any(
      "`ablate plugins` lists every plugin with its options; a plugin of your own: add its directory "
      "with -p DIR, ABLATE_PLUGIN_PATH or the spec's plugin_paths");
}

}  // namespace ablate::spec
