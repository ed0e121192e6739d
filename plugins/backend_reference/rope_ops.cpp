// backend/reference: rotary positions (RoPE, "rotate half" pairing), with base's frequencies or
// given ones, forward and backward side by side, in double: the oracle of every other backend's
// rope (contracts in ablate/backend.hpp).
#include <cmath>
#include <string>

#include "reference_backend.hpp"

namespace backend_reference {
namespace {

// The positions, and the reference's own check of their values: >= 0.
std::vector<std::int32_t> checked_positions(const char* op, const Tensor& positions) {
  std::vector<std::int32_t> pos = load_i32(positions);
  for (std::int32_t p : pos)
    if (p < 0) fail(op, "positions hold " + std::to_string(p) + "; expected positions >= 0");
  return pos;
}

// The angle of pair i at row t, [T, rotary/2], from the positions and an angle function.
template <class Angle>
std::vector<double> angles(const std::vector<std::int32_t>& pos, int rotary, Angle angle) {
  const std::int64_t half = rotary / 2;
  std::vector<double> a(pos.size() * static_cast<std::size_t>(half));
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::int64_t i = 0; i < half; ++i)
      a[t * static_cast<std::size_t>(half) + static_cast<std::size_t>(i)] = angle(pos[t], i);
  return a;
}

std::vector<double> base_angles(const std::vector<std::int32_t>& pos, int rotary, float base) {
  return angles(pos, rotary, [&](std::int32_t p, std::int64_t i) { return ablate::rope_angle(p, i, rotary, base); });
}

// The frequencies, and the reference's own check of their values: finite.
std::vector<double> frequency_angles(const char* op, const std::vector<std::int32_t>& pos, const Tensor& freqs) {
  const std::vector<double> f = load(freqs);
  for (double v : f)
    if (!std::isfinite(v)) fail(op, "freqs hold " + std::to_string(v) + "; expected finite frequencies");
  return angles(pos, static_cast<int>(2 * f.size()), [&](std::int32_t p, std::int64_t i) {
    return ablate::rope_frequency_angle(p, static_cast<float>(f[static_cast<std::size_t>(i)]));
  });
}

// out = R(sign * angle) in, per row of Dh (angles [T, rotary/2]); sign -1 turns back (the backward).
std::vector<double> rotate(const std::vector<double>& in, const Shape& s, const std::vector<double>& angle, int rotary,
                           double sign) {
  const std::int64_t T = s[2], Dh = s[3], half = rotary / 2;
  std::vector<double> out = in;
  for (std::int64_t row = 0; row < s.numel() / Dh; ++row) {
    const std::int64_t t = row % T;
    double* o = out.data() + row * Dh;
    const double* x = in.data() + row * Dh;
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = sign * angle[static_cast<std::size_t>(t * half + i)];
      const double c = std::cos(a), sn = std::sin(a);
      o[i] = x[i] * c - x[i + half] * sn;
      o[i + half] = x[i + half] * c + x[i] * sn;
    }
  }
  return out;
}

}  // namespace

void ReferenceBackend::do_rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  const std::vector<std::int32_t> pos = checked_positions("rope_forward", positions);
  store(y, rotate(load(x), x.shape(), base_angles(pos, rotary, base), rotary, 1.0));
}

void ReferenceBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const std::vector<std::int32_t> pos = checked_positions("rope_backward", positions);
  accumulate(&dx, rotate(load(dy), dy.shape(), base_angles(pos, rotary, base), rotary, -1.0));
}

void ReferenceBackend::do_rope_frequencies_forward(Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& freqs) {
  const char* op = "rope_frequencies_forward";
  const std::vector<std::int32_t> pos = checked_positions(op, positions);
  store(y, rotate(load(x), x.shape(), frequency_angles(op, pos, freqs), static_cast<int>(2 * freqs.numel()), 1.0));
}

void ReferenceBackend::do_rope_frequencies_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, const Tensor& freqs) {
  const char* op = "rope_frequencies_backward";
  const std::vector<std::int32_t> pos = checked_positions(op, positions);
  accumulate(&dx, rotate(load(dy), dy.shape(), frequency_angles(op, pos, freqs), static_cast<int>(2 * freqs.numel()), -1.0));
}

}  // namespace backend_reference
