// Implementation of option parsing and resolution (see option_resolver.hpp).
#include "plugin_host/option_resolver.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/text.hpp"

namespace ablate {
namespace {

[[noreturn]] void bad_value(const OptionDescriptor& option, std::string_view text, std::string_view context,
                            const std::string& expected) {
  throw UsageError(
      std::string(context) + ": option '" + option.name + "' has value '" + std::string(text) + "'; expected " + expected,
      option.doc.empty() ? std::string() : option.name + ": " + option.doc);
}

}  // namespace

Options::Value parse_option_value(const OptionDescriptor& option, std::string_view text, std::string_view context) {
  switch (option.type) {
    case OptionType::Bool:
      if (text == "true" || text == "yes" || text == "on" || text == "1") return true;
      if (text == "false" || text == "no" || text == "off" || text == "0") return false;
      bad_value(option, text, context, "a bool (true/false, yes/no, on/off, 1/0)");
    case OptionType::Int: {
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        bad_value(option, text, context, "an integer (int64)");
      return v;
    }
    case OptionType::Float: {
      const std::string s(text);
      char* end = nullptr;
      const double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
        bad_value(option, text, context, "a finite floating-point number");
      return v;
    }
    case OptionType::String:
      if (!option.choices.empty() && std::find(option.choices.begin(), option.choices.end(), text) == option.choices.end()) {
        std::string expected = "one of: " + join(option.choices, ", ");
        if (auto near = closest_match(text, option.choices)) expected += " (did you mean '" + *near + "'?)";
        bad_value(option, text, context, expected);
      }
      return std::string(text);
  }
  throw UsageError(std::string(context) + ": option '" + option.name + "' has an invalid declared type");
}

Options resolve_options(const PluginDescriptor& plugin, const std::map<std::string, std::string>& given) {
  const std::string context = "plugin " + plugin.id();
  std::vector<std::string> declared;
  for (const auto& o : plugin.options) declared.push_back(o.name);

  for (const auto& [key, value] : given) {
    if (std::find(declared.begin(), declared.end(), key) != declared.end()) continue;
    std::string hint = declared.empty() ? "it takes no options" : "its options are: " + join(declared, ", ");
    if (auto near = closest_match(key, declared)) hint = "did you mean '" + *near + "'? " + hint;
    throw UsageError(context + " has no option '" + key + "'", hint);
  }

  Options out;
  for (const auto& o : plugin.options) {
    const auto it = given.find(o.name);
    if (it != given.end()) {
      out.set(o.name, parse_option_value(o, it->second, context));
    } else if (o.default_value) {
      out.set(o.name, parse_option_value(o, *o.default_value, context + " (declared default)"));
    } else {
      throw UsageError(context + ": required option '" + o.name + "' is not set",
                       o.name + " (" + option_type_name(o.type) + "): " + o.doc);
    }
  }
  return out;
}

}  // namespace ablate
