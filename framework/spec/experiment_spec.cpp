// The spec's schema, one table that describes every key once (path, type, range, default,
// meaning), and what it drives: reading a spec tree into the typed ExperimentSpec (every problem
// collected with its position), defaults, --set/sweep paths, the resolved YAML, the docs' tables.
#include "spec/experiment_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::spec {

const char* to_string(ProbeKind v) { return v == ProbeKind::eval ? "eval" : "repeated"; }
const char* to_string(Precision v) { return v == Precision::f32 ? "f32" : "bf16"; }
const char* to_string(OptimizerName v) { return v == OptimizerName::adam ? "adam" : "adamw"; }
const char* to_string(MetricMode v) { return v == MetricMode::max ? "max" : "min"; }
const char* to_string(Metric v) {
  switch (v) {
    case Metric::loss: return "loss";
    case Metric::perplexity: return "perplexity";
    case Metric::token_accuracy: return "token_accuracy";
    case Metric::exact_match: return "exact_match";
  }
  return "?";
}

const std::vector<PluginSlot>& plugin_slots() {
  static const std::vector<PluginSlot> slots = {{"task", "task"},
                                                {"model.block", "block"},
                                                {"model.attention", "attention"},
                                                {"model.positional_encoding", "positional_encoding"},
                                                {"model.ffn", "ffn"},
                                                {"backend", "backend"},
                                                {"train.schedule", "schedule"}};
  return slots;
}

const PluginRef& plugin_at(const ExperimentSpec& spec, const std::string& path) {
  return plugin_at(const_cast<ExperimentSpec&>(spec), path);  // one table of slots; this one reads only
}

PluginRef& plugin_at(ExperimentSpec& spec, const std::string& path) {
  if (path == "task") return spec.task;
  if (path == "model.block") return spec.model.block;
  if (path == "model.attention") return spec.model.attention;
  if (path == "model.positional_encoding") return spec.model.positional_encoding;
  if (path == "model.ffn") return spec.model.ffn;
  if (path == "backend") return spec.backend;
  if (path == "train.schedule") return spec.train.schedule;
  throw Error("no plugin reference at spec path '" + path + "'");
}

namespace {

bool is_plugin_path(const std::string& path) {
  const auto& s = plugin_slots();
  return std::any_of(s.begin(), s.end(), [&](const PluginSlot& p) { return p.path == path; });
}

// The keys allowed directly below `path` ("" for the top level), in schema order.
std::vector<std::string> children_of(const std::string& path);

std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

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

// A range for numbers: lo (inclusive or not), hi (exclusive), described as the brief has them.
struct Range {
  std::optional<double> lo;
  bool lo_inclusive = true;
  std::optional<double> hi;  // exclusive
  bool contains(double v) const {
    if (lo && (lo_inclusive ? v < *lo : v <= *lo)) return false;
    if (hi && v >= *hi) return false;
    return true;
  }
};
constexpr Range kPositive{0.0, false, std::nullopt};
constexpr Range kNonNegative{0.0, true, std::nullopt};
constexpr Range kUnit{0.0, true, 1.0};  // [0, 1)
constexpr Range kAny{};

std::string range_text(const char* what, const Range& r) {
  if (r.lo && r.hi)
    return std::string(what) + " in " + (r.lo_inclusive ? "[" : "(") + number_text(*r.lo) + ", " + number_text(*r.hi) + ")";
  if (r.lo) return std::string(what) + (r.lo_inclusive ? " >= " : " > ") + number_text(*r.lo);
  return what;
}

template <class E>
using Choices = std::vector<std::pair<const char*, E>>;

// Reads the typed spec from a tree, adding a line to `errors` for every problem and recording
// where each value was written in `marks`.
class Reader {
 public:
  Reader(SpecErrors& errors, SpecMarks& marks) : errors_(errors), marks_(marks) {}

