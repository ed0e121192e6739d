// The reader of the spec: a marked tree (spec_tree.hpp), after `extends:` and `--set`, read key by
// key through the schema's bindings (spec_schema.cpp) into the typed ExperimentSpec, defaults
// filled in, every problem collected with its position and reported together.
#include "spec/spec_schema.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <yaml-cpp/yaml.h>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::spec {
using namespace detail;

namespace detail {

std::string describe(const SpecTree& t) {
  switch (t.kind) {
    case SpecTree::Kind::Null: return "an empty value";
    case SpecTree::Kind::Scalar: return "'" + t.text + "'";
    case SpecTree::Kind::Sequence: return "a list";
    case SpecTree::Kind::Map: return "a map";
  }
  return "?";
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (s == t) return true;
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (s == f) return false;
  return std::nullopt;
}

}  // namespace detail

namespace {

PathKind path_kind(const std::string& path) {
  return is_plugin_slot(path) ? PathKind::plugin : is_key_below_plugin(path) ? PathKind::key_below_plugin : PathKind::other;
}

std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// The keys allowed directly below `path` ("" for the top level), in schema order.
std::vector<std::string> children_of(const std::string& path) {
  std::vector<std::string> out;
  for (const SpecKey& k : schema())
    if (is_child(k.path, path)) out.push_back(k.leaf());
  return out;
}

const SpecKey& key_at(const std::string& path) {
  for (const SpecKey& k : schema())
    if (k.path == path) return k;
  throw Error("no spec key '" + path + "' in the schema");
}

}  // namespace

