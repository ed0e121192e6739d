// Turns the option text a user gave (spec keys, --set k=v) into typed Options, checked against
// a plugin's declared OptionDescriptors: unknown names, missing required options, ill-typed
// values and values outside `choices` are UsageErrors that name the plugin and the option.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "ablate/options.hpp"
#include "plugin_host/plugin_descriptor.hpp"

namespace ablate {

// Parses `text` as a value of `option`'s type (and choices). Throws UsageError naming `context`.
Options::Value parse_option_value(const OptionDescriptor& option, std::string_view text, std::string_view context);

// Declared defaults overlaid with `given`; every declared option is present in the result.
Options resolve_options(const PluginDescriptor& plugin, const std::map<std::string, std::string>& given);

}  // namespace ablate
