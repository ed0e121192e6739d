// Implementation of the marked spec tree (spec_tree.hpp): the only place that talks to yaml-cpp
// when reading, plus `extends:` loading, merging and `--set` override trees.
#include "spec/spec_tree.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::spec {

std::string SourceMark::str() const {
  if (line <= 0) return origin;
  return origin + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void SpecErrors::add(const SourceMark& mark, const std::string& path, const std::string& what) {
  std::string line = mark.str();
  if (!path.empty()) line += ": " + path;
  if (!what.empty()) line += ": " + what;
  problems_.emplace_back(mark, line);
}

std::vector<std::string> SpecErrors::lines() const {
  std::vector<std::string> origins;  // in the order first named
  for (const auto& [mark, text] : problems_)
    if (std::find(origins.begin(), origins.end(), mark.origin) == origins.end()) origins.push_back(mark.origin);
  auto key = [&](const SourceMark& m) {
    return std::tuple(std::find(origins.begin(), origins.end(), m.origin) - origins.begin(), m.line, m.column);
  };
  std::vector<std::pair<SourceMark, std::string>> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) { return key(a.first) < key(b.first); });
  std::vector<std::string> out;
  for (const auto& p : sorted) out.push_back(p.second);
  return out;
}

void SpecErrors::throw_if_any(const std::string& hint) const {
  if (!problems_.empty()) throw UsageError(join(lines(), "\n"), hint);
}

const SpecTree* SpecTree::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

SpecTree* SpecTree::find(const std::string& key) {
  for (auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

const SourceMark* SpecTree::key_mark(const std::string& key) const {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].first == key) return &key_marks[i];
  return nullptr;
}

void SpecTree::erase(const std::string& key) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first == key) {
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
      key_marks.erase(key_marks.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

namespace {

// A scalar written so that YAML reads back the same text: plain when that is unambiguous.
std::string flow_scalar(const std::string& s) {
  const bool plain =
      !s.empty() && s != "null" && s != "Null" && s != "NULL" && s != "~" && s.front() != '-' &&
      std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+' || c == '/';
      });
  if (plain || (s.front() == '-' && s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1])) &&
                s.find_first_not_of("0123456789.eE+-") == std::string::npos))
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

SourceMark mark_of(const YAML::Mark& m, const std::string& origin, const SourceMark& fallback) {
  if (m.line < 0 || m.column < 0) return fallback;
  return {origin, m.line + 1, m.column + 1};
}

// The most values one spec file may hold once YAML's aliases are expanded (real specs hold a few
// hundred): nested aliases (`b: [*a, *a]`, `c: [*b, *b]`, ...) double at each level, and an
// "alias bomb" of a few lines would expand for minutes into all of memory.
constexpr std::size_t kMaxSpecValues = 100000;

SpecTree convert(const YAML::Node& node, const std::string& origin, const SourceMark& fallback, const std::string& path,
                 SpecErrors& errors, std::size_t& values) {
  SpecTree t;
  t.mark = mark_of(node.Mark(), origin, fallback);
  if (++values > kMaxSpecValues)
    throw UsageError(t.mark.str() + ": the YAML holds more than " + std::to_string(kMaxSpecValues) +
                         " values once its aliases (*name) are expanded, at " + (path.empty() ? "the top" : path) +
                         "; expected a spec",
                     "aliases that repeat aliases multiply: write the values out, or use fewer levels of them");
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: t.kind = SpecTree::Kind::Null; break;
    case YAML::NodeType::Scalar:
      t.kind = SpecTree::Kind::Scalar;
      t.text = node.Scalar();
      break;
    case YAML::NodeType::Sequence: {
      t.kind = SpecTree::Kind::Sequence;
      std::size_t i = 0;
      for (const YAML::Node& item : node) {
        t.items.push_back(convert(item, origin, t.mark, path + "[" + std::to_string(i) + "]", errors, values));
        ++i;
      }
      break;
    }
    case YAML::NodeType::Map:
      t.kind = SpecTree::Kind::Map;
      for (auto it = node.begin(); it != node.end(); ++it) {
        const SourceMark key_mark = mark_of(it->first.Mark(), origin, t.mark);
        if (!it->first.IsScalar()) {
          errors.add(key_mark, path, "a key must be a plain name; expected `name: value`");
          continue;
        }
        const std::string key = it->first.Scalar();
        const std::string child = path.empty() ? key : path + "." + key;
        if (const SourceMark* first = t.key_mark(key)) {
          errors.add(key_mark, child, "duplicate key (first written at " + first->str() + "); expected each key once");
          continue;
        }
        t.entries.emplace_back(key, convert(it->second, origin, key_mark, child, errors, values));
        t.key_marks.push_back(key_mark);
      }
      break;
  }
  return t;
}