namespace detail {

const SpecTree* Reader::section(const SpecTree& parent, const std::string& key, const std::string& path) {
  const SpecTree* t = parent.find(key);
  if (!t || t->kind == SpecTree::Kind::Null) return nullptr;
  marks_.at[path] = t->mark;
  marks_.keys[path] = *parent.key_mark(key);
  if (!t->is_map()) {
    error(t->mark, path, describe(*t) + " is not a map; expected keys " + join(children_of(path), ", "));
    return nullptr;
  }
  check_keys(*t, path);
  return t;
}

void Reader::check_keys(const SpecTree& map, const std::string& path) {
  const std::vector<std::string> allowed = children_of(path);
  for (std::size_t i = 0; i < map.entries.size(); ++i) {
    const std::string& key = map.entries[i].first;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string what = "unknown key; expected one of " + join(allowed, ", ");
    if (auto near = closest_match(key, allowed)) what += " (did you mean '" + *near + "'?)";
    error(map.key_marks[i], child(path, key), what);
  }
}

const SpecTree* Reader::scalar(const SpecTree* parent, const std::string& key, const std::string& path,
                               const std::string& expected, bool required) {
  const SpecTree* t = parent ? parent->find(key) : nullptr;
  if (!t) {
    if (required) error(missing_at(parent, path), path, "missing (required); expected " + expected);
    return nullptr;
  }
  marks_.at[path] = t->mark;
  if (!t->is_scalar()) {
    error(t->mark, path, describe(*t) + " is not " + article(expected) + "; expected " + expected);
    return nullptr;
  }
  return t;
}

bool Reader::read_int(const SpecTree* parent, const std::string& key, const std::string& path, std::int64_t& out,
                      std::int64_t min, bool required) {
  const std::string expected = min == 1 ? "an integer > 0" : "an integer >= " + std::to_string(min);
  const SpecTree* given = parent ? parent->find(key) : nullptr;
  const SpecTree* t = scalar(parent, key, path, expected, required);
  if (!t) return !given;
  const auto v = parse_int(t->text);
  if (!v) {
    error(t->mark, path, describe(*t) + " is not an integer; expected " + expected);
    return false;
  }
  if (*v < min) {
    error(t->mark, path, t->text + " is out of range; expected " + expected);
    return false;
  }
  out = *v;
  return true;
}

void Reader::read_float(const SpecTree* parent, const std::string& key, const std::string& path, double& out, const Range& r) {
  const std::string expected = range_text("a number", r);
  const SpecTree* t = scalar(parent, key, path, expected);
  if (!t) return;
  if (auto v = float_value(*t, path, r)) out = *v;
}

std::optional<double> Reader::float_value(const SpecTree& t, const std::string& path, const Range& r) {
  const std::string expected = range_text("a number", r);
  if (!t.is_scalar()) {
    error(t.mark, path, describe(t) + " is not a number; expected " + expected);
    return std::nullopt;
  }
  const auto v = parse_float(t.text);
  if (!v) {
    error(t.mark, path, describe(t) + " is not a number; expected " + expected);
    return std::nullopt;
  }
  if (!r.contains(*v)) {
    error(t.mark, path, t.text + " is out of range; expected " + expected);
    return std::nullopt;
  }
  return v;
}

void Reader::read_optional_float(const SpecTree* parent, const std::string& key, const std::string& path,
                                 std::optional<double>& out) {
  const SpecTree* t = parent ? parent->find(key) : nullptr;
  if (!t || t->kind == SpecTree::Kind::Null) return;
  marks_.at[path] = t->mark;
  out = float_value(*t, path, kAny);
}

void Reader::read_bool(const SpecTree* parent, const std::string& key, const std::string& path, bool& out) {
  const SpecTree* t = scalar(parent, key, path, "true or false");
  if (!t) return;
  if (auto v = parse_bool(t->text)) {
    out = *v;
  } else {
    error(t->mark, path, describe(*t) + " is not a bool; expected true or false");
  }
}

void Reader::read_string(const SpecTree* parent, const std::string& key, const std::string& path, std::string& out,
                         bool required) {
  const SpecTree* t = parent ? parent->find(key) : nullptr;
  if (t && t->kind == SpecTree::Kind::Null && !required) return;
  t = scalar(parent, key, path, "a string", required);
  if (t) out = t->text;
}

void Reader::read_plugin(const SpecTree* parent, const std::string& key, const std::string& path, PluginRef& out, bool required) {
  const std::string expected = "a plugin name, or {plugin: NAME, <options>}";
  const SpecTree* t = parent ? parent->find(key) : nullptr;
  if (!t || t->kind == SpecTree::Kind::Null) {
    if (required) error(t ? t->mark : missing_at(parent, path), path, "missing (required); expected " + expected);
    return;
  }
  marks_.at[path] = t->mark;
  if (t->is_scalar()) {
    if (t->text.empty()) return error(t->mark, path, "an empty plugin name; expected " + expected);
    out = PluginRef{t->text, {}};
    return;
  }
  if (!t->is_map()) return error(t->mark, path, describe(*t) + " is not a plugin; expected " + expected);
  const SpecTree* name = t->find("plugin");
  if (!name && (out.name.empty() || t->find("name"))) {
    std::string what = "no `plugin:` key; expected " + expected;
    if (t->find("name")) what += " (write `plugin: NAME`, not `name: NAME`)";
    return error(t->mark, path, what);
  }
  // Without `plugin:` the options are for the default plugin (`block: {norm: rms_norm}`).
  PluginRef ref{out.name, {}};
  if (name && (!name->is_scalar() || name->text.empty())) {
    error(name->mark, path + ".plugin", describe(*name) + " is not a plugin name; expected " + expected);
  } else if (name) {
    ref.name = name->text;
    marks_.at[path] = name->mark;
  }
  for (std::size_t i = 0; i < t->entries.size(); ++i) {
    const auto& [option, value] = t->entries[i];
    const std::string option_path = path + "." + option;
    // A nested plugin (task.tokenizer) or a spec key beside the options (train.optimizer.lr): read on its own.
    if (option == "plugin" || is_plugin_slot(option_path) || is_key_below_plugin(option_path)) continue;
    marks_.at[option_path] = value.mark;
    marks_.keys[option_path] = t->key_marks[i];
    if (!value.is_scalar()) {
      error(value.mark, option_path,
            describe(value) + " is not a plugin option value; expected a bool, number or string" +
                (option == "betas" ? " (Adam's betas are the options beta1 and beta2: `beta1: 0.9, beta2: 0.98`)" : ""));
      continue;
    }
    ref.options[option] = value.text;
  }
  out = std::move(ref);
}

SourceMark Reader::missing_at(const SpecTree* parent, const std::string& path) const {
  const auto dot = path.rfind('.');
  if (dot != std::string::npos)
    if (auto it = marks_.keys.find(path.substr(0, dot)); it != marks_.keys.end()) return it->second;
  return parent ? parent->mark : marks_.fallback;
}

std::string Reader::article(const std::string& expected) {
  // "an integer > 0" -> "an integer"; "a number in [0, 1)" -> "a number"; "true or false" -> "a bool"
  if (expected.starts_with("an integer")) return "an integer";
  if (expected.starts_with("a number")) return "a number";
  if (expected.starts_with("a string")) return "a string";
  if (expected.starts_with("true")) return "a bool";
  return "a single value";
}

}  // namespace detail

