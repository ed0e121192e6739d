// The spec's schema as the spec files share it (internal to framework/spec): the key table
// (spec_schema.cpp), the Reader its bindings read through (spec_reader.cpp), the YAML text they
// write (spec_writer.cpp), and the keys that read and write themselves (spec_custom_keys.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/text.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::spec::detail {

// ---- values as written (spec_reader.cpp) ----

// How a value is named in messages: "'512'", "a list", "a map", "an empty value".
std::string describe(const SpecTree& t);
std::optional<std::int64_t> parse_int(const std::string& s);
std::optional<double> parse_float(const std::string& s);
std::optional<bool> parse_bool(const std::string& s);

// A range for numbers: lo (inclusive or not), hi (exclusive); `ablate keys` prints it as the schema says it.
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
inline constexpr Range kPositive{0.0, false, std::nullopt};
inline constexpr Range kNonNegative{0.0, true, std::nullopt};
inline constexpr Range kUnit{0.0, true, 1.0};  // [0, 1)
inline constexpr Range kAny{};

// "a number in [0, 1)", "float > 0" (spec_schema.cpp).
std::string range_text(const char* what, const Range& r);

template <class E>
using Choices = std::vector<std::pair<const char*, E>>;
extern const Choices<Metric> kMetric;  // eval.metrics (spec_schema.cpp)

// Reads the typed spec from a tree, adding a line to `errors` for every problem and recording
// where each value was written in `marks` (spec_reader.cpp).
class Reader {
 public:
  Reader(SpecErrors& errors, SpecMarks& marks) : errors_(errors), marks_(marks) {}

  // The map at `key` of `parent` (nullptr when absent or empty), after checking its keys.
  const SpecTree* section(const SpecTree& parent, const std::string& key, const std::string& path);
  void check_keys(const SpecTree& map, const std::string& path);

  // The scalar at `key`, or nullptr (absent; or not a scalar, which is reported).
  const SpecTree* scalar(const SpecTree* parent, const std::string& key, const std::string& path, const std::string& expected,
                         bool required = false);
  // Returns false if a value was given and is wrong (reported).
  bool read_int(const SpecTree* parent, const std::string& key, const std::string& path, std::int64_t& out, std::int64_t min,
                bool required = false);
  void read_float(const SpecTree* parent, const std::string& key, const std::string& path, double& out, const Range& r);
  std::optional<double> float_value(const SpecTree& t, const std::string& path, const Range& r);
  // An optional number: absent or null leaves `out` empty.
  void read_optional_float(const SpecTree* parent, const std::string& key, const std::string& path, std::optional<double>& out);
  void read_bool(const SpecTree* parent, const std::string& key, const std::string& path, bool& out);
  void read_string(const SpecTree* parent, const std::string& key, const std::string& path, std::string& out,
                   bool required = false);

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
                   bool required = false);

  void error(const SourceMark& mark, const std::string& path, const std::string& what) {
    errors_.add(mark, path, what);
    failed_.insert(path);
  }
  // True if a problem was reported at `path`.
  bool failed(const std::string& path) const { return failed_.count(path) > 0; }

  // Where a missing key of `parent` is reported: the key that opened the section (`train:`).
  SourceMark missing_at(const SpecTree* parent, const std::string& path) const;

  SpecMarks& marks() { return marks_; }

 private:
  static std::string article(const std::string& expected);

  SpecErrors& errors_;
  SpecMarks& marks_;
  std::set<std::string> failed_;
};

// ---- resolved YAML (spec_writer.cpp) ----

// A float as the shortest text that reads back exactly, always with a '.' or exponent ("0.0").
std::string text_of(double v);
YAML::Node flow_node(YAML::Node n);

// Sweep axes: (key path, values as flow YAML text).
using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

// ---- the schema: every key described once (spec_schema.cpp) ----

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
  std::function<bool(const ExperimentSpec&)> present;  // optional_section, or a value key that omits itself
  bool omit_when_absent = false;  // left out of the resolved YAML when not `present`, so runs made before the
                                  // key existed keep their identity (train.budget, model.match_parameters)

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

// Every key of a spec, in the order of the resolved YAML.
const std::vector<SpecKey>& schema();

// True if `p` is a key directly below `parent` ("" for the top level).
bool is_child(const std::string& p, const std::string& parent);
// The path of a plugin slot (plugin_slots()).
bool is_plugin_slot(const std::string& path);
// A spec key below a plugin key (train.optimizer.lr), written in the plugin's own map beside its
// options, as opposed to a nested plugin (task.tokenizer); and whether the plugin key at `path`
// has such keys.
bool is_key_below_plugin(const std::string& path);
bool has_keys_below(const std::string& path);

// ---- the keys that read and write themselves: lists, pairs, the sweep (spec_custom_keys.cpp) ----

void read_name(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_plugin_paths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_optimizer_groups(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_metrics(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_grid(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_zip(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_lengths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_branch_points(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_runs(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_tune_grid(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_tune_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
void read_match_parameters(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s);
YAML::Node write_plugin_paths(const ExperimentSpec& s);
YAML::Node write_optimizer_groups(const ExperimentSpec& s);
YAML::Node write_metrics(const ExperimentSpec& s);
YAML::Node write_seeds(const ExperimentSpec& s);
YAML::Node write_tune_seeds(const ExperimentSpec& s);
YAML::Node write_lengths(const ExperimentSpec& s);
YAML::Node write_branch_points(const ExperimentSpec& s);
YAML::Node write_runs(const ExperimentSpec& s);
YAML::Node write_match_parameters(const ExperimentSpec& s);

}  // namespace ablate::spec::detail
