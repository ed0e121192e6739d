// The spec key reference generated from the schema (spec_schema.cpp): one KeyDoc per key for
// `ablate keys`, and the Markdown key tables of docs/spec-reference.md (`ablate keys --markdown`;
// a test checks that the docs hold the current tables).
#include "spec/spec_schema.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace ablate::spec {
using namespace detail;

namespace {

// Markdown table cells: a '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' && (out.empty() || out.back() != '\\')) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::vector<KeyDoc> key_docs() {
  std::vector<KeyDoc> out;
  for (const SpecKey& k : schema()) {
    KeyDoc d{k.path, k.type, "", k.is_required, k.meaning};
    if (!k.shown_default.empty()) {
      d.default_value = k.shown_default;
    } else if (!k.default_key.empty()) {
      d.default_value = "`" + k.default_key + "`";
    } else if (!k.default_yaml.empty()) {
      const bool plain = parse_float(k.default_yaml) || parse_bool(k.default_yaml);  // names and lists as code
      d.default_value = plain ? k.default_yaml : "`" + k.default_yaml + "`";
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string key_tables_markdown() {
  const std::vector<KeyDoc> docs = key_docs();
  std::ostringstream md;
  // A top-level table lists the top-level keys and those nested in a top-level plugin's map (task.tokenizer).
  const auto in_top_table = [&](const std::string& path) {
    const std::string first = path.substr(0, path.find('.'));
    return first == path ||
           std::any_of(docs.begin(), docs.end(), [&](const KeyDoc& d) { return d.path == first && d.type == "plugin"; });
  };
  auto table = [&](const std::string& section) {
    md << "| key | type | default | meaning |\n|---|---|---|---|\n";
    for (const KeyDoc& d : docs) {
      const bool top = section.empty() && in_top_table(d.path);
      if (!top && !(d.path.starts_with(section + ".") && !section.empty())) continue;
      const std::string key = section.empty() ? d.path : d.path.substr(section.size() + 1);
      md << "| `" << key << "` | " << (d.required ? "**required** " : "") << cell(d.type) << " | " << cell(d.default_value)
         << " | " << cell(d.meaning) << " |\n";
    }
  };
  md << "### Top level\n\n";
  table("");
  for (const KeyDoc& d : docs) {
    if (d.path.find('.') != std::string::npos || d.type != "map") continue;
    std::string about = d.meaning;
    about[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(about[0])));
    md << "\n### `" << d.path << "`\n\n" << about << ".\n\n";
    table(d.path);
  }
  return md.str();
}

}  // namespace ablate::spec
