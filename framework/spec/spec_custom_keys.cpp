// The spec keys that read and write themselves (the schema's `custom` keys, spec_schema.cpp): the
// checked name, plugin_paths, the optimizer's groups, eval.metrics and eval.lengths, and the sweep's grid,
// zip, seeds and runs: lists and pairs whose items are checked one by one.
#include "spec/spec_schema.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "ablate/optimizer.hpp"
#include "core/text.hpp"

namespace ablate::spec {
using namespace detail;

namespace {

bool valid_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
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

}  // namespace

namespace detail {

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

// train.optimizer.groups: [{name, roles, match, lr_scale, weight_decay}, ...]. Each rule names a
// group (not "default", the group of the rest; no name twice) and selects by roles and/or match.
void read_optimizer_groups(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* list = parent ? parent->find(key.leaf()) : nullptr;
  if (!list || list->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = list->mark;
  auto& out = s.train.optimizer.groups;
  out.clear();
  if (list->kind != SpecTree::Kind::Sequence)
    return r.error(list->mark, key.path,
                   describe(*list) + " is not a list; expected a list of {name, roles, match, lr_scale, weight_decay}");
  static const std::vector<std::string> fields = {"name", "roles", "match", "lr_scale", "weight_decay"};
  static const std::vector<std::string> roles = [] {  // ablate::ParameterRole's names (ablate/optimizer.hpp)
    std::vector<std::string> names;
    for (ParameterRole r : kParameterRoles) names.emplace_back(parameter_role_name(r));
    return names;
  }();
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const SpecTree& g = list->items[i];
    const std::string where = key.path + "[" + std::to_string(i) + "]";
    if (!g.is_map()) {
      r.error(g.mark, where, describe(g) + " is not a group; expected a map {name, roles, match, lr_scale, weight_decay}");
      continue;
    }
    OptimizerGroupSpec group;
    for (std::size_t j = 0; j < g.entries.size(); ++j) {
      const auto& [field, value] = g.entries[j];
      const std::string at = where + "." + field;
      if (std::find(fields.begin(), fields.end(), field) == fields.end()) {
        std::string what = "unknown key; expected one of " + join(fields, ", ");
        if (auto near = closest_match(field, fields)) what += " (did you mean '" + *near + "'?)";
        r.error(g.key_marks[j], at, what);
      } else if (field == "roles") {
        std::vector<const SpecTree*> items;  // a list, or one role
        if (value.kind == SpecTree::Kind::Sequence)
          for (const SpecTree& t : value.items) items.push_back(&t);
        else
          items.push_back(&value);
        for (const SpecTree* t : items) {
          if (t->is_scalar() && std::find(roles.begin(), roles.end(), t->text) != roles.end()) {
            group.roles.push_back(t->text);
            continue;
          }
          std::string what = describe(*t) + " is not a parameter role; expected a list of " + join(roles, ", ");
          if (t->is_scalar())
            if (auto near = closest_match(t->text, roles)) what += " (did you mean '" + *near + "'?)";
          r.error(t->mark, at, what);
        }
      } else if (field == "name" || field == "match") {
        if (!value.is_scalar() || value.text.empty()) {
          r.error(value.mark, at, describe(value) + " is not a " + field + "; expected a non-empty string");
          continue;
        }
        (field == "name" ? group.name : group.match) = value.text;
      } else if (auto v = r.float_value(value, at, kNonNegative)) {
        (field == "lr_scale" ? group.lr_scale : group.weight_decay) = *v;
      }
    }
    if (group.name.empty()) {
      r.error(g.mark, where, "a group without `name`; expected a name for the group (logged with the run)");
    } else if (group.name == "default") {
      r.error(g.mark, where + ".name", "'default' names the group of the parameters no rule takes; expected another name");
    } else if (std::any_of(out.begin(), out.end(), [&](const OptimizerGroupSpec& o) { return o.name == group.name; })) {
      r.error(g.mark, where + ".name", "'" + group.name + "' names two groups; expected distinct names");
    }
    if (group.roles.empty() && group.match.empty())
      r.error(g.mark, where,
              "selects every parameter; expected `roles`, `match` or both (the optimizer's own settings "
              "apply to every parameter without a group)");
    out.push_back(std::move(group));
  }
}

YAML::Node write_optimizer_groups(const ExperimentSpec& s) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const OptimizerGroupSpec& g : s.train.optimizer.groups) {
    YAML::Node n(YAML::NodeType::Map);
    n["name"] = g.name;
    if (!g.roles.empty()) {
      YAML::Node roles(YAML::NodeType::Sequence);
      for (const std::string& role : g.roles) roles.push_back(role);
      n["roles"] = flow_node(roles);
    }
    if (!g.match.empty()) n["match"] = g.match;
    if (g.lr_scale) n["lr_scale"] = text_of(*g.lr_scale);
    if (g.weight_decay) n["weight_decay"] = text_of(*g.weight_decay);
    list.push_back(flow_node(n));
  }
  return flow_node(list);
}

