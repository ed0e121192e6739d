// `ablate keys [PREFIX]`: every spec key with its type, default and meaning, from the one schema
// table that also reads specs; --markdown prints the key tables of docs/spec-reference.md.
#include <algorithm>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "core/text.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace {

// Markdown cell text for a terminal: no backticks, no escaped bars.
std::string plain(const std::string& md) {
  std::string out;
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '`') continue;
    if (md[i] == '\\' && i + 1 < md.size() && md[i + 1] == '|') continue;
    out += md[i];
  }
  return out;
}

}  // namespace

int cmd_keys(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options(
      "ablate keys [PREFIX] [options]\n\n"
      "Lists every key of an experiment spec (or those whose path starts with PREFIX,\n"
      "e.g. `ablate keys train.optimizer`): type and range, default, meaning. Plugin\n"
      "options are listed by `ablate plugins`.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("prefix", po::value<std::string>(), "only keys whose path starts with it (positional)")
      ("markdown", "print the key tables of docs/spec-reference.md instead");
  // clang-format on
  po::variables_map vm;
  if (!parse_command("keys", options, args, {"prefix", 1}, vm, out)) return kExitOk;  // --help
  if (vm.count("markdown")) {
    if (vm.count("prefix")) throw UsageError("ablate keys: --markdown prints every table; expected no PREFIX with it");
    out << spec::key_tables_markdown();
    return kExitOk;
  }
  const std::string prefix = vm.count("prefix") ? vm["prefix"].as<std::string>() : "";
  std::vector<spec::KeyDoc> keys;
  for (const spec::KeyDoc& k : spec::key_docs())
    if (k.path.starts_with(prefix)) keys.push_back(k);
  if (keys.empty()) {
    std::vector<std::string> paths;
    for (const spec::KeyDoc& k : spec::key_docs()) paths.push_back(k.path);
    std::string hint = "`ablate keys` lists them all";
    if (auto near = closest_match(prefix, paths)) hint = "did you mean '" + *near + "'? " + hint;
    throw UsageError("ablate keys: no spec key starts with '" + prefix + "'", hint);
  }
  std::size_t path_w = 0, type_w = 0, default_w = 0;
  for (const spec::KeyDoc& k : keys) {
    path_w = std::max(path_w, k.path.size());
    type_w = std::max(type_w, plain(k.type).size() + (k.required ? 9 : 0));
    default_w = std::max(default_w, plain(k.default_value).size());
  }
  for (const spec::KeyDoc& k : keys) {
    const std::string type = (k.required ? "required " : "") + plain(k.type);
    out << k.path << std::string(path_w - k.path.size() + 2, ' ') << type << std::string(type_w - type.size() + 2, ' ')
        << plain(k.default_value) << std::string(default_w - plain(k.default_value).size() + 2, ' ') << plain(k.meaning) << "\n";
  }
  return kExitOk;
}

}  // namespace ablate::cli
