// backend/onednn: rotary positions (RoPE, "rotate half" pairing), with base's frequencies or given
// ones, as OpenMP + SIMD C++, forward and backward side by side. The angles come from
// ablate::rope_angle / rope_frequency_angle in double (as in the reference), tabulated once per
// call as f32 cos/sin per (t, i); rows run in parallel (contracts in ablate/backend.hpp).
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

// cos | sin [T, rotary/2] (slot kRope) of angle(t, i), computed in double (as the reference
// computes them) and stored as f32.
template <class Angle>
const float* OnednnBackend::rope_table(std::int64_t T, int rotary, Angle angle) {
  const std::int64_t half = rotary / 2;
  float* cs = scratch_f32(kRope, 2 * T * half);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = angle(t, i);
      cs[t * half + i] = static_cast<float>(std::cos(a));
      cs[T * half + t * half + i] = static_cast<float>(std::sin(a));
    }
  return cs;
}

namespace {

// The table of rope with base's frequencies, or with given ones (their values checked: finite).
struct BaseAngle {
  const std::int32_t* p;
  int rotary;
  float base;
  double operator()(std::int64_t t, std::int64_t i) const { return ablate::rope_angle(p[t], i, rotary, base); }
};
struct FrequencyAngle {
  const std::int32_t* p;
  const float* f;
  double operator()(std::int64_t t, std::int64_t i) const { return ablate::rope_frequency_angle(p[t], f[i]); }
};
void check_frequencies(const char* op, const Tensor& freqs) {
  const float* f = freqs.data<float>();
  for (std::int64_t i = 0; i < freqs.numel(); ++i)
    if (!std::isfinite(f[i])) fail(op, "freqs hold " + std::to_string(f[i]) + "; expected finite frequencies");
}

}  // namespace

// y = R(angle) x on the first `rotary` dims of each row, the rest copied (cs | sn: rope_table).
void OnednnBackend::rope_turn(Tensor& y, const Tensor& x, const float* cs, int rotary) {
  const std::int64_t T = x.shape()[2], Dh = x.shape()[3], rows = x.numel() / Dh, half = rotary / 2;
  const float* sn = cs + T * half;
  set_threads();
  with_floats("rope_forward", std::tie(x, y), [&](const auto* xp, auto* yp) {
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
void OnednnBackend::rope_turn_back(Tensor& dx, const Tensor& dy, const float* cs, int rotary) {
  const std::int64_t T = dy.shape()[2], Dh = dy.shape()[3], rows = dy.numel() / Dh, half = rotary / 2;
  const float* sn = cs + T * half;
  set_threads();
  with_floats("rope_backward", std::tie(dy, dx), [&](const auto* gp, auto* dp) {
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

void OnednnBackend::do_rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  check_positions("rope_forward", positions);
  if (x.numel() == 0) return;
  rope_turn(y, x, rope_table(x.shape()[2], rotary, BaseAngle{positions.data<std::int32_t>(), rotary, base}), rotary);
}

void OnednnBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  check_positions("rope_backward", positions);
  if (dy.numel() == 0) return;
  rope_turn_back(dx, dy, rope_table(dy.shape()[2], rotary, BaseAngle{positions.data<std::int32_t>(), rotary, base}), rotary);
}

void OnednnBackend::do_rope_frequencies_forward(Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& freqs) {
  const char* op = "rope_frequencies_forward";
  check_positions(op, positions);
  check_frequencies(op, freqs);
  if (x.numel() == 0) return;
  const int rotary = static_cast<int>(2 * freqs.numel());
  rope_turn(y, x, rope_table(x.shape()[2], rotary, FrequencyAngle{positions.data<std::int32_t>(), freqs.data<float>()}), rotary);
}

void OnednnBackend::do_rope_frequencies_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, const Tensor& freqs) {
  const char* op = "rope_frequencies_backward";
  check_positions(op, positions);
  check_frequencies(op, freqs);
  if (dy.numel() == 0) return;
  const int rotary = static_cast<int>(2 * freqs.numel());
  rope_turn_back(dx, dy, rope_table(dy.shape()[2], rotary, FrequencyAngle{positions.data<std::int32_t>(), freqs.data<float>()}),
                 rotary);
}

}  // namespace backend_onednn
