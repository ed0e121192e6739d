// The plugin host: finds plugin shared libraries, checks them before any of their code runs
// (ELF structure, exported symbols, API version, ABI tag, info record), keeps them loaded, and
// creates components by (kind, name). Every object a plugin creates holds a reference to its
// library, so it can never outlive the code of its own destructor and vtable.
#pragma once

#include <filesystem>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/plugin.hpp"
#include "plugin_host/plugin_descriptor.hpp"

namespace boost::dll {
class shared_library;
}

namespace ablate {

// A file in the search path that could not be used, and why.
struct PluginProblem {
  std::filesystem::path path;
  std::string message;
  std::string hint;
  std::string kind, name;  // the plugin it defines, where its record could be read (an ABI mismatch); else empty
};

// Keeps `library` mapped until the process ends (used while an exception is in flight).
void pin_library(std::shared_ptr<boost::dll::shared_library> library);

// The directories (or single files) searched for plugins, in order: the built-in directory
// (builtin_plugin_dir()), then ABLATE_PLUGIN_PATH (colon-
// separated), then `extra` (paths named by a spec or --plugin-path).
std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::filesystem::path>& extra = {});

// The built-in plugin directory: next to the libablate this process runs (<prefix>/lib/ablate/plugins
// beside <prefix>/lib/libablate.so; the same for `ablate` in <prefix>/bin and for a test program
// anywhere that links the library). Empty if the library's location cannot be read.
std::filesystem::path builtin_plugin_dir();

class PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Loads every plugin found in `search_path` (directories: their *.so files in name order).
  // A file that cannot be used becomes a PluginProblem; scanning never throws for one file. A
  // plain shared library in a directory (it exports neither plugin symbol: a plugin's helper) is
  // skipped (skipped()); named as a file of its own it is a problem.
  void scan(const std::vector<std::filesystem::path>& search_path);

  // Loads one plugin file. Throws PluginError naming the file (and both files for a duplicate).
  const PluginDescriptor& load(const std::filesystem::path& file);

  // Registers a plugin linked into this binary (tests link plugins as static libraries).
  const PluginDescriptor& add_linked(const PluginInfo& info, PluginFactory factory);

  // Plugins in discovery order, optionally only those of `kind`.
  std::vector<const PluginDescriptor*> list(std::string_view kind = {}) const;
  const std::vector<PluginProblem>& problems() const { return problems_; }
  // The plain shared libraries scan() passed over in the directories it searched.
  const std::vector<std::filesystem::path>& skipped() const { return skipped_; }
  // The problem of a file that defines (kind, name) but was refused (built for another ABI), or null.
  const PluginProblem* refused(std::string_view kind, std::string_view name) const;

  // The plugin (kind, name). Throws PluginError for an unknown one (listing the available names
  // of that kind and the closest match) or one defined by two files (naming both).
  const PluginDescriptor& find(std::string_view kind, std::string_view name) const;

  // Creates a component with options resolved against the plugin's declarations
  // (UsageError for bad options, PluginFault if the factory throws or returns nothing).
  std::shared_ptr<Component> create(std::string_view kind, std::string_view name,
                                    const std::map<std::string, std::string>& options = {}) const;

  // Creates a component of the kind interface T (T::kKind), checking the object implements T.
  template <class T>
  std::shared_ptr<T> create(std::string_view name, const std::map<std::string, std::string>& options = {}) const {
    std::shared_ptr<Component> c = create(T::kKind, name, options);
    if (auto typed = std::dynamic_pointer_cast<T>(c)) return typed;
    throw PluginError("plugin " + std::string(T::kKind) + "/" + std::string(name) + " (" + find(T::kKind, name).path.string() +
                          ") created an object that does not implement the '" + T::kKind + "' interface",
                      "the plugin was probably built against a different interface header");
  }

 private:
  struct Entry {
    PluginDescriptor descriptor;
    std::shared_ptr<boost::dll::shared_library> library;  // null for linked plugins
    PluginFactory factory = nullptr;
  };

  const PluginDescriptor& add(Entry entry);

  std::deque<Entry> entries_;  // a deque: descriptors handed out stay valid as plugins load
  std::vector<PluginProblem> problems_;
  std::vector<std::filesystem::path> skipped_;
  std::pair<std::string, std::string> refusing_;  // kind/name of the plugin load() is refusing, if known
  // (kind, name) defined by more than one file: every file that claimed it.
  std::map<std::pair<std::string, std::string>, std::vector<std::filesystem::path>> duplicates_;
};

}  // namespace ablate