void set_origin(SpecTree& t, const SourceMark& mark) {
  t.mark = mark;
  for (auto& m : t.key_marks) m = mark;
  for (auto& i : t.items) set_origin(i, mark);
  for (auto& [k, v] : t.entries) set_origin(v, mark);
}

std::string child_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Reads and parses one spec file of `size` bytes (checked by the caller): UTF-8, one document.
SpecTree read_spec_file(const std::filesystem::path& file, std::uintmax_t size, const std::string& where) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(where + "cannot read spec file '" + file.string() + "'", "check its permissions");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    const std::string before = text.substr(0, bad);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const auto column = bad - (before.rfind('\n') == std::string::npos ? 0 : before.rfind('\n') + 1) + 1;
    throw UsageError(where + file.string() + ":" + std::to_string(line) + ":" + std::to_string(column) +
                         ": invalid UTF-8 (byte " + std::to_string(bad) + "); expected a UTF-8 text file",
                     "save the spec as UTF-8");
  }
  return parse_yaml(text, file.string());
}

SpecTree load_chain(const std::filesystem::path& file, std::vector<std::filesystem::path>& chain, const SourceMark* from,
                    const IsPluginRef& is_plugin_ref, bool with_sweep) {
  namespace fs = std::filesystem;
  if (file.empty())
    throw UsageError((from ? from->str() + ": extends: " : std::string()) + "the spec file path is empty; expected a spec file",
                     "name a .yaml file");
  std::error_code canonical_error;  // /dev/stdin of a pipe has no canonical path: the checks below name it
  fs::path canonical = fs::weakly_canonical(fs::absolute(file), canonical_error);
  if (canonical_error) canonical = fs::absolute(file).lexically_normal();
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    std::vector<std::string> names;
    for (const auto& c : chain) names.push_back(c.string());
    names.push_back(canonical.string());
    throw UsageError((from ? from->str() + ": extends: " : std::string()) + "extends cycle: " + join(names, " -> "),
                     "remove one `extends:` from the chain");
  }
  const std::string where = from ? from->str() + ": extends: " : std::string();
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (!fs::exists(st))
    throw UsageError(where + "cannot read spec file '" + file.string() + "': it does not exist",
                     from ? "paths in extends: are relative to the file that names them" : "check the path");
  if (!fs::is_regular_file(st))
    throw UsageError(where + "'" + file.string() + "' is " + (fs::is_directory(st) ? "a directory" : "not a regular file") +
                         "; expected a spec file (YAML)",
                     "name a .yaml file");
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec || size > kMaxSpecBytes)
    throw UsageError(where + "spec file '" + file.string() + "' has " + std::to_string(size) + " bytes; expected at most " +
                         std::to_string(kMaxSpecBytes),
                     "a spec is a small YAML file; data belongs in the task's files");
  // A sweep loads its spec file once per point: parse each file once per version of it
  // (size, time), so that expanding N points is not N parses of an N-value list.
  static std::mutex cache_mutex;
  static auto* cache = new std::map<fs::path, std::tuple<std::uintmax_t, fs::file_time_type, SpecTree>>();
  const fs::file_time_type mtime = fs::last_write_time(file, ec);
  SpecTree tree;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache->find(canonical);
        it == cache->end() || std::get<0>(it->second) != size || std::get<1>(it->second) != mtime)
      (*cache)[canonical] = {size, mtime, read_spec_file(file, size, where)};
    // A sweep's points need no sweep: copying the rest only keeps N points linear in N.
    const SpecTree& cached = std::get<2>((*cache)[canonical]);
    if (with_sweep || !cached.is_map()) {
      tree = cached;
    } else {
      tree.kind = cached.kind;
      tree.mark = cached.mark;
      for (std::size_t i = 0; i < cached.entries.size(); ++i) {
        if (cached.entries[i].first == "sweep") continue;
        tree.entries.push_back(cached.entries[i]);
        tree.key_marks.push_back(cached.key_marks[i]);
      }
    }
  }
  if (!tree.is_map()) return tree;  // the typed layer reports a non-map document

  const fs::path dir = file.parent_path();
  if (SpecTree* paths = tree.find("plugin_paths"); paths && paths->kind == SpecTree::Kind::Sequence) {
    for (SpecTree& p : paths->items)
      if (p.is_scalar() && !p.text.empty()) p.text = fs::absolute(dir / p.text).lexically_normal().string();
  }
  const SpecTree* extends = tree.find("extends");
  if (!extends) return tree;
  if (!extends->is_scalar() || extends->text.empty()) {
    SpecErrors e;
    e.add(extends->mark, "extends", "not a path; expected the path of a spec file, relative to this one");
    e.throw_if_any();
  }
  const SourceMark mark = extends->mark;
  chain.push_back(canonical);
  SpecTree base = load_chain((dir / extends->text).lexically_normal(), chain, &mark, is_plugin_ref, with_sweep);
  chain.pop_back();
  tree.erase("extends");
  merge_into(base, tree, "", is_plugin_ref);
  return base;
}

}  // namespace

