// The optimizer driver: Adam / AdamW over a ParameterStore with global gradient-norm clipping,
// one fused backend update over all parameters (packed). The learning rate comes from a Schedule per step.
#pragma once

#include <cstdint>

#include "ablate/parameters.hpp"

namespace ablate {

// A run fills every field from train.optimizer; the initial values are the spec's defaults
// (docs/spec-reference.md), held equal by a test (tests/framework/train/experiment_test.cpp).
struct AdamConfig {
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float eps = 1e-9f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // AdamW
};

class BOOST_SYMBOL_VISIBLE Adam {
 public:
  Adam(Backend& backend, const AdamConfig& config) : backend_(backend), config_(config) {}

  // Updates every parameter of `store` with learning rate `lr`, after scaling the gradients so
  // their global L2 norm is at most `clip_norm` (0: no clipping). Returns the norm before
  // clipping (what training logs as grad_norm). Does not zero the gradients. A non-finite norm
  // (NaN/Inf somewhere in the gradients) updates nothing and counts no step: the caller stops.
  double step(ParameterStore& store, double lr, double clip_norm);

  std::int64_t steps_taken() const { return steps_; }
  void set_steps_taken(std::int64_t steps) { steps_ = steps; }  // on resume from a checkpoint

 private:
  Backend& backend_;
  AdamConfig config_;
  std::int64_t steps_ = 0;
};

}  // namespace ablate
