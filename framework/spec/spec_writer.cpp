// The resolved YAML of a spec: every key, defaults included, written back through the schema's
// bindings (spec_schema.cpp) in schema order, so that it loads back into an equal spec; and a
// run's identity (the same without the sweep and the execution keys).
#include "spec/spec_schema.hpp"

#include <yaml-cpp/yaml.h>

#include "core/text.hpp"

namespace ablate::spec {
using namespace detail;

namespace detail {

std::string text_of(double v) {
  std::string t = number_text(v);
  if (t.find_first_of(".e") == std::string::npos) t += ".0";
  return t;
}

YAML::Node flow_node(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

}  // namespace detail

namespace {

// The keys below `path` as a YAML map, in schema order.
YAML::Node write_section(const ExperimentSpec& s, const std::string& path) {
  YAML::Node map(YAML::NodeType::Map);
  for (const SpecKey& key : schema()) {
    if (!is_child(key.path, path)) continue;
    switch (key.kind) {
      case KeyKind::directive: break;
      case KeyKind::section: map[key.leaf()] = write_section(s, key.path); break;
      case KeyKind::optional_section:
        if (key.present(s))
          map[key.leaf()] = write_section(s, key.path);
        else if (!key.omit_when_absent)
          map[key.leaf()] = YAML::Node(YAML::NodeType::Null);
        break;
      case KeyKind::value:
        if (!key.omit_when_absent || key.present(s)) map[key.leaf()] = key.write(s);
        if (has_keys_below(key.path))  // train.optimizer: lr, weight_decay, groups beside the plugin's options
          for (const auto& entry : write_section(s, key.path)) map[key.leaf()][entry.first] = entry.second;
        break;
    }
  }
  return map;
}

}  // namespace

std::string resolved_yaml(const ExperimentSpec& s) {
  YAML::Emitter out;
  out << write_section(s, "");
  return std::string(out.c_str()) + "\n";
}

const std::vector<std::string>& execution_keys() {
  static const std::vector<std::string> keys = {"backend.threads"};
  return keys;
}

const std::vector<std::string>& kept_files_keys() {
  static const std::vector<std::string> keys = {"train.keep_checkpoints", "train.ema", "train.branch_points", "log.tensorboard"};
  return keys;
}

std::string upgraded_run_yaml(const std::string& yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception&) {
    return yaml;  // not YAML: reading it reports why
  }
  YAML::Node optimizer = root.IsMap() && root["train"].IsMap() ? root["train"]["optimizer"] : YAML::Node();
  if (!optimizer.IsMap() || !optimizer["name"] || optimizer["plugin"]) return yaml;
  YAML::Node upgraded(YAML::NodeType::Map);  // `plugin:` first, then the options, then the rest as they were
  upgraded["plugin"] = optimizer["name"];
  for (const auto& entry : optimizer) {
    const std::string key = entry.first.as<std::string>();
    if (key == "name") continue;
    if (key == "betas" && entry.second.IsSequence() && entry.second.size() == 2) {
      upgraded["beta1"] = entry.second[0];
      upgraded["beta2"] = entry.second[1];
    } else {
      upgraded[key] = entry.second;
    }
  }
  root["train"]["optimizer"] = flow_node(upgraded);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

std::string identity_yaml(ExperimentSpec spec) {
  spec.sweep = {};  // a run is one point: its identity excludes the sweep around it
  // kept_files_keys(): what stays on disk beside the run changes no number it computes
  spec.train.keep_checkpoints = 0;
  spec.train.ema = 0.0;  // an average kept beside the weights the optimizer trains
  spec.train.branch_points = {};
  spec.log.tensorboard = false;  // a copy of the run's rows in TensorBoard's format
  for (const std::string& key : execution_keys())
    if (key.starts_with("backend.")) spec.backend.options.erase(key.substr(std::string("backend.").size()));
  return resolved_yaml(spec);
}

}  // namespace ablate::spec
