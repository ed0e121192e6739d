// The per-layer statistics recorded at logging steps, what pre-norm vs post-norm studies plot:
// the residual stream's norm after each layer, each layer's gradient norm, and the entropy of
// each attention head. Computed on the host from a probe pass (ForwardCapture) and the
// parameter store's gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ablate/parameters.hpp"
#include "model/transformer.hpp"

namespace ablate::train {

// The layer a parameter belongs to: "encoder.layers.3" for "encoder.layers.3.ffn.in.weight";
// parameters outside the layers (embeddings, positions, final norms, output) map to "".
std::string layer_of(const std::string& parameter_name);

// The layer names of a store, in parameter creation order ("encoder.layers.0", ...).
std::vector<std::string> layer_names(ParameterStore& store);

// L2 norm of the gradients of each layer in `layers` (sqrt of the sum over its parameters).
std::vector<double> layer_grad_norms(ParameterStore& store, const std::vector<std::string>& layers);

// Mean over valid positions of the L2 norm of each captured layer output x[B, T, D]; `lengths`
// gives the valid positions of each batch item of that stack (source lengths for the encoder,
// target lengths for the decoder). One value per capture.residuals entry, in its order.
std::vector<double> residual_norms(Backend& backend, const model::ForwardCapture& capture,
                                   const std::vector<std::int32_t>& src_lengths, const std::vector<std::int32_t>& tgt_lengths);

// Entropy (nats) of each head's attention distribution, averaged over the valid queries of every
// batch item: probs [B, H, T, S] with query_lengths [B]. Returns H values.
std::vector<double> attention_entropy(const std::vector<float>& probs, const Shape& shape,
                                      const std::vector<std::int32_t>& query_lengths);

}  // namespace ablate::train