  // The map at `key` of `parent` (nullptr when absent or empty), after checking its keys.
  const SpecTree* section(const SpecTree& parent, const std::string& key, const std::string& path) {
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

  void check_keys(const SpecTree& map, const std::string& path) {
    const std::vector<std::string> allowed = children_of(path);
    for (std::size_t i = 0; i < map.entries.size(); ++i) {
      const std::string& key = map.entries[i].first;
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string what = "unknown key; expected one of " + join(allowed, ", ");
      if (auto near = closest_match(key, allowed)) what += " (did you mean '" + *near + "'?)";
      error(map.key_marks[i], child(path, key), what);
    }
  }

  // The scalar at `key`, or nullptr (absent; or not a scalar, which is reported).
  const SpecTree* scalar(const SpecTree* parent, const std::string& key, const std::string& path, const std::string& expected,
                         bool required = false) {
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

  // Returns false if a value was given and is wrong (reported).
  bool read_int(const SpecTree* parent, const std::string& key, const std::string& path, std::int64_t& out, std::int64_t min,
                bool required = false) {
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

  void read_float(const SpecTree* parent, const std::string& key, const std::string& path, double& out, const Range& r) {
    const std::string expected = range_text("a number", r);
    const SpecTree* t = scalar(parent, key, path, expected);
    if (!t) return;
    if (auto v = float_value(*t, path, r)) out = *v;
  }

  std::optional<double> float_value(const SpecTree& t, const std::string& path, const Range& r) {
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

  // An optional number: absent or null leaves `out` empty.
  void read_optional_float(const SpecTree* parent, const std::string& key, const std::string& path, std::optional<double>& out) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t || t->kind == SpecTree::Kind::Null) return;
    marks_.at[path] = t->mark;
    out = float_value(*t, path, kAny);
  }

  void read_bool(const SpecTree* parent, const std::string& key, const std::string& path, bool& out) {
    const SpecTree* t = scalar(parent, key, path, "true or false");
    if (!t) return;
    if (auto v = parse_bool(t->text)) {
      out = *v;
    } else {
      error(t->mark, path, describe(*t) + " is not a bool; expected true or false");
    }
  }

  void read_string(const SpecTree* parent, const std::string& key, const std::string& path, std::string& out,
                   bool required = false) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (t && t->kind == SpecTree::Kind::Null && !required) return;
    t = scalar(parent, key, path, "a string", required);
    if (t) out = t->text;
  }

  template <class E>
  std::optional<E> enum_value(const SpecTree& t, const std::string& path, const Choices<E>& choices) {
    std::vector<std::string> names;
    for (const auto& [n, v] : choices) {
      if (t.is_scalar() && t.text == n) return v;
      names.emplace_back(n);
    }
    std::string what = describe(t) + " is not one of " + join(names, ", ");
    if (t.is_scalar())
      if (auto near = closest_match(t.text, names)) what += " (did you mean '" + *near + "'?)";
    error(t.mark, path, what);
    return std::nullopt;
  }

  template <class E>
  void read_enum(const SpecTree* parent, const std::string& key, const std::string& path, E& out, const Choices<E>& choices) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t) return;
    marks_.at[path] = t->mark;
    if (auto v = enum_value(*t, path, choices)) out = *v;
  }

  // `key: NAME` or `key: {plugin: NAME, option: value, ...}`.
  void read_plugin(const SpecTree* parent, const std::string& key, const std::string& path, PluginRef& out,
                   bool required = false) {
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
      if (option == "plugin") continue;
      const std::string option_path = path + "." + option;
      marks_.at[option_path] = value.mark;
      marks_.keys[option_path] = t->key_marks[i];
      if (!value.is_scalar()) {
        error(value.mark, option_path, describe(value) + " is not a plugin option value; expected a bool, number or string");
        continue;
      }
      ref.options[option] = value.text;
    }
    out = std::move(ref);
  }

  void error(const SourceMark& mark, const std::string& path, const std::string& what) {
    errors_.add(mark, path, what);
    failed_.insert(path);
  }
  // True if a problem was reported at `path`.
  bool failed(const std::string& path) const { return failed_.count(path) > 0; }

  // Where a missing key of `parent` is reported: the key that opened the section (`train:`).
  SourceMark missing_at(const SpecTree* parent, const std::string& path) const {
    const auto dot = path.rfind('.');
    if (dot != std::string::npos)
      if (auto it = marks_.keys.find(path.substr(0, dot)); it != marks_.keys.end()) return it->second;
    return parent ? parent->mark : marks_.fallback;
  }

  SpecMarks& marks() { return marks_; }

 private:
  static std::string article(const std::string& expected) {
    // "an integer > 0" -> "an integer"; "a number in [0, 1)" -> "a number"; "true or false" -> "a bool"
    if (expected.starts_with("an integer")) return "an integer";
    if (expected.starts_with("a number")) return "a number";
    if (expected.starts_with("a string")) return "a string";
    if (expected.starts_with("true")) return "a bool";
    return "a single value";
  }

  SpecErrors& errors_;
  SpecMarks& marks_;
  std::set<std::string> failed_;
};

// ---- resolved YAML ----

// A float as the shortest text that reads back exactly, always with a '.' or exponent ("0.0").
std::string text_of(double v) {
  std::string t = number_text(v);
  if (t.find_first_of(".e") == std::string::npos) t += ".0";
  return t;
}

YAML::Node flow_node(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

YAML::Node plugin_node(const PluginRef& p) {
  YAML::Node n(YAML::NodeType::Map);
  n["plugin"] = p.name;
  for (const auto& [k, v] : p.options) n[k] = v;
  return flow_node(n);
}

YAML::Node optional_node(const std::optional<double>& v) {
  return v ? YAML::Node(text_of(*v)) : YAML::Node(YAML::NodeType::Null);
}

using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

YAML::Node axes_node(const Axes& axes) {
  YAML::Node n(YAML::NodeType::Map);
  for (const auto& [axis, values] : axes) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& v : values) list.push_back(YAML::Load(v));
    n[axis] = flow_node(list);
  }
  return axes.empty() ? flow_node(n) : n;
}

// ---- the schema: every key described once ----

const Choices<Arch> kArch = {{"encoder", Arch::Encoder}, {"decoder", Arch::Decoder}, {"encoder_decoder", Arch::EncoderDecoder}};
const Choices<Pooling> kPooling = {{"mean", Pooling::Mean}, {"first", Pooling::First}};
const Choices<ProbeKind> kProbeKind = {{"eval", ProbeKind::eval}, {"repeated", ProbeKind::repeated}};
const Choices<Precision> kPrecision = {{"f32", Precision::f32}, {"bf16", Precision::bf16}};
const Choices<OptimizerName> kOptimizer = {{"adam", OptimizerName::adam}, {"adamw", OptimizerName::adamw}};
const Choices<MetricMode> kMode = {{"max", MetricMode::max}, {"min", MetricMode::min}};
const Choices<Metric> kMetric = {{"loss", Metric::loss},
                                 {"perplexity", Metric::perplexity},
                                 {"token_accuracy", Metric::token_accuracy},
                                 {"exact_match", Metric::exact_match}};

