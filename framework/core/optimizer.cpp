// Adam / AdamW driver (framework/include/ablate/optimizer.hpp): one host synchronisation for
// the global grad norm, then one fused adam_update over every parameter at once (packed).
#include "ablate/optimizer.hpp"

#include <cmath>

namespace ablate {

double Adam::step(ParameterStore& store, double lr, double clip_norm) {
  const double norm = store.grad_norm();
  if (!std::isfinite(norm)) return norm;  // NaN/Inf gradients: leave every weight as it was (the caller stops)
  AdamParams p;
  p.lr = static_cast<float>(lr);
  p.beta1 = config_.beta1;
  p.beta2 = config_.beta2;
  p.eps = config_.eps;
  p.weight_decay = config_.weight_decay;
  p.decoupled = config_.decoupled;
  p.step = ++steps_;
  p.grad_scale = (clip_norm > 0.0 && norm > clip_norm) ? static_cast<float>(clip_norm / (norm + 1e-6)) : 1.0f;
  const bool low = store.compute_dtype() != DType::F32;
  PackedParameters all = store.packed(/*with_moments=*/true);  // the moments start at zero
  if (all.value.defined()) backend_.adam_update(all.value, all.m, all.v, low ? &all.compute : nullptr, all.grad, p);
  return norm;
}

}  // namespace ablate
