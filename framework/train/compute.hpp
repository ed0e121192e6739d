// Compute accounting: a model's parameters by kind and the FLOPs of its training steps, recorded
// in every run (docs/training.md, "Compute"), so that `ablate compare` can say whether the arms of
// an ablation got the same compute and researchers can plot against tokens or FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ablate/parameters.hpp"

namespace ablate::train {

// The kinds a parameter is counted under, from its dotted name (the model's scopes): "embeddings"
// (token tables), "positions" (a positional encoding's own parameters), "attention" (self and cross),
// "ffn", "norms" (the blocks' own parameters: their norms and gates; the embedding and final norms),
// "output" (the output projection or classifier head), "other" (anything else).
std::string parameter_kind(const std::string& name);

// Parameter counts: "total", "non_embedding" (total without embeddings and positions, the count
// Kaplan et al. 2020 relate loss to), then each kind above that the model has, in that order.
struct ParameterCounts {
  std::vector<std::string> kinds;
  std::vector<std::int64_t> counts;                // [kinds.size()]
  std::int64_t of(const std::string& kind) const;  // 0 for a kind not listed
};
ParameterCounts count_parameters(ParameterStore& store);

// A training step's FLOPs from its forward pass's (Graph::flops: the matrix products, 2 per
// multiply-add, attention's q k^T and p v in full): the backward computes two products of each
// forward one's size (the input's and the weight's gradients), so 3x. bench/compare.py's formula.
inline constexpr double kTrainFlopsPerForwardFlop = 3.0;

}  // namespace ablate::train