struct SpecKey;
// Reads the key's value from `parent` (its section's map; nullptr when the section is absent).
using ReadValue = std::function<void(Reader&, const SpecTree* parent, const SpecKey&, ExperimentSpec&)>;
// The key's value in the resolved YAML.
using WriteValue = std::function<YAML::Node(const ExperimentSpec&)>;

enum class KeyKind {
  value,             // read and written by its binding
  section,           // a map of keys
  optional_section,  // a map of keys that may be absent as a whole (train.early_stopping)
  directive,         // read by the loader, not part of the spec (extends)
};

// One key: path, type, allowed range, default and meaning (for docs/spec-reference.md and
// `ablate keys`), and its binding to ExperimentSpec. The default is YAML text read by the same
// binding, so a default passes the checks a written value passes.
struct SpecKey {
  std::string path;
  KeyKind kind = KeyKind::value;
  std::string type;  // as documented: "int > 0", "`adam` \| `adamw`", "plugin", "map"
  bool is_required = false;
  std::string default_yaml;   // read when the key is absent; empty: none
  std::string default_key;    // when absent, the value of this key instead ("model.layers")
  std::string shown_default;  // the documented default when it is not default_yaml ("absent")
  std::string meaning;
  ReadValue read;
  WriteValue write;
  std::function<void(ExperimentSpec&)> engage;         // optional_section: make it present
  std::function<bool(const ExperimentSpec&)> present;  // optional_section: is it present?

  std::string leaf() const { return path.substr(path.rfind('.') + 1); }
  SpecKey&& required() && {
    is_required = true;
    return std::move(*this);
  }
  SpecKey&& def(std::string yaml) && {
    default_yaml = std::move(yaml);
    return std::move(*this);
  }
  SpecKey&& def_from(std::string key) && {
    default_key = std::move(key);
    return std::move(*this);
  }
  SpecKey&& shown(std::string text) && {
    shown_default = std::move(text);
    return std::move(*this);
  }
  SpecKey&& typed(std::string text) && {
    type = std::move(text);
    return std::move(*this);
  }
  SpecKey&& doc(std::string text) && {
    meaning = std::move(text);
    return std::move(*this);
  }
};

SpecKey new_key(std::string path, std::string type, KeyKind kind = KeyKind::value) {
  SpecKey k;
  k.path = std::move(path);
  k.type = std::move(type);
  k.kind = kind;
  return k;
}

// The key table, one key per statement as it reads best: clang-format leaves it as written.
// clang-format off
// KEY(model.d_model): the path and the member it binds, spelled once.
#define FIELD(member) [](ExperimentSpec& s) -> auto& { return s.member; }
#define KEY(member) #member, FIELD(member)

// Bindings read through a mutable accessor; writing only reads through it.
template <class F>
auto& value_of(F field, const ExperimentSpec& s) {
  return field(const_cast<ExperimentSpec&>(s));
}

template <class F>
SpecKey integer(std::string path, F field, std::int64_t min) {
  SpecKey k = new_key(std::move(path), min == 1 ? "int > 0" : "int >= " + std::to_string(min));
  k.read = [field, min](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_int(parent, key.leaf(), key.path, field(s), min, key.is_required);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(std::to_string(value_of(field, s))); };
  return k;
}

template <class F>
SpecKey number(std::string path, F field, Range range) {
  SpecKey k = new_key(std::move(path), range_text("float", range));
  k.read = [field, range](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_float(parent, key.leaf(), key.path, field(s), range);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(text_of(value_of(field, s))); };
  return k;
}

template <class F>
SpecKey optional_number(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "float or absent");
  k.shown_default = "absent";
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_optional_float(parent, key.leaf(), key.path, field(s));
  };
  k.write = [field](const ExperimentSpec& s) { return optional_node(value_of(field, s)); };
  return k;
}

template <class F>
SpecKey boolean(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "bool");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_bool(parent, key.leaf(), key.path, field(s));
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(value_of(field, s)); };
  return k;
}

template <class F>
SpecKey string_key(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "string");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_string(parent, key.leaf(), key.path, field(s), key.is_required);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(value_of(field, s)); };
  return k;
}

template <class E, class F>
SpecKey choice(std::string path, F field, const Choices<E>& choices) {
  std::vector<std::string> names;
  for (const auto& [n, v] : choices) names.push_back(std::string("`") + n + "`");
  SpecKey k = new_key(std::move(path), join(names, " \\| "));
  k.read = [field, &choices](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_enum(parent, key.leaf(), key.path, field(s), choices);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(to_string(value_of(field, s))); };
  return k;
}

template <class F>
SpecKey plugin(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "plugin");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_plugin(parent, key.leaf(), key.path, field(s), key.is_required);
  };
  k.write = [field](const ExperimentSpec& s) { return plugin_node(value_of(field, s)); };
  return k;
}

SpecKey section(std::string path) { return new_key(std::move(path), "map", KeyKind::section); }

// A key whose reading and writing are its own (lists, pairs, the sweep).
SpecKey custom(std::string path, std::string type, ReadValue read, WriteValue write) {
  SpecKey k = new_key(std::move(path), std::move(type));
  k.read = std::move(read);
  k.write = std::move(write);
  return k;
}