namespace {

// Sets `key` to its default: reads its default YAML through its own binding. A problem is a bug
// of the schema, and throws.
void read_default(const SpecKey& key, const std::string& yaml, ExperimentSpec& s) {
  SpecErrors errors;
  SpecMarks scratch;
  Reader r(errors, scratch);
  const SpecTree tree = parse_yaml(key.leaf() + ": " + yaml, "the default of " + key.path);
  key.read(r, &tree, key, s);
  if (!errors.empty()) throw Error("the schema's default of " + key.path + " does not read: " + errors.lines().front());
}

void set_default(const SpecKey& key, ExperimentSpec& s) {
  if (!key.default_yaml.empty()) read_default(key, key.default_yaml, s);
}

// A key whose default is another key's value (model.encoder_layers: model.layers): that value,
// written out and read back through this key's binding.
void copy_default(const SpecKey& key, ExperimentSpec& s) { read_default(key, YAML::Dump(key_at(key.default_key).write(s)), s); }

// The keys below `path` read from `map` (nullptr: the section is absent), in schema order.
void read_section(Reader& r, const SpecTree* map, const std::string& path, ExperimentSpec& s) {
  for (const SpecKey& key : schema()) {
    if (!is_child(key.path, path)) continue;
    switch (key.kind) {
      case KeyKind::directive: break;
      case KeyKind::section: read_section(r, map ? r.section(*map, key.leaf(), key.path) : nullptr, key.path, s); break;
      case KeyKind::optional_section:
        if (const SpecTree* sub = map ? r.section(*map, key.leaf(), key.path) : nullptr) {
          key.engage(s);
          for (const SpecKey& c : schema())
            if (is_child(c.path, key.path)) set_default(c, s);
          read_section(r, sub, key.path, s);
        }
        break;
      case KeyKind::value:
        key.read(r, map, key, s);
        if (!key.default_key.empty() && !(map && map->find(key.leaf())) && !r.failed(key.default_key)) copy_default(key, s);
        if (has_keys_below(key.path)) {  // train.optimizer's lr, weight_decay, groups: in the plugin's own map
          const SpecTree* own = map ? map->find(key.leaf()) : nullptr;
          read_section(r, own && own->is_map() ? own : nullptr, key.path, s);
        }
        break;
    }
  }
}

// Sets every key below `path` to its default (an optional section stays absent).
void set_defaults(ExperimentSpec& s, const std::string& path) {
  for (const SpecKey& key : schema()) {
    if (!is_child(key.path, path)) continue;
    if (key.kind == KeyKind::section) set_defaults(s, key.path);
    if (key.kind != KeyKind::value) continue;
    set_default(key, s);
    if (!key.default_key.empty()) copy_default(key, s);
    if (has_keys_below(key.path)) set_defaults(s, key.path);
  }
}

// Merges each "KEY.PATH=VALUE" over `tree`, in order; reports every bad one.
void apply_overrides(SpecTree& tree, const std::vector<std::string>& overrides) {
  SpecErrors errors;
  for (const std::string& o : overrides) {
    try {
      auto [top, path] = parse_override(o);
      if (!is_spec_path(path)) {
        std::string what = "unknown key path; expected a spec key path";
        if (auto near = closest_match(path, spec_paths())) what += " (did you mean '" + *near + "'?)";
        errors.add(SourceMark{"--set " + o, 0, 0}, path, what);
        continue;
      }
      merge_into(tree, top, "", path_kind);
    } catch (const UsageError& e) {
      errors.add(SourceMark{e.what(), 0, 0}, "", "");
    }
  }
  errors.throw_if_any("see docs/spec-reference.md for every key path");
}

}  // namespace

