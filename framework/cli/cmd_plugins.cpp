// `ablate plugins`: scans the plugin search path and prints every plugin with its options,
// as text or as JSON (--json), optionally of one kind. Files that could not be used are
// listed as problems and make the exit code 3, so a broken plugin never goes unnoticed.
#include <algorithm>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/spec_loading.hpp"
#include "cli/exit_codes.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace {

std::string option_default_text(const OptionDescriptor& o) {
  return o.default_value ? "default " + *o.default_value : std::string("required");
}

void print_text(std::ostream& out, const std::vector<std::filesystem::path>& search_path,
                const std::vector<const PluginDescriptor*>& plugins) {
  out << "Plugin search path:\n";
  for (const auto& p : search_path) out << "  " << p.string() << "\n";
  if (plugins.empty()) out << "\nNo plugins found.\n";
  for (const PluginDescriptor* d : plugins) {
    out << "\n" << d->kind << "/" << d->name << "  " << d->version << "  " << d->description << "\n";
    out << "  file: " << (d->path.empty() ? std::string("(linked into this binary)") : d->path.string()) << "\n";
    if (d->options.empty()) {
      out << "  options: none\n";
      continue;
    }
    out << "  options:\n";
    std::size_t width = 0;
    for (const auto& o : d->options) width = std::max(width, o.name.size());
    for (const auto& o : d->options) {
      std::string type = option_type_name(o.type);
      if (!o.choices.empty()) type += " {" + join(o.choices, "|") + "}";
      out << "    " << o.name << std::string(width - o.name.size() + 2, ' ') << type << ", " << option_default_text(o) << ": "
          << o.doc << "\n";
    }
  }
}

void print_json(std::ostream& out, const std::vector<std::filesystem::path>& search_path,
                const std::vector<const PluginDescriptor*>& plugins, const std::vector<PluginProblem>& problems,
                const std::vector<std::filesystem::path>& skipped) {
  out << "{\n  \"ablate_version\": " << json_quote(version_line()) << ",\n  \"search_path\": [";
  for (std::size_t i = 0; i < search_path.size(); ++i) out << (i ? ", " : "") << json_quote(search_path[i].string());
  out << "],\n  \"plugins\": [";
  for (std::size_t i = 0; i < plugins.size(); ++i) {
    const PluginDescriptor& d = *plugins[i];
    out << (i ? "," : "") << "\n    {\"kind\": " << json_quote(d.kind) << ", \"name\": " << json_quote(d.name)
        << ", \"version\": " << json_quote(d.version) << ", \"path\": " << json_quote(d.path.string())
        << ", \"description\": " << json_quote(d.description) << ", \"options\": [";
    for (std::size_t j = 0; j < d.options.size(); ++j) {
      const OptionDescriptor& o = d.options[j];
      out << (j ? ", " : "") << "{\"name\": " << json_quote(o.name) << ", \"type\": " << json_quote(option_type_name(o.type))
          << ", \"default\": " << (o.default_value ? json_quote(*o.default_value) : std::string("null"))
          << ", \"required\": " << (o.default_value ? "false" : "true") << ", \"choices\": [";
      for (std::size_t k = 0; k < o.choices.size(); ++k) out << (k ? ", " : "") << json_quote(o.choices[k]);
      out << "], \"doc\": " << json_quote(o.doc) << "}";
    }
    out << "]}";
  }
  out << (plugins.empty() ? "" : "\n  ") << "],\n  \"problems\": [";
  for (std::size_t i = 0; i < problems.size(); ++i) {
    out << (i ? "," : "") << "\n    {\"path\": " << json_quote(problems[i].path.string())
        << ", \"message\": " << json_quote(problems[i].message) << ", \"hint\": " << json_quote(problems[i].hint) << "}";
  }
  out << (problems.empty() ? "" : "\n  ") << "],\n  \"skipped\": [";
  for (std::size_t i = 0; i < skipped.size(); ++i) out << (i ? ", " : "") << json_quote(skipped[i].string());
  out << "]\n}\n";
}

}  // namespace

int cmd_plugins(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate plugins [options]\n\n"
      "Lists every plugin found on the plugin search path: the built-in directory\n"
      "next to the executable, then ABLATE_PLUGIN_PATH, then --plugin-path.\n"
      "Exits 3 if any file on the path could not be used as a plugin.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("kind,k", po::value<std::string>(), "only plugins of this kind (e.g. backend, block, schedule)")
      ("json", "machine-readable JSON output on stdout (problems included)");
  // clang-format on
  add_spec_options(options, nullptr);
  po::variables_map vm;
  if (!parse_command("plugins", options, args, {}, vm, out)) return kExitOk;  // --help

  std::vector<std::filesystem::path> extra;
  for (const auto& p : spec_options(vm).plugin_paths) extra.emplace_back(p);
  const std::vector<std::filesystem::path> search_path = plugin_search_path(extra);
  PluginRegistry registry;
  registry.scan(search_path);

  const std::string kind = vm.count("kind") ? vm["kind"].as<std::string>() : std::string();
  const std::vector<const PluginDescriptor*> plugins = registry.list(kind);
  if (!kind.empty() && plugins.empty()) {
    std::vector<std::string> kinds;
    for (const PluginDescriptor* d : registry.list())
      if (std::find(kinds.begin(), kinds.end(), d->kind) == kinds.end()) kinds.push_back(d->kind);
    std::string hint = kinds.empty() ? "no plugins were found at all" : "kinds found: " + join(kinds, ", ");
    if (auto near = closest_match(kind, kinds)) hint = "did you mean '" + *near + "'? " + hint;
    throw UsageError("no plugins of kind '" + kind + "' were found", hint);
  }

  if (vm.count("json")) {
    print_json(out, search_path, plugins, registry.problems(), registry.skipped());
  } else {
    print_text(out, search_path, plugins);
  }
  for (const std::filesystem::path& f : registry.skipped())
    err << "note: skipped " << f.string() << ": a shared library that is not an Ablate plugin (a plugin's helper)\n";
  for (const PluginProblem& p : registry.problems()) {
    err << "ablate: plugin error: " << p.message << "\n";
    if (!p.hint.empty()) err << "  hint: " << p.hint << "\n";
  }
  return registry.problems().empty() ? kExitOk : kExitPluginError;
}

}  // namespace ablate::cli
