// backend/reference: rotary positions (RoPE, "rotate half" pairing), forward and backward side by
// side, in double: the oracle of every other backend's rope (contract in ablate/backend.hpp).
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

// out = R(sign * angle) in, per row of Dh; sign -1 turns back (the backward).
std::vector<double> rotate(const std::vector<double>& in, const Shape& s, const std::vector<std::int32_t>& pos, int rotary,
                           float base, double sign) {
  const std::int64_t T = s[2], Dh = s[3], half = rotary / 2;
  std::vector<double> out = in;
  for (std::int64_t row = 0; row < s.numel() / Dh; ++row) {
    const std::int64_t t = row % T;
    double* o = out.data() + row * Dh;
    const double* x = in.data() + row * Dh;
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = sign * ablate::rope_angle(pos[static_cast<std::size_t>(t)], i, rotary, base);
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
  store(y, rotate(load(x), x.shape(), pos, rotary, base, 1.0));
}

void ReferenceBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const std::vector<std::int32_t> pos = checked_positions("rope_backward", positions);
  accumulate(&dx, rotate(load(dy), dy.shape(), pos, rotary, base, -1.0));
}

}  // namespace backend_reference
