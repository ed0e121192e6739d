// Plugin options: how a plugin declares the settings it accepts (OptionInfo, a POD table the
// host reads without running plugin code) and the typed values it receives (Options).
// The host resolves user text against the declarations (framework/plugin_host/option_resolver.hpp),
// so a plugin never parses strings and never sees an unknown or ill-typed option.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "ablate/error.hpp"

namespace ablate {

enum class OptionType : std::uint32_t { Bool = 0, Int = 1, Float = 2, String = 3 };

// One declared option. POD: lives in the plugin's read-only data.
struct OptionInfo {
  const char* name;  // identifier, e.g. "warmup"
  OptionType type;
  const char* default_value;  // text parsed like user input; nullptr = the option is required
  const char* choices;        // "a|b|c" to restrict a String option; nullptr = any value
  const char* doc;            // one line: what it means, with its unit
};

struct OptionList {
  const OptionInfo* data;
  std::uint32_t size;
};

template <std::uint32_t N>
constexpr OptionList options_of(const OptionInfo (&table)[N]) {
  return OptionList{table, N};
}
inline constexpr OptionList kNoOptions{nullptr, 0};

inline const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::Bool: return "bool";
    case OptionType::Int: return "int";
    case OptionType::Float: return "float";
    case OptionType::String: return "string";
  }
  return "invalid";
}

// Resolved, typed option values: every declared option is present (default or user value).
// Getters throw ablate::Error when asked for an undeclared name or the wrong type: that is a
// bug in the plugin, reported with the option's name.
class Options {
 public:
  using Value = std::variant<bool, std::int64_t, double, std::string>;

  void set(const std::string& name, Value value) { values_[name] = std::move(value); }
  bool contains(std::string_view name) const { return values_.find(name) != values_.end(); }
  const std::map<std::string, Value, std::less<>>& values() const { return values_; }

  bool get_bool(std::string_view name) const { return get<bool>(name, "bool"); }
  std::int64_t get_int(std::string_view name) const { return get<std::int64_t>(name, "int"); }
  double get_float(std::string_view name) const { return get<double>(name, "float"); }
  const std::string& get_string(std::string_view name) const { return get<std::string>(name, "string"); }

 private:
  template <class T>
  const T& get(std::string_view name, const char* type) const {
    auto it = values_.find(name);
    // A defect of the plugin, not of the spec: PluginError, so the host reports it as one (exit 3).
    if (it == values_.end())
      throw PluginError("the plugin reads option '" + std::string(name) + "', which it never declared",
                        "declare every option the plugin reads in its OptionInfo table (ABLATE_PLUGIN)");
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    throw PluginError("the plugin reads option '" + std::string(name) + "' as " + type + ", but declares another type",
                      "read each option with the getter of its declared type");
  }

  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace ablate
