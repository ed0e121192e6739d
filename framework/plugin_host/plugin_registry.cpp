// Implementation of the plugin host (see plugin_registry.hpp). The order of checks in load()
// is the safety argument: nothing from a plugin runs before its file is structurally sound and
// exports both aliases, and its factory runs only after api_version and abi_tag match.
#include "plugin_host/plugin_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>

#include <boost/dll/library_info.hpp>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "plugin_host/elf_check.hpp"
#include "plugin_host/option_resolver.hpp"
#include "plugin_host/plugin_call.hpp"

#ifndef ABLATE_PLUGIN_SUBDIR  // the built-in plugin dir, relative to the directory of libablate
#define ABLATE_PLUGIN_SUBDIR "ablate/plugins"
#endif

namespace ablate {
namespace fs = std::filesystem;
namespace {

constexpr const char* kInfoAlias = "ablate_plugin_info";
constexpr const char* kFactoryAlias = "ablate_create";
// Whether `path` is a shared library that exports neither plugin alias: a plain library (a
// plugin's helper) beside the plugins, not a broken plugin. False when its symbols cannot be read
// (load() says why).
bool plain_library(const fs::path& path) {
  if (elf_problem(path)) return false;
  try {
    const std::vector<std::string> symbols = boost::dll::library_info(path).symbols();
    return std::find(symbols.begin(), symbols.end(), kInfoAlias) == symbols.end() &&
           std::find(symbols.begin(), symbols.end(), kFactoryAlias) == symbols.end();
  } catch (const std::exception&) {
    return false;
  }
}

// The hint for a (kind, name) defined by `files`: a built-in one cannot leave the search path (its
// directory is always searched), so a plugin of one's own takes another name.
std::string duplicate_hint(const std::vector<fs::path>& files) {
  std::error_code ec;
  const fs::path builtin = fs::weakly_canonical(builtin_plugin_dir(), ec);
  for (const fs::path& f : files)
    if (!builtin.empty() && f.parent_path() == builtin)
      return "a built-in plugin (" + f.string() +
             ") has this kind and name, and the built-in directory is always searched: give yours another name in its "
             "ABLATE_PLUGIN(kind, name, ...) and the spec";
  return "remove all but one of them from the plugin search path";
}

constexpr const char* kFindHint =
    "a plugin of your own: add its directory with -p DIR, ABLATE_PLUGIN_PATH or the spec's plugin_paths";
constexpr const char* kRebuildHint = "rebuild the plugin against this Ablate (find_package(Ablate) + ablate_add_plugin)";

bool is_identifier(const char* s) {
  if (s == nullptr || *s < 'a' || *s > 'z') return false;
  for (; *s; ++s)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

std::vector<std::string> split_choices(const char* choices) {
  std::vector<std::string> out;
  if (choices == nullptr) return out;
  std::string_view rest(choices);
  while (true) {
    const auto bar = rest.find('|');
    out.emplace_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return out;
}

// An owned, validated copy of a plugin's info record. Throws PluginError for a malformed one.
PluginDescriptor describe(const PluginInfo& info, const fs::path& path) {
  const std::string where = path.empty() ? std::string("linked plugin") : path.string();
  auto malformed = [&](const std::string& what) {
    return PluginError(where + ": malformed plugin info record: " + what, kRebuildHint);
  };
  if (!is_identifier(info.kind)) throw malformed("kind must be a lowercase identifier [a-z][a-z0-9_]*");
  if (!is_identifier(info.name)) throw malformed("name must be a lowercase identifier [a-z][a-z0-9_]*");
  if (info.version == nullptr || *info.version == '\0') throw malformed("version is empty");
  if (info.description == nullptr) throw malformed("description is missing");
  if (info.options.size > 0 && info.options.data == nullptr) throw malformed("option table is missing");

  PluginDescriptor d;
  d.kind = info.kind;
  d.name = info.name;
  d.version = info.version;
  d.description = info.description;
  d.abi_tag = info.abi_tag;
  d.api_version = info.api_version;
  d.path = path;
  std::set<std::string> seen;
  for (std::uint32_t i = 0; i < info.options.size; ++i) {
    const OptionInfo& o = info.options.data[i];
    if (!is_identifier(o.name)) throw malformed("option " + std::to_string(i) + " has no valid name");
    if (!seen.insert(o.name).second) throw malformed("option '" + std::string(o.name) + "' is declared twice");
    if (static_cast<std::uint32_t>(o.type) > static_cast<std::uint32_t>(OptionType::String))
      throw malformed("option '" + std::string(o.name) + "' has an unknown type");
    OptionDescriptor od;
    od.name = o.name;
    od.type = o.type;
    if (o.default_value) od.default_value = o.default_value;
    od.choices = split_choices(o.choices);
    od.doc = o.doc ? o.doc : "";
    if (od.default_value) {
      try {
        parse_option_value(od, *od.default_value, d.id());
      } catch (const UsageError& e) {
        throw PluginError(
            where + ": option '" + od.name + "' declares the default '" + *od.default_value +
                "', which is not a valid value of its own declaration: " + e.what(),
            "fix the default (or the type/choices) of '" + od.name + "' in the plugin's OptionInfo table and rebuild it");
      }
    }
    d.options.push_back(std::move(od));
  }
  return d;
}

// FNV-1a 64 of the file: what identifies a plugin's code in a run's records.
std::string file_hash(const fs::path& path) {
  try {
    return file_fnv1a64(path);
  } catch (const Error& e) {
    throw PluginError(e.what(), e.hint());
  }
}

}  // namespace

fs::path builtin_plugin_dir() {
  // This function's own library, libablate (<prefix>/lib/libablate.so -> <prefix>/lib/ablate/plugins):
  // the plugins built with the core the process runs, whichever program links it.
  std::error_code ec;
  const fs::path core = boost::dll::this_line_location(ec);
  if (ec || core.empty()) return {};
  const fs::path real = fs::weakly_canonical(core, ec);
  return ((ec ? core : real).parent_path() / ABLATE_PLUGIN_SUBDIR).lexically_normal();
}

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& extra) {
  std::vector<fs::path> out;
  if (fs::path builtin = builtin_plugin_dir(); !builtin.empty()) out.push_back(builtin);
  if (const char* env = std::getenv("ABLATE_PLUGIN_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      if (const auto item = rest.substr(0, colon); !item.empty()) out.emplace_back(item);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() {
  // Unwinding: the exception in flight, or the strings it carries, may be a plugin's own code and
  // data; keep every library mapped until the process ends.
  if (std::uncaught_exceptions() > 0)
    for (Entry& e : entries_)
      if (e.library) pin_library(std::move(e.library));
}

void pin_library(std::shared_ptr<boost::dll::shared_library> library) {
  static auto* pinned = new std::vector<std::shared_ptr<boost::dll::shared_library>>();  // never freed, on purpose
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  pinned->push_back(std::move(library));
}

void PluginRegistry::scan(const std::vector<fs::path>& search_path) {
  for (const fs::path& entry : search_path) {
    std::error_code ec;
    std::vector<fs::path> files, plain;
    if (fs::is_directory(entry, ec)) {
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        if (f.path().extension() != ".so") continue;
        std::error_code fe;
        const fs::file_status st = fs::status(f.path(), fe);  // follows links: a loop or a device is a problem, said
        if (fs::is_regular_file(st) && plain_library(f.path())) {
          plain.push_back(f.path());
        } else if (fs::is_regular_file(st)) {
          files.push_back(f.path());
        } else {
          const std::string what = fe                     ? "cannot be followed (" + fe.message() + ")"
                                   : fs::is_directory(st) ? std::string("is a directory")
                                                          : std::string("is not a regular file");
          problems_.push_back({f.path(),
                               f.path().string() + ": " + what + "; expected a plugin shared library",
                               "remove it from the plugin directory, or point it at a plugin file",
                               {},
                               {}});
        }
      }
      std::sort(files.begin(), files.end());
      std::sort(plain.begin(), plain.end());
      skipped_.insert(skipped_.end(), plain.begin(), plain.end());
    } else if (fs::exists(entry, ec)) {
      files.push_back(entry);
    } else {
      problems_.push_back({entry,
                           entry.string() + ": plugin search path entry does not exist",
                           "check ABLATE_PLUGIN_PATH and the spec's plugin_paths",
                           {},
                           {}});
      continue;
    }
    for (const fs::path& f : files) {
      refusing_ = {};
      try {
        load(f);
      } catch (const Error& e) {
        problems_.push_back({f, e.what(), e.hint(), refusing_.first, refusing_.second});
      } catch (const std::exception& e) {
        problems_.push_back({f, e.what(), {}, refusing_.first, refusing_.second});
      }
    }
  }
}

const PluginDescriptor& PluginRegistry::load(const fs::path& file) {
  std::error_code ec;
  const fs::path path = fs::weakly_canonical(file, ec);
  for (const Entry& e : entries_)
    if (e.library && e.descriptor.path == path) return e.descriptor;  // same file reached twice

  if (auto problem = elf_problem(path)) throw PluginError(path.string() + ": " + *problem, "remove it or rebuild it");

  // Check the exported symbols without loading (and so without running) anything.
  try {
    boost::dll::library_info elf(path);
    const std::vector<std::string> symbols = elf.symbols();
    for (const char* alias : {kInfoAlias, kFactoryAlias})
      if (std::find(symbols.begin(), symbols.end(), alias) == symbols.end())
        throw PluginError(path.string() + ": not an Ablate plugin (it does not export '" + alias + "')",
                          "plugins define ABLATE_PLUGIN(...) and are built with ablate_add_plugin()");
  } catch (const PluginError&) {
    throw;
  } catch (const std::exception& e) {
    throw PluginError(path.string() + ": cannot read the library's symbol table: " + e.what(), "remove it or rebuild it");
  }

  Entry entry;
  try {
    entry.library = std::make_shared<boost::dll::shared_library>(path, boost::dll::load_mode::rtld_now);
  } catch (const std::exception& e) {
    throw PluginError(path.string() + ": the dynamic loader refused it: " + e.what(),
                      "a missing dependency or undefined symbol; check with `ldd -r`");
  }

  const PluginInfo& info = entry.library->get_alias<const PluginInfo>(kInfoAlias);
  // kind and name are read from a plugin of any API version (PluginInfo's first four fields never
  // move): a refused plugin is then reported as such when a spec names it, not as unknown.
  if (is_identifier(info.kind) && is_identifier(info.name)) refusing_ = {info.kind, info.name};
  if (info.api_version != kPluginApiVersion)
    throw PluginError(path.string() + ": built for plugin API version " + std::to_string(info.api_version) +
                          ", but this ablate uses plugin API version " + std::to_string(kPluginApiVersion),
                      kRebuildHint);
  const std::string host_tag = ABLATE_ABI_TAG;
  const std::string plugin_tag = info.abi_tag ? info.abi_tag : "(none)";
  if (plugin_tag != host_tag)
    throw PluginError(path.string() + ": ABI tag '" + plugin_tag + "' differs from this ablate's ABI tag '" + host_tag +
                          "' (compiler/standard library/build type must match)",
                      kRebuildHint + std::string(" with the same compiler and CMAKE_BUILD_TYPE"));

  entry.descriptor = describe(info, path);
  entry.descriptor.code_hash = file_hash(path);  // the bytes just loaded (a rebuild later changes the file, not them)
  entry.factory = &entry.library->get_alias<Component*(const Options&)>(kFactoryAlias);
  return add(std::move(entry));
}

const PluginDescriptor& PluginRegistry::add_linked(const PluginInfo& info, PluginFactory factory) {
  if (info.api_version != kPluginApiVersion || info.abi_tag == nullptr || std::string(info.abi_tag) != ABLATE_ABI_TAG)
    throw PluginError("linked plugin has a different plugin API version or ABI tag", kRebuildHint);
  Entry entry;
  entry.descriptor = describe(info, {});
  entry.factory = factory;
  return add(std::move(entry));
}

const PluginDescriptor& PluginRegistry::add(Entry entry) {
  const auto key = std::make_pair(entry.descriptor.kind, entry.descriptor.name);
  for (const Entry& e : entries_) {
    if (e.descriptor.kind != key.first || e.descriptor.name != key.second) continue;
    auto& files = duplicates_[key];
    if (files.empty()) files.push_back(e.descriptor.path);
    files.push_back(entry.descriptor.path);
    throw PluginError("duplicate plugin " + entry.descriptor.id() + ": defined by both " + e.descriptor.path.string() + " and " +
                          entry.descriptor.path.string(),
                      duplicate_hint(files));
  }
  entries_.push_back(std::move(entry));
  return entries_.back().descriptor;
}

const PluginProblem* PluginRegistry::refused(std::string_view kind, std::string_view name) const {
  for (const PluginProblem& p : problems_)
    if (p.kind == kind && p.name == name) return &p;
  return nullptr;
}

std::vector<const PluginDescriptor*> PluginRegistry::list(std::string_view kind) const {
  std::vector<const PluginDescriptor*> out;
  for (const Entry& e : entries_)
    if (kind.empty() || e.descriptor.kind == kind) out.push_back(&e.descriptor);
  return out;
}

const PluginDescriptor& PluginRegistry::find(std::string_view kind, std::string_view name) const {
  if (auto dup = duplicates_.find({std::string(kind), std::string(name)}); dup != duplicates_.end()) {
    std::vector<std::string> files;
    for (const auto& f : dup->second) files.push_back(f.string());
    throw PluginError(
        "plugin " + std::string(kind) + "/" + std::string(name) + " is defined by more than one file: " + join(files, ", "),
        duplicate_hint(dup->second));
  }
  std::vector<std::string> names;
  std::vector<std::string> kinds;
  for (const Entry& e : entries_) {
    if (e.descriptor.kind == kind && e.descriptor.name == name) return e.descriptor;
    if (e.descriptor.kind == kind) names.push_back(e.descriptor.name);
    if (std::find(kinds.begin(), kinds.end(), e.descriptor.kind) == kinds.end()) kinds.push_back(e.descriptor.kind);
  }
  if (const PluginProblem* p = refused(kind, name)) throw PluginError(p->message, p->hint);
  if (names.empty()) {
    std::string hint = kinds.empty() ? "no plugins were found; run `ablate plugins` to see the search path"
                                     : "known kinds: " + join(kinds, ", ");
    if (auto near = closest_match(kind, kinds)) hint = "did you mean kind '" + *near + "'? " + hint;
    throw PluginError("no plugin of kind '" + std::string(kind) + "' is available (wanted '" + std::string(name) + "')", hint);
  }
  std::string hint = "available " + std::string(kind) + " plugins: " + join(names, ", ") + "; " + kFindHint;
  if (auto near = closest_match(name, names)) hint = "did you mean '" + *near + "'? " + hint;
  throw PluginError("unknown " + std::string(kind) + " plugin '" + std::string(name) + "'", hint);
}

std::shared_ptr<Component> PluginRegistry::create(std::string_view kind, std::string_view name,
                                                  const std::map<std::string, std::string>& options) const {
  const PluginDescriptor& d = find(kind, name);
  const Entry& entry = *std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return &e.descriptor == &d; });
  const Options resolved = resolve_options(d, options);

  Component* raw = nullptr;
  try {  // what it throws is read while the plugin's library is loaded (the registry holds it)
    raw = entry.factory(resolved);
  } catch (...) {
    ThrownText t = thrown_text();
    throw PluginFault(d.text(), "create", {}, std::move(t.what), std::move(t.hint), t.ablate_error);
  }
  if (raw == nullptr) throw PluginFault(d.text(), "create", {}, "its factory returned no component (null)", {});
  remember_plugin_of(raw, d.text());
  // The deleter owns a reference to the library: the object is destroyed (running plugin code)
  // first, then the deleter and with it the last reference that keeps the library mapped. While
  // an exception is in flight (it may be the plugin's own object) the library stays mapped.
  std::shared_ptr<boost::dll::shared_library> library = entry.library;
  return std::shared_ptr<Component>(raw, [library](Component* p) mutable {
    forget_plugin_of(p);
    delete p;
    if (std::uncaught_exceptions() > 0) pin_library(std::move(library));
  });
}

}  // namespace ablate
