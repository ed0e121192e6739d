// The f32 formulas of the smooth activations (GELU erf and tanh forms, SiLU) and their
// derivatives, written once for the fast backends: host C++ (backend_onednn's SIMD loops) and CUDA
// (backend_cudnn's kernels, ABLATE_HD). Each backend supplies its primitives as a policy `M` with
// static cdf(x) (standard normal CDF), exp(x) and tanh(x). The reference backend keeps its own
// double-precision formulas on purpose: it is the oracle these are tested against.
#pragma once

#include "ablate/host_device.hpp"

namespace ablate::activation_math {

inline constexpr float kSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluC = 0.044715f;  // the tanh form's cubic coefficient
inline constexpr float kInvSqrt2Pi = 0.3989422804014327f;

// GELU, erf form: x Phi(x); derivative Phi(x) + x phi(x).
template <class M>
ABLATE_HD inline float gelu_erf(float x) {
  return x * M::cdf(x);
}
template <class M>
ABLATE_HD inline float gelu_erf_grad(float x) {
  return M::cdf(x) + x * kInvSqrt2Pi * M::exp(-0.5f * x * x);
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + c x^3))).
template <class M>
ABLATE_HD inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + M::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x)));
}
template <class M>
ABLATE_HD inline float gelu_tanh_grad(float x) {
  const float t = M::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluC * x * x);
}

// SiLU: x sigmoid(x); derivative s (1 + x (1 - s)) with s = sigmoid(x).
template <class M>
ABLATE_HD inline float sigmoid(float x) {
  return 1.0f / (1.0f + M::exp(-x));
}
template <class M>
ABLATE_HD inline float silu(float x) {
  return x * sigmoid<M>(x);
}
template <class M>
ABLATE_HD inline float silu_grad(float x) {
  const float s = sigmoid<M>(x);
  return s * (1.0f + x * (1.0f - s));
}

}  // namespace ablate::activation_math