std::string SpecTree::flow() const {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Scalar: return flow_scalar(text);
    case Kind::Sequence: {
      std::vector<std::string> parts;
      for (const auto& i : items) parts.push_back(i.flow());
      std::string out = "[";  // appended, not `"[" + ...`: GCC 12 warns falsely (-Wrestrict) on that
      out += join(parts, ", ");
      out += "]";
      return out;
    }
    case Kind::Map: {
      std::vector<std::string> parts;
      for (const auto& [k, v] : entries) parts.push_back(flow_scalar(k) + ": " + v.flow());
      std::string out = "{";
      out += join(parts, ", ");
      out += "}";
      return out;
    }
  }
  return "null";
}

SpecTree parse_yaml(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(text);
    if (documents.size() > 1)
      throw UsageError(origin + ": holds " + std::to_string(documents.size()) +
                           " YAML documents (separated by ---); expected one spec per file",
                       "put each experiment in its own file, or use sweep: for variants");
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::ParserException& e) {
    const SourceMark m{origin, e.mark.line + 1, e.mark.column + 1};
    throw UsageError(m.str() + ": invalid YAML: " + e.msg, "check the indentation and the brackets/quotes near that position");
  } catch (const YAML::Exception& e) {
    throw UsageError(origin + ": invalid YAML: " + e.msg);
  }
  SpecErrors errors;
  std::size_t values = 0;
  SpecTree tree = convert(root, origin, SourceMark{origin, 1, 1}, "", errors, values);
  errors.throw_if_any();
  return tree;
}

namespace {

// A plugin named by its name alone (`pre_norm`) as the map `{plugin: pre_norm}`.
SpecTree plugin_map(const SpecTree& name) {
  SpecTree as_map;
  as_map.kind = SpecTree::Kind::Map;
  as_map.mark = name.mark;
  as_map.entries.emplace_back("plugin", name);
  as_map.key_marks.push_back(name.mark);
  return as_map;
}

}  // namespace

