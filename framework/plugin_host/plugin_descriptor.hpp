// PluginDescriptor: an owned copy of a plugin's info record and option table, safe to keep and
// print after its library is gone. Built once at load time from the POD PluginInfo.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ablate/options.hpp"

namespace ablate {

struct OptionDescriptor {
  std::string name;
  OptionType type = OptionType::String;
  std::optional<std::string> default_value;  // nullopt: required
  std::vector<std::string> choices;          // empty: any value of the type
  std::string doc;
};

struct PluginDescriptor {
  std::string kind;
  std::string name;
  std::string version;
  std::string description;
  std::string abi_tag;
  std::uint32_t api_version = 0;
  std::filesystem::path path;        // the shared library; empty for a plugin linked into the binary
  std::string code_hash = "linked";  // FNV-1a 64 of the library file (16 hex digits): identifies its code
  std::vector<OptionDescriptor> options;

  std::string id() const { return kind + "/" + name; }
  // "kind/name version (file)", or "(linked)" for a plugin linked into the binary: how errors name it.
  std::string text() const { return id() + " " + version + " (" + (path.empty() ? std::string("linked") : path.string()) + ")"; }
};

}  // namespace ablate