SourceMark SpecMarks::of(const std::string& path) const {
  std::string p = path;
  while (!p.empty()) {
    if (auto it = at.find(p); it != at.end()) return it->second;
    const auto dot = p.rfind('.');
    p = dot == std::string::npos ? std::string() : p.substr(0, dot);
  }
  return fallback;
}

const ExperimentSpec& default_spec() {
  static const ExperimentSpec defaults = [] {
    ExperimentSpec s;
    set_defaults(s, "");
    return s;
  }();
  return defaults;
}

ExperimentSpec spec_from_tree(const SpecTree& tree) {
  ExperimentSpec spec = default_spec();
  SpecErrors errors;
  spec.marks = SpecMarks{};
  spec.marks.fallback = tree.mark;
  Reader r(errors, spec.marks);
  if (!tree.is_map()) {
    r.error(tree.mark, "", describe(tree) + " is not a spec; expected a map with keys " + join(children_of(""), ", "));
    errors.throw_if_any();
  }
  r.check_keys(tree, "");
  if (const SpecTree* e = tree.find("extends"))
    r.error(e->mark, "extends", "cannot be resolved here; expected it only in a spec file (load_spec)");
  read_section(r, &tree, "", spec);

  // Across keys: heads divide d_model (reported at the key that was written).
  const ModelSpec& m = spec.model;
  if (!r.failed("model.d_model") && !r.failed("model.heads") && m.d_model % m.heads != 0) {
    if (spec.marks.at.count("model.heads"))
      r.error(spec.marks.of("model.heads"), "model.heads",
              std::to_string(m.heads) + " does not divide model.d_model " + std::to_string(m.d_model) +
                  "; expected a divisor of d_model (each head gets d_model / heads dimensions)");
    else
      r.error(spec.marks.of("model.d_model"), "model.d_model",
              std::to_string(m.d_model) + " is not divisible by model.heads " + std::to_string(m.heads) +
                  "; expected a multiple of heads");
  }
  if (m.share_embeddings && m.arch != Arch::EncoderDecoder && !r.failed("model.arch"))
    r.error(spec.marks.of("model.share_embeddings"), "model.share_embeddings",
            "true with model.arch " + std::string(m.arch == Arch::Decoder ? "decoder" : "encoder") +
                ", which has one embedding table; expected false, or model.arch encoder_decoder");
  // Branches (docs/training.md, "Branches"): points inside the run, a start before its end.
  const TrainSpec& t = spec.train;
  if (!r.failed("train.steps") && !t.branch_points.empty() && t.branch_points.back() >= t.steps)
    r.error(spec.marks.of("train.branch_points"), "train.branch_points",
            "lists step " + std::to_string(t.branch_points.back()) + ", not before train.steps " + std::to_string(t.steps) +
                "; expected steps before the run's end (its checkpoint.bin keeps the last state)");
  if (t.branch_from && !r.failed("train.steps") && !r.failed("train.branch_from.step") && t.branch_from->step >= t.steps)
    r.error(spec.marks.of("train.branch_from.step"), "train.branch_from.step",
            std::to_string(t.branch_from->step) + " is not before train.steps " + std::to_string(t.steps) +
                "; expected a branch point the run trains on from");
  if (t.branch_from && t.budget)
    r.error(spec.marks.of("train.budget"), "train.budget",
            "is set with train.branch_from; expected train.steps alone: a branch's length is counted in the steps "
            "of the run it starts from");
  errors.throw_if_any("see docs/spec-reference.md for every key, its type and default");
  return spec;
}

ExperimentSpec load_spec(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, path_kind);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec load_sweep_point(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, path_kind, /*with_sweep=*/false);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec parse_spec(const std::string& yaml, const std::string& origin, const std::vector<std::string>& overrides) {
  SpecTree tree = parse_yaml(yaml, origin);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

}  // namespace ablate::spec