void merge_into(SpecTree& base, const SpecTree& top, const std::string& path, const IsPluginRef& is_plugin_ref) {
  const bool plugin = !path.empty() && is_plugin_ref(path) == PathKind::plugin;
  if (plugin && top.is_map() && base.is_scalar()) base = plugin_map(base);  // `block: pre_norm` below `block: {warmup: 10}`
  if (top.kind == SpecTree::Kind::Null && base.is_map()) return;            // `model:` with every key commented out
  // A plugin's options start afresh under a plugin named again: `block: pre_norm` (a name alone
  // means the plugin's defaults) or `block: {plugin: another}`; the spec keys beside the options
  // (train.optimizer's lr) stay unless `top` sets them.
  auto restart = [&](SpecTree replaced) {
    if (base.is_map())
      for (std::size_t i = 0; i < base.entries.size(); ++i) {
        const auto& [key, value] = base.entries[i];
        if (is_plugin_ref(child_path(path, key)) != PathKind::key_below_plugin || replaced.find(key)) continue;
        if (replaced.is_scalar()) replaced = plugin_map(replaced);  // a name alone, with keys to keep
        replaced.entries.emplace_back(key, value);
        replaced.key_marks.push_back(base.key_marks[i]);
      }
    base = std::move(replaced);
  };
  if (plugin && top.is_scalar() && top.kind != SpecTree::Kind::Null) return restart(top);
  if (!top.is_map() || !base.is_map()) {
    base = top;
    return;
  }
  if (plugin) {
    const SpecTree* top_name = top.find("plugin");
    const SpecTree* base_name = base.find("plugin");
    if (top_name && (!base_name || !base_name->is_scalar() || !top_name->is_scalar() || top_name->text != base_name->text))
      return restart(top);
  }
  for (std::size_t i = 0; i < top.entries.size(); ++i) {
    const auto& [key, value] = top.entries[i];
    if (SpecTree* existing = base.find(key)) {
      merge_into(*existing, value, child_path(path, key), is_plugin_ref);
    } else {
      base.entries.emplace_back(key, value);
      base.key_marks.push_back(top.key_marks[i]);
    }
  }
}

SpecTree load_tree(const std::filesystem::path& file, const IsPluginRef& is_plugin_ref, bool with_sweep) {
  std::vector<std::filesystem::path> chain;
  return load_chain(file, chain, nullptr, is_plugin_ref, with_sweep);
}

std::pair<SpecTree, std::string> parse_override(const std::string& assignment) {
  const std::string origin = "--set " + assignment;
  const auto eq = assignment.find('=');
  const std::string path = assignment.substr(0, eq);
  std::vector<std::string> keys;
  std::size_t start = 0;
  while (eq != std::string::npos && !path.empty()) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (eq == std::string::npos || keys.empty() ||
      std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.empty(); }))
    throw UsageError(origin + ": not an override; expected KEY.PATH=VALUE, e.g. --set model.d_model=256");

  SpecTree value;
  try {
    value = parse_yaml(assignment.substr(eq + 1), origin);
  } catch (const UsageError& e) {
    const std::string message = e.what();
    const auto why = message.find("invalid YAML: ");
    throw UsageError(origin + ": the value is not valid YAML (" +
                     (why == std::string::npos ? message : message.substr(why + 14)) +
                     "); expected a YAML value, e.g. 256, pre_norm, [0.9, 0.999] or {plugin: noam, warmup: 400}");
  }
  const SourceMark mark{origin, 0, 0};
  set_origin(value, mark);
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
    SpecTree parent;
    parent.kind = SpecTree::Kind::Map;
    parent.mark = mark;
    parent.entries.emplace_back(*k, std::move(value));
    parent.key_marks.push_back(mark);
    value = std::move(parent);
  }
  return {std::move(value), path};
}

}  // namespace ablate::spec
