// model.match_parameters (docs/training.md, "Compute"): the FFN width that gives a model the
// non-embedding parameter count of a reference model (this spec with a few model keys changed),
// so that an ablation arm which adds or removes weights (grouped k/v heads, another FFN) is
// compared at the same size. Found by building candidate models dry and counting, not by a
// formula, so it holds for every plugin, out-of-tree ones included.
#pragma once

#include <cstdint>
#include <string>

#include "ablate/task.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::train {

// The reference model's spec: `spec` with model.match_parameters' keys set, its plugins checked
// and their defaults filled in, and no match of its own. Throws UsageError ("{KEY: VALUE} does not
// make a valid model: <the spec problem>"; the caller adds where) when the result is not valid.
spec::ExperimentSpec reference_spec(const spec::ExperimentSpec& spec, const PluginRegistry& registry);

// The non-embedding parameters of `spec`'s model with FFN width `d_ff`: built dry (ShapeBackend:
// the plugins' build code runs, nothing is allocated or initialised).
std::int64_t non_embedding_parameters(const spec::ExperimentSpec& spec, std::int64_t d_ff, const PluginRegistry& registry,
                                      const TaskInfo& task);

struct ParameterMatch {
  std::int64_t d_ff = 0;        // the FFN width the model is built with
  std::int64_t parameters = 0;  // its non-embedding parameters
  std::int64_t reference = 0;   // the reference model's, at the spec's d_ff
  // "model.match_parameters {ffn: relu}: FFN width 512 -> 768, non-embedding parameters 1,000
  // (reference 1,004, 0.4% apart)"
  std::string text;
};

// The FFN width in [1, ...) whose count is closest to the reference's (the smaller width on a
// tie), assuming the count grows with the width. Throws UsageError when the width does not change
// the count (an FFN with a fixed hidden size) or even width 1 has more than the reference.
ParameterMatch match_parameters(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const TaskInfo& task);

}  // namespace ablate::train
