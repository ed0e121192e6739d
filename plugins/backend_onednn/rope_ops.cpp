// backend/onednn: rotary positions (RoPE, "rotate half" pairing) as OpenMP + SIMD C++, forward and
// backward side by side. The angles come from ablate::rope_angle in double (as in the reference),
// tabulated once per call as f32 cos/sin per (t, i); rows run in parallel (contract in
// ablate/backend.hpp).
#include <cmath>
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {
namespace {

// The check of the positions' values (>= 0) beyond ablate::contract's, on the host for free.
void check_positions(const char* op, const Tensor& positions) {
  const std::int32_t* p = positions.data<std::int32_t>();
  for (std::int64_t t = 0; t < positions.numel(); ++t)
    if (p[t] < 0) fail(op, "positions hold " + std::to_string(p[t]) + "; expected positions >= 0");
}

}  // namespace

// The angles in double (as the reference computes them), stored as f32.
const float* OnednnBackend::rope_table(const Tensor& positions, std::int64_t T, int rotary, float base) {
  const std::int64_t half = rotary / 2;
  float* cs = scratch_f32(kRope, 2 * T * half);
  const std::int32_t* p = positions.data<std::int32_t>();
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = ablate::rope_angle(p[t], i, rotary, base);
      cs[t * half + i] = static_cast<float>(std::cos(a));
      cs[T * half + t * half + i] = static_cast<float>(std::sin(a));
    }
  return cs;
}

// y = R(angle) x on the first `rotary` dims of each row, the rest copied.
void OnednnBackend::do_rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_forward";
  check_positions(op, positions);
  const std::int64_t T = x.shape()[2], Dh = x.shape()[3], rows = x.numel() / Dh, half = rotary / 2;
  if (rows == 0) return;
  const float* cs = rope_table(positions, T, rotary, base);
  const float* sn = cs + T * half;
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size(x.numel(), threads_)) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto* xr = xp + r * Dh;
      auto* yr = yp + r * Dh;
      const float* c = cs + (r % T) * half;
      const float* s = sn + (r % T) * half;
#pragma omp simd
      for (std::int64_t i = 0; i < half; ++i) {
        const float a = ld(xr, i), b = ld(xr, i + half);
        st(yr, i, a * c[i] - b * s[i]);
        st(yr, i + half, b * c[i] + a * s[i]);
      }
      for (std::int64_t i = rotary; i < Dh; ++i) st(yr, i, ld(xr, i));
    }
  });
}

// dx += R(-angle) dy: the transpose of the forward's rotation.
void OnednnBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_backward";
  check_positions(op, positions);
  const std::int64_t T = dy.shape()[2], Dh = dy.shape()[3], rows = dy.numel() / Dh, half = rotary / 2;
  if (rows == 0) return;
  const float* cs = rope_table(positions, T, rotary, base);
  const float* sn = cs + T * half;
  set_threads();
  with_floats(op, std::tie(dy, dx), [&](const auto* gp, auto* dp) {
#pragma omp parallel for num_threads(team_size(dy.numel(), threads_)) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto* gr = gp + r * Dh;
      auto* dr = dp + r * Dh;
      const float* c = cs + (r % T) * half;
      const float* s = sn + (r % T) * half;
#pragma omp simd
      for (std::int64_t i = 0; i < half; ++i) {
        const float a = ld(gr, i), b = ld(gr, i + half);
        st(dr, i, ld(dr, i) + a * c[i] + b * s[i]);
        st(dr, i + half, ld(dr, i + half) + b * c[i] - a * s[i]);
      }
      for (std::int64_t i = rotary; i < Dh; ++i) st(dr, i, ld(dr, i) + ld(gr, i));
    }
  });
}

}  // namespace backend_onednn