// model.match_parameters: {KEY: VALUE, ...}, each KEY a model key other than d_ff (the knob it
// turns) and itself; the values are checked when the reference spec is read at run time.
void read_match_parameters(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  const SpecTree* m = parent ? parent->find(key.leaf()) : nullptr;
  if (!m || m->kind == SpecTree::Kind::Null) return;
  r.marks().at[key.path] = m->mark;
  const std::string expected = "a map of model keys and the reference model's values, e.g. {ffn: relu}";
  if (!m->is_map() || m->entries.empty()) return r.error(m->mark, key.path, describe(*m) + " is not " + expected);
  auto& out = s.model.match_parameters;
  out.clear();
  for (std::size_t i = 0; i < m->entries.size(); ++i) {
    const auto& [name, value] = m->entries[i];
    const std::string path = "model." + name, where = key.path + "." + name;
    if (name == "d_ff" || name == "match_parameters") {
      r.error(m->key_marks[i], where,
              "'" + name + "' cannot be set for the reference: " +
                  (name == "d_ff" ? "d_ff is the width the match turns (the reference keeps this spec's d_ff)"
                                  : "the reference is a model, not another match") +
                  "; expected another model key");
      continue;
    }
    if (!is_spec_path(path) || !path.starts_with("model.")) {
      std::vector<std::string> model_keys;
      for (const std::string& p : spec_paths())
        if (p.starts_with("model.")) model_keys.push_back(p.substr(6));
      std::string what = "'" + name + "' is not a model key; expected " + expected;
      if (auto near = closest_match(name, model_keys)) what += " (did you mean '" + *near + "'?)";
      r.error(m->key_marks[i], where, what);
      continue;
    }
    out.emplace_back(name, value.flow());
  }
}

YAML::Node write_match_parameters(const ExperimentSpec& s) {
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& [name, value] : s.model.match_parameters) map[name] = YAML::Load(value);
  return flow_node(map);
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

void read_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_int_list(r, parent, key, s.sweep.seeds, 0, "seed");
}
YAML::Node write_seeds(const ExperimentSpec& s) { return int_list_node(s.sweep.seeds); }

// After grid, zip, seeds and runs (schema order): a tuned key is no arm axis and no seed.
void read_tune_grid(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_axes(r, parent, key, s.sweep.tune.grid);
  const SweepSpec& sweep = s.sweep;
  for (const auto& [axis, values] : sweep.tune.grid) {
    const std::string where = key.path + "." + axis;
    const auto in = [&](const auto& axes) {
      return std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return a.first == axis; });
    };
    if (axis == "train.seed")
      r.error(r.marks().of(key.path), where,
              "seeds are not tuned; expected a nuisance setting (list the seeds in sweep.tune.seeds)");
    else if (in(sweep.grid) || in(sweep.zip))
      r.error(r.marks().of(key.path), where, "also an axis of the sweep (grid or zip); expected a key the arms share");
    for (const auto& run : sweep.runs)
      if (std::any_of(run.begin(), run.end(), [&](const auto& kv) { return kv.first == axis; }))
        r.error(r.marks().of(key.path), where, "also set by a run of sweep.runs; expected a key the arms share");
  }
}

// After tune.grid: tuning needs its seeds and the sweep's (confirmation) seeds, disjoint.
void read_tune_seeds(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_int_list(r, parent, key, s.sweep.tune.seeds, 0, "seed");
  const SweepSpec& sweep = s.sweep;
  const SourceMark at = r.marks().of(key.path);
  if (sweep.tune.grid.empty()) {
    if (!sweep.tune.seeds.empty())
      r.error(at, key.path, "tuning seeds without sweep.tune.grid; expected the settings to tune beside them");
    return;
  }
  if (sweep.tune.seeds.empty())
    r.error(at, key.path, "is empty; expected the tuning seeds (e.g. [1, 2]), disjoint from sweep.seeds");
  if (sweep.seeds.empty())
    r.error(r.marks().of("sweep.seeds"), "sweep.seeds",
            "is empty, but sweep.tune needs the confirmation seeds the arms are compared on; expected e.g. [3, 4, 5]");
  for (std::int64_t seed : sweep.tune.seeds)
    if (std::find(sweep.seeds.begin(), sweep.seeds.end(), seed) != sweep.seeds.end())
      r.error(at, key.path,
              "seed " + std::to_string(seed) +
                  " is also in sweep.seeds; expected tuning seeds disjoint from the confirmation seeds (a seed that chose "
                  "a setting would also judge it)");
  for (std::size_t i = 0; i < sweep.runs.size(); ++i)
    for (const auto& [k, v] : sweep.runs[i])
      if (k == "train.seed")
        r.error(r.marks().of("sweep.runs"), "sweep.runs[" + std::to_string(i) + "].train.seed",
                "a run with its own seed cannot be tuned and confirmed; expected runs without train.seed under sweep.tune");
}
YAML::Node write_tune_seeds(const ExperimentSpec& s) { return int_list_node(s.sweep.tune.seeds); }

namespace {
// read_int_list of values >= 1 that must be distinct (`item` names one: "length", "step").
void read_distinct_int_list(Reader& r, const SpecTree* parent, const SpecKey& key, std::vector<std::int64_t>& out,
                            const std::string& item) {
  read_int_list(r, parent, key, out, 1, item);
  std::vector<std::int64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    r.error(r.marks().of(key.path), key.path, "lists a " + item + " twice; expected distinct " + item + "s");
}
}  // namespace

void read_lengths(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_distinct_int_list(r, parent, key, s.eval.lengths, "length");
}
YAML::Node write_lengths(const ExperimentSpec& s) { return int_list_node(s.eval.lengths); }

void read_branch_points(Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
  read_distinct_int_list(r, parent, key, s.train.branch_points, "step");
  std::sort(s.train.branch_points.begin(), s.train.branch_points.end());
}
YAML::Node write_branch_points(const ExperimentSpec& s) { return int_list_node(s.train.branch_points); }

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

}  // namespace detail

}  // namespace ablate::spec
