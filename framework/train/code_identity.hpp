// What made a run, beyond its spec: Ablate's compute version and every plugin's kind/name,
// version and a hash of its library file. Recorded in run.h5 (`plugin_code`, `code_id`), so that
// a sweep reruns finished runs whose code has changed, `ablate run --resume` never continues a
// run with other code, and `ablate compare` says when an arm pools runs of different code.
#pragma once

#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::train {

// Bump when the same spec and plugins would compute different numbers (model wiring, ops,
// autograd, optimizer, initialisation, data order): results of other versions are then rerun.
inline constexpr int kComputeVersion = 1;

struct CodeIdentity {
  std::vector<std::string> parts;  // "ablate compute 1", then "kind/name version <hash>" per plugin slot
  std::string id;                  // FNV-1a 64 of the parts, 16 hex digits ("" in files written before it)
};

CodeIdentity code_identity(const spec::ExperimentSpec& spec, const PluginRegistry& registry);

// For messages: the parts of `now` that `recorded` lacks, with the recorded part of the same
// plugin beside them: "ffn/swiglu 1.0.1 1a2b.. (was 1.0.0 9f8e..)"; "unknown (...)" for a file
// without code identity.
std::string code_difference(const std::vector<std::string>& recorded, const std::vector<std::string>& now);

}  // namespace ablate::train