void read_name(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_plugin_paths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_betas(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_metrics(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_grid(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_zip(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_lengths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_runs(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
YAML::Node write_plugin_paths(const ExperimentSpec& s);
YAML::Node write_betas(const ExperimentSpec& s);
YAML::Node write_metrics(const ExperimentSpec& s);
YAML::Node write_seeds(const ExperimentSpec& s);
YAML::Node write_lengths(const ExperimentSpec& s);
YAML::Node write_runs(const ExperimentSpec& s);

// Every key of a spec, in the order of the resolved YAML. Defaults follow "Attention Is All You
// Need" (the base model).
const std::vector<SpecKey>& schema() {
  static const std::vector<SpecKey> keys = [] {
    std::vector<SpecKey> k;
    k.push_back(new_key("extends", "path", KeyKind::directive).doc("base spec, relative to this file (see above)"));
    k.push_back(custom("name", "string of `[A-Za-z0-9_.-]`", read_name,
                       [](const ExperimentSpec& s) { return YAML::Node(s.name); })
                    .required().doc("names the experiment and its results folder"));
    k.push_back(string_key(KEY(description)).def("\"\"").doc("free text"));
    k.push_back(custom("plugin_paths", "list of paths", read_plugin_paths, write_plugin_paths)
                    .def("[]").doc("extra plugin directories, relative to this file"));
    k.push_back(plugin(KEY(task)).required().doc("the task plugin and its options, e.g. `{plugin: copy, vocab_size: 32}`"));
    k.push_back(section("model").doc("the network: sizes, dropouts, components"));
    k.push_back(choice(KEY(model.arch), kArch).def("encoder_decoder").doc(
        "which stacks: `encoder_decoder` for seq2seq tasks, `decoder` for a language model, `encoder` tags each "
        "source position (length-preserving tasks) or classifies (required by a classification task such as "
        "`classification`); a mismatch with the task is an error at run time (docs/training.md)"));
    k.push_back(integer(KEY(model.d_model), 1).def("512").doc("model width D"));
    k.push_back(integer(KEY(model.heads), 1).def("8").typed("int > 0, divides `d_model`").doc("attention heads H (Dh = D / H)"));
    k.push_back(integer(KEY(model.layers), 1).def("6").doc("layers per stack"));
    k.push_back(integer(KEY(model.encoder_layers), 1).def_from("model.layers").doc("encoder layers"));
    k.push_back(integer(KEY(model.decoder_layers), 1).def_from("model.layers").doc("decoder layers"));
    k.push_back(integer(KEY(model.d_ff), 1).def("2048").doc("feed-forward width F"));
    k.push_back(number(KEY(model.dropout), kUnit).def("0.1").doc("on residual branches"));
    k.push_back(number(KEY(model.attention_dropout), kUnit).def("0.0").doc("on attention probabilities"));
    k.push_back(number(KEY(model.embedding_dropout), kUnit).def_from("model.dropout").doc("on embeddings + positions"));
    k.push_back(plugin(KEY(model.block)).def("post_norm").doc("residual/norm arrangement (`post_norm`, `pre_norm`, `sandwich_norm`, `parallel`, `rezero`; option `norm`: `layer_norm`, `rms_norm`, `scale_norm`)"));
    k.push_back(plugin(KEY(model.attention)).def("mha").doc(
        "the attention sublayer, self and cross (`mha`: multi-head attention); docs/architecture.md"));
    k.push_back(plugin(KEY(model.positional_encoding)).def("sinusoidal").doc(
        "where positions enter: added to the embeddings (`sinusoidal`, `learned`), nowhere (`none`, NoPE) or inside attention (q/k rotated: `rotary`; logits biased: `alibi`, `t5_relative_bias`)"));
    k.push_back(plugin(KEY(model.ffn)).def("relu").doc("feed-forward (`relu`, `gelu`, `relu_squared`, `swiglu`, `geglu`; the gated ones default to hidden floor(2 d_ff / 3), the weights of a d_ff FFN)"));
    k.push_back(boolean(KEY(model.qkv_bias)).def("true").doc("biases in the q/k/v projections"));
    k.push_back(boolean(KEY(model.out_bias)).def("true").doc("bias in the attention output projection"));
    k.push_back(boolean(KEY(model.scale_embedding)).def("true").doc("multiply embeddings by sqrt(d_model)"));
    k.push_back(boolean(KEY(model.embedding_norm)).def("false").doc(
        "LayerNorm over embeddings + positions, before the embedding dropout (BERT)"));
    k.push_back(number(KEY(model.embedding_norm_eps), kPositive).def("1e-12").doc("epsilon of that norm (BERT's value)"));
    k.push_back(boolean(KEY(model.causal)).def("true").doc(
        "causal mask on decoder self-attention; `false` lets each position see the future (a demonstration of "
        "leakage: teacher-forced loss falls, generation does not improve)"));
    k.push_back(boolean(KEY(model.final_norm)).def("true").doc("a norm after the stack (used by pre-norm blocks)"));
    k.push_back(boolean(KEY(model.tie_embeddings)).def("true").doc("decoder embedding shared with the output projection"));
    k.push_back(number(KEY(model.norm_eps), kPositive).def("1e-5").doc("epsilon of the norms"));
    k.push_back(choice(KEY(model.pooling), kPooling).def("mean").doc(
        "what the encoder-only classifier reads (classification tasks): the mean of the states of the "
        "non-padding positions, or the first position's state"));
    k.push_back(plugin(KEY(backend)).def("onednn").doc(
        "compute backend: `reference`, `onednn` (CPU), `cudnn` (NVIDIA GPU, docs/gpu-backend.md)"));
    k.push_back(choice(KEY(precision), kPrecision).def("f32").doc(
        "compute precision; `bf16` needs a backend with bf16 (what ran is recorded in run.h5)"));
    k.push_back(section("train").doc("optimisation: steps, batch, optimizer, schedule, stopping"));
    k.push_back(integer(KEY(train.steps), 1).required().doc("optimizer steps"));
    k.push_back(integer(KEY(train.batch_size), 1).def("64").doc("examples per step"));
    k.push_back(section("train.optimizer").doc("Adam's settings"));
    k.push_back(choice(KEY(train.optimizer.name), kOptimizer).def("adam").doc("`adamw`: decoupled weight decay"));
    k.push_back(number(KEY(train.optimizer.lr), kPositive).def("1e-3").doc("base learning rate"));
    k.push_back(custom("train.optimizer.betas", "`[float, float]`, each in [0, 1)", read_betas, write_betas)
                    .def("[0.9, 0.98]").doc("Adam's moment decay rates"));
    k.push_back(number(KEY(train.optimizer.eps), kPositive).def("1e-9").doc("added to Adam's denominator"));
    k.push_back(number(KEY(train.optimizer.weight_decay), kNonNegative).def("0.0").doc("(decoupled for `adamw`)"));
    k.push_back(plugin(KEY(train.schedule)).def("constant").doc(
        "learning-rate schedule (`constant`, `noam`, `cosine`); its options `lr`, `d_model`, `total_steps`, when "
        "not set, take `train.optimizer.lr`, `model.d_model`, `train.steps`"));
    k.push_back(number(KEY(train.clip_grad_norm), kNonNegative).def("0.0").doc("global grad-norm clip; 0 = off"));
    k.push_back(number(KEY(train.label_smoothing), kUnit).def("0.0").doc("of the cross-entropy targets"));
    k.push_back(integer(KEY(train.seed), 0).def("1").doc("initial weights, data order and dropout masks"));
    k.push_back(boolean(KEY(train.deterministic)).def("true").doc("bit-reproducible kernels and dropout masks"));
    {
      SpecKey es = section("train.early_stopping").shown("absent").doc(
          "stop when a metric reaches `target`, or after `patience` evaluations without improving");
      es.kind = KeyKind::optional_section;
      es.type = "map or absent";
      es.engage = [](ExperimentSpec& s) { s.train.early_stopping.emplace(); };
      es.present = [](const ExperimentSpec& s) { return s.train.early_stopping.has_value(); };
      k.push_back(std::move(es));
    }
    k.push_back(string_key("train.early_stopping.metric", FIELD(train.early_stopping->metric)).required().doc("one of the evaluated `eval.metrics` or task scores"));
    k.push_back(choice("train.early_stopping.mode", FIELD(train.early_stopping->mode), kMode).def("max").doc("whether larger or smaller is better"));
    k.push_back(optional_number("train.early_stopping.target", FIELD(train.early_stopping->target)).doc("stop once the metric reaches it"));
    k.push_back(integer("train.early_stopping.patience", FIELD(train.early_stopping->patience), 0).def("0").doc(
        "stop after this many evaluations without improving; 0 = off"));
    k.push_back(optional_number(KEY(train.loss_threshold)).doc(
        "stop when the train loss (mean over a `log.every` interval) is below it"));
    k.push_back(section("log").doc("what `run.h5` records during training"));
    k.push_back(integer(KEY(log.every), 1).def("50").doc(
        "steps between train-metric rows and per-layer statistics (residual norm, grad norm, attention entropy) in "
        "`run.h5`; the run file is flushed at each"));
    k.push_back(boolean(KEY(log.stats)).def("true").doc(
        "record the per-layer statistics at each `log.every` row; each costs a forward pass of the probe batch with "
        "its attention probabilities read back (seconds at long sequences on a GPU); false = off"));
    k.push_back(section("log.attention").doc("attention tensors of a fixed probe batch"));
    k.push_back(integer(KEY(log.attention.every), 0).def("0").doc(
        "steps between attention-tensor records of the probe batch (every layer, head and kind, and the "
        "greedy-decoding cross-attention); 0 = off"));
    k.push_back(integer(KEY(log.attention.probe_examples), 1).def("4").doc("examples in the attention probe batch"));
    k.push_back(choice(KEY(log.attention.probe), kProbeKind).def("eval").doc(
        "the probe batch: `eval`, the first eval examples; `repeated`, random content tokens whose first half is "
        "repeated as the second half (the same in every run), where induction heads show (docs/analysis.md)"));
    k.push_back(section("eval").doc("evaluation on the task's eval split"));
    k.push_back(integer(KEY(eval.every), 1).def("500").doc("steps between evaluations"));
    k.push_back(custom("eval.metrics", "list of `loss`, `perplexity`, `token_accuracy`, `exact_match`", read_metrics,
                       write_metrics)
                    .def("[loss, perplexity, token_accuracy, exact_match]").doc(
                        "each at most once; `exact_match` (greedy decoding) is skipped for a language model, with a "
                        "note; it also records `decoded_token_accuracy`"));
    k.push_back(integer(KEY(eval.batches), 1).def("8").doc("batches per evaluation"));
    k.push_back(custom("eval.lengths", "list of distinct int > 0", read_lengths, write_lengths)
                    .def("[]").doc(
                        "also evaluate the metrics on eval examples of exactly these lengths (content tokens: a seq2seq "
                        "task's source, a language model's text), recorded as `METRIC_at_LENGTH` columns (`loss_at_128`): "
                        "length extrapolation. The task must make such examples (the synthetic tasks do); a length past "
                        "what the positional encoding represents (`learned`'s `max_len`) is recorded as NaN, with a note"));
    k.push_back(section("eval.generate").doc("continuations a language model with text records at each evaluation"));
    k.push_back(integer(KEY(eval.generate.prompt_tokens), 0).def("16").doc(
        "a language model with text records continuations of 5 eval examples at each evaluation (`/samples`); the "
        "prompt is the example's first `prompt_tokens` tokens (fewer than the task's example length: checked at "
        "run time)"));
    k.push_back(integer(KEY(eval.generate.max_tokens), 0).def("48").doc(
        "new tokens per continuation (`eos` ends one sooner); 0 = none recorded"));
    k.push_back(number(KEY(eval.generate.temperature), kNonNegative).def("0.8").doc(
        "0 = greedy (argmax); else a draw from `softmax(logits / temperature)`, keyed by `train.seed` and the step "
        "(docs/training.md, \"Continuation\")"));
    k.push_back(integer(KEY(eval.generate.top_k), 0).def("0").doc("> 0: draw among the `k` most likely tokens only; 0 = all"));
    k.push_back(section("sweep").doc("variants × seeds, run by `ablate sweep` (docs/sweeps.md)"));
    k.push_back(custom("sweep.grid", "`{KEY.PATH: [values]}`", read_grid,
                       [](const ExperimentSpec& s) { return axes_node(s.sweep.grid); })
                    .def("{}").doc("every combination of the listed values (first key slowest)"));
    k.push_back(custom("sweep.zip", "`{KEY.PATH: [values]}`, equal lengths", read_zip,
                       [](const ExperimentSpec& s) { return axes_node(s.sweep.zip); })
                    .def("{}").doc("values taken in lockstep (one more grid axis, the fastest)"));
    k.push_back(custom("sweep.seeds", "list of int >= 0", read_seeds, write_seeds)
                    .def("[]").doc("each point once per seed (sets `train.seed`; fastest)"));
    k.push_back(custom("sweep.runs", "list of `{KEY.PATH: value}`", read_runs, write_runs)
                    .def("[]").doc("extra explicit runs after the grid, once per seed unless they set `train.seed`"));
    return k;
  }();
  return keys;
}
#undef KEY
#undef FIELD
// clang-format on

bool is_child(const std::string& p, const std::string& parent) {
  if (parent.empty()) return p.find('.') == std::string::npos;
  return p.size() > parent.size() + 1 && p.starts_with(parent) && p[parent.size()] == '.' &&
         p.find('.', parent.size() + 1) == std::string::npos;
}

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
        break;
    }
  }
}

// The keys below `path` as a YAML map, in schema order.
YAML::Node write_section(const ExperimentSpec& s, const std::string& path) {
  YAML::Node map(YAML::NodeType::Map);
  for (const SpecKey& key : schema()) {
    if (!is_child(key.path, path)) continue;
    switch (key.kind) {
      case KeyKind::directive: break;
      case KeyKind::section: map[key.leaf()] = write_section(s, key.path); break;
      case KeyKind::optional_section:
        map[key.leaf()] = key.present(s) ? write_section(s, key.path) : YAML::Node(YAML::NodeType::Null);
        break;
      case KeyKind::value: map[key.leaf()] = key.write(s); break;
    }
  }
  return map;
}

// ---- the keys that read and write themselves ----

bool valid_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

void read_name(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  r.read_string(parent, key.leaf(), key.path, s.name, true);
  if (const SpecTree* n = parent ? parent->find(key.leaf()) : nullptr; n && n->is_scalar() && !valid_name(s.name))
    r.error(
        n->mark, key.path,
        "'" + s.name +
            "' is not a valid name; expected letters, digits, '_', '.' or '-', and not '.' or '..' (it names the results folder)");
}

void read_plugin_paths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* p = parent ? parent->find(key.leaf()) : nullptr;
  if (!p || p->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = p->mark;
  if (p->kind != SpecTree::Kind::Sequence)
    return r.error(p->mark, key.path, describe(*p) + " is not a list; expected a list of directories");
  s.plugin_paths.clear();
  for (std::size_t i = 0; i < p->items.size(); ++i) {
    const SpecTree& item = p->items[i];
    const std::string where = key.path + "[" + std::to_string(i) + "]";
    if (!item.is_scalar() || item.text.empty()) {
      r.error(item.mark, where, describe(item) + " is not a path; expected a directory");
    } else if (std::error_code ec; !std::filesystem::exists(item.text, ec)) {
      r.error(
          item.mark, where,
          "'" + item.text +
              "' does not exist; expected a directory of plugins or a plugin file (relative paths are relative to the spec file)");
    } else {
      s.plugin_paths.push_back(item.text);
    }
  }
}

YAML::Node write_plugin_paths(const ExperimentSpec& s) {
  YAML::Node paths(YAML::NodeType::Sequence);
  for (const auto& p : s.plugin_paths) paths.push_back(p);
  return flow_node(paths);
}

void read_betas(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* b = parent ? parent->find(key.leaf()) : nullptr;
  if (!b) return;
  r.marks().at[key.path] = b->mark;
  if (b->kind != SpecTree::Kind::Sequence || b->items.size() != 2)
    return r.error(b->mark, key.path, describe(*b) + " is not a pair; expected [beta1, beta2], each in [0, 1)");
  for (std::size_t i = 0; i < 2; ++i)
    if (auto v = r.float_value(b->items[i], key.path + "[" + std::to_string(i) + "]", kUnit)) s.train.optimizer.betas[i] = *v;
}

YAML::Node write_betas(const ExperimentSpec& s) {
  YAML::Node betas(YAML::NodeType::Sequence);
  for (double b : s.train.optimizer.betas) betas.push_back(text_of(b));
  return flow_node(betas);
}

void read_metrics(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* m = parent ? parent->find(key.leaf()) : nullptr;
  if (!m) return;
  r.marks().at[key.path] = m->mark;
  std::vector<std::string> names;
  for (const auto& [n, v] : kMetric) names.emplace_back(n);
  if (m->kind != SpecTree::Kind::Sequence)
    return r.error(m->mark, key.path, describe(*m) + " is not a list; expected a list of " + join(names, ", "));
  std::vector<Metric>& metrics = s.eval.metrics;
  metrics.clear();
  for (std::size_t i = 0; i < m->items.size(); ++i) {
    const std::string path = key.path + "[" + std::to_string(i) + "]";
    if (auto v = r.enum_value(m->items[i], path, kMetric)) {
      if (std::find(metrics.begin(), metrics.end(), *v) != metrics.end())
        r.error(m->items[i].mark, path, "'" + m->items[i].text + "' is listed twice; expected each metric once");
      else
        metrics.push_back(*v);
    }
  }
  if (m->items.empty()) r.error(m->mark, key.path, "[] is empty; expected at least one of " + join(names, ", "));
}

YAML::Node write_metrics(const ExperimentSpec& s) {
  YAML::Node metrics(YAML::NodeType::Sequence);
  for (Metric x : s.eval.metrics) metrics.push_back(to_string(x));
  return flow_node(metrics);
}

// A sweep axis key must name a spec value that a run can vary.
void check_axis_path(Reader& r, const SourceMark& mark, const std::string& where, const std::string& key) {
  const bool fixed = key == "name" || key == "sweep" || key.starts_with("sweep.");
  if (is_spec_path(key) && !fixed) return;
  if (fixed)
    return r.error(mark, where, "'" + key + "' cannot vary between the runs of one experiment; expected another key path");
  std::string what = "'" + key + "' is not a spec key path; expected a path such as model.block or train.optimizer.lr";
  if (auto near = closest_match(key, spec_paths())) what += " (did you mean '" + *near + "'?)";
  r.error(mark, where, what);
}

void read_axes(Reader& r, const SpecTree* parent, const SpecKey& key, Axes& out) {
  const SpecTree* axes = parent ? parent->find(key.leaf()) : nullptr;
  if (!axes || axes->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = axes->mark;
  if (!axes->is_map()) return r.error(axes->mark, key.path, describe(*axes) + " is not a map; expected {KEY.PATH: [values]}");
  for (std::size_t i = 0; i < axes->entries.size(); ++i) {
    const auto& [axis, values] = axes->entries[i];
    const std::string where = key.path + "." + axis;
    check_axis_path(r, axes->key_marks[i], where, axis);
    if (values.kind != SpecTree::Kind::Sequence || values.items.empty()) {
      r.error(values.mark, where, describe(values) + " is not a list of values; expected a non-empty list, e.g. [a, b]");
      continue;
    }
    std::vector<std::string> texts;
    for (const auto& v : values.items) texts.push_back(v.flow());
    out.emplace_back(axis, std::move(texts));
  }
}

void read_grid(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_axes(r, parent, key, s.sweep.grid);
}

// After the grid (schema order): a zipped key must not also be a grid axis.
void read_zip(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_axes(r, parent, key, s.sweep.zip);
  const SweepSpec& sweep = s.sweep;
  if (sweep.zip.empty()) return;
  bool equal = true;
  std::vector<std::string> lengths;
  for (const auto& [axis, values] : sweep.zip) {
    equal = equal && values.size() == sweep.zip.front().second.size();
    lengths.push_back(axis + ": " + std::to_string(values.size()));
  }
  if (!equal)
    r.error(r.marks().of(key.path), key.path,
            "the lists have different lengths (" + join(lengths, ", ") + "); expected lists of equal length, zipped in lockstep");
  for (const auto& [axis, values] : sweep.zip)
    for (const auto& [g, gv] : sweep.grid)
      if (g == axis)
        r.error(r.marks().of(key.path), key.path + "." + axis, "also in sweep.grid; expected each key in one of grid or zip");
}

// A list of integers >= `min` at key.path into `out`, each item checked (`item` names one in errors).
void read_int_list(Reader& r, const SpecTree* parent, const SpecKey& key, std::vector<std::int64_t>& out, std::int64_t min,
                   const std::string& item) {
  const SpecTree* list = parent ? parent->find(key.leaf()) : nullptr;
  if (!list || list->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = list->mark;
  const std::string expected = "integers >= " + std::to_string(min);
  if (list->kind != SpecTree::Kind::Sequence)
    return r.error(list->mark, key.path, describe(*list) + " is not a list; expected a list of " + expected);
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const SpecTree& v = list->items[i];
    const auto value = v.is_scalar() ? parse_int(v.text) : std::nullopt;
    if (!value || *value < min)
      r.error(v.mark, key.path + "[" + std::to_string(i) + "]",
              describe(v) + " is not a " + item + "; expected an integer >= " + std::to_string(min));
    else
      out.push_back(*value);
  }
}

YAML::Node int_list_node(const std::vector<std::int64_t>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (auto v : values) list.push_back(std::to_string(v));
  return flow_node(list);
}

void read_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_int_list(r, parent, key, s.sweep.seeds, 0, "seed");
}
YAML::Node write_seeds(const ExperimentSpec& s) { return int_list_node(s.sweep.seeds); }

void read_lengths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_int_list(r, parent, key, s.eval.lengths, 1, "length");
  std::vector<std::int64_t> sorted = s.eval.lengths;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    r.error(r.marks().of(key.path), key.path, "lists a length twice; expected distinct lengths");
}
YAML::Node write_lengths(const ExperimentSpec& s) { return int_list_node(s.eval.lengths); }

void read_runs(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* runs = parent ? parent->find(key.leaf()) : nullptr;
  if (!runs || runs->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = runs->mark;
  if (runs->kind != SpecTree::Kind::Sequence)
    return r.error(runs->mark, key.path, describe(*runs) + " is not a list; expected a list of {KEY.PATH: value}");
  for (std::size_t i = 0; i < runs->items.size(); ++i) {
    const SpecTree& run = runs->items[i];
    const std::string where = key.path + "[" + std::to_string(i) + "]";
    if (!run.is_map() || run.entries.empty()) {
      r.error(run.mark, where, describe(run) + " is not a run; expected a map {KEY.PATH: value, ...}");
      continue;
    }
    std::vector<std::pair<std::string, std::string>> settings;
    for (std::size_t j = 0; j < run.entries.size(); ++j) {
      check_axis_path(r, run.key_marks[j], where + "." + run.entries[j].first, run.entries[j].first);
      settings.emplace_back(run.entries[j].first, run.entries[j].second.flow());
    }
    s.sweep.runs.push_back(std::move(settings));
  }
}

YAML::Node write_runs(const ExperimentSpec& s) {
  YAML::Node runs(YAML::NodeType::Sequence);
  for (const auto& run : s.sweep.runs) {
    YAML::Node r(YAML::NodeType::Map);
    for (const auto& [k, v] : run) r[k] = YAML::Load(v);
    runs.push_back(flow_node(r));
  }
  return runs.size() ? runs : flow_node(runs);
}

// Sets every key below `path` to its default (an optional section stays absent).
void set_defaults(ExperimentSpec& s, const std::string& path) {
  for (const SpecKey& key : schema()) {
    if (!is_child(key.path, path)) continue;
    if (key.kind == KeyKind::section) set_defaults(s, key.path);
    if (key.kind != KeyKind::value) continue;
    set_default(key, s);
    if (!key.default_key.empty()) copy_default(key, s);
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
      merge_into(tree, top, "", is_plugin_path);
    } catch (const UsageError& e) {
      errors.add(SourceMark{e.what(), 0, 0}, "", "");
    }
  }
  errors.throw_if_any("see docs/spec-reference.md for every key path");
}

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

const std::vector<std::string>& spec_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    for (const SpecKey& k : schema())
      if (k.kind != KeyKind::directive) out.push_back(k.path);
    return out;
  }();
  return paths;
}

SourceMark SpecMarks::of(const std::string& path) const {
  std::string p = path;
  while (!p.empty()) {
    if (auto it = at.find(p); it != at.end()) return it->second;
    const auto dot = p.rfind('.');
    p = dot == std::string::npos ? std::string() : p.substr(0, dot);
  }
  return fallback;
}

bool is_spec_path(const std::string& path) {
  const auto& paths = spec_paths();
  if (std::find(paths.begin(), paths.end(), path) != paths.end()) return true;
  for (const auto& slot : plugin_slots()) {
    if (path.size() > slot.path.size() + 1 && path.starts_with(slot.path) && path[slot.path.size()] == '.' &&
        path.find('.', slot.path.size() + 1) == std::string::npos)
      return true;  // an option of that plugin, checked against the plugin's declarations later
  }
  return false;
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
  errors.throw_if_any("see docs/spec-reference.md for every key, its type and default");
  return spec;
}

ExperimentSpec load_spec(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, is_plugin_path);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec load_sweep_point(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, is_plugin_path, /*with_sweep=*/false);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec parse_spec(const std::string& yaml, const std::string& origin, const std::vector<std::string>& overrides) {
  SpecTree tree = parse_yaml(yaml, origin);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

std::string resolved_yaml(const ExperimentSpec& s) {
  YAML::Emitter out;
  out << write_section(s, "");
  return std::string(out.c_str()) + "\n";
}

const std::vector<std::string>& execution_keys() {
  static const std::vector<std::string> keys = {"backend.threads"};
  return keys;
}

std::string identity_yaml(ExperimentSpec spec) {
  spec.sweep = {};  // a run is one point: its identity excludes the sweep around it
  for (const std::string& key : execution_keys())
    if (key.starts_with("backend.")) spec.backend.options.erase(key.substr(std::string("backend.").size()));
  return resolved_yaml(spec);
}

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
  auto table = [&](const std::string& section) {
    md << "| key | type | default | meaning |\n|---|---|---|---|\n";
    for (const KeyDoc& d : docs) {
      const bool top = section.empty() && d.path.find('.') == std::string::npos;
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
