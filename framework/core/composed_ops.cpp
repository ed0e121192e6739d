// The compositions of composed_ops.hpp: each optional op as a few core ops (matmul, attention,
// mul, add, reshape) over small 0/1 or table constants built on the host. Contracts are checked by
// the ops.cpp entry points before they come here.
#include "composed_ops.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/ops.hpp"
#include "ablate/rope.hpp"

namespace ablate::ops::composed {
Var constant(Graph& g, const Shape& shape, DType dtype, const std::vector<float>& values) {
  Backend& be = g.backend();
  Tensor f = be.empty(shape, DType::F32);
  be.copy_from_host(f, values.data());
  if (dtype == DType::F32) return g.constant(f);
  Tensor t = be.empty(shape, dtype);
  be.cast(t, f);
  return g.constant(t);
}

namespace {

// x: [..., C] @ m: [C, cols] (row-major) -> [..., cols].
Var times(Graph& g, const Var& x, const std::vector<float>& m, std::int64_t cols) {
  const Shape& s = x.shape();
  const std::int64_t C = s.last();
  const Var mv = constant(g, {1, C, cols}, x.dtype(), m);
  return reshape(g, matmul(g, reshape(g, x, {1, s.rows(), C}), mv), s.with_last(cols));
}

// The [C, W] matrix that moves columns offset..offset+W-1 of a [.., C] row to 0..W-1 (transposed:
// the [W, C] one that moves them back).
std::vector<float> selection(std::int64_t C, std::int64_t offset, std::int64_t W, bool back) {
  std::vector<float> m(static_cast<std::size_t>(C * W), 0.0f);
  for (std::int64_t j = 0; j < W; ++j) m[static_cast<std::size_t>(back ? j * C + offset + j : (offset + j) * W + j)] = 1.0f;
  return m;
}

}  // namespace

Var sum_last(Graph& g, const Var& x) {
  return times(g, x, std::vector<float>(static_cast<std::size_t>(x.shape().last()), 1.0f), 1);
}

Var slice_last(Graph& g, const Var& x, std::int64_t offset, std::int64_t width) {
  return times(g, x, selection(x.shape().last(), offset, width, false), width);
}

Var concat_last(Graph& g, const Var& a, const Var& b) {
  const std::int64_t wa = a.shape().last(), wb = b.shape().last(), C = wa + wb;
  return add(g, times(g, a, selection(C, 0, wa, true), C), times(g, b, selection(C, wa, wb, true), C));
}

Var softmax_last(Graph& g, const Var& x) {
  const Shape& s = x.shape();
  const std::int64_t C = s.last();
  std::vector<float> eye(static_cast<std::size_t>(C * C), 0.0f);
  for (std::int64_t j = 0; j < C; ++j) eye[static_cast<std::size_t>(j * C + j)] = 1.0f;
  const Var keys = constant(g, {1, 1, C, C}, x.dtype(), eye);  // k = v = identity
  AttentionOptions o;
  o.scale = 1.0f;
  return reshape(g, attention(g, reshape(g, x, {1, 1, s.rows(), C}), keys, keys, o), s);
}

Var sigmoid(Graph& g, const Var& x) {
  const Var pairs = times(g, reshape(g, x, {x.shape().numel(), 1}), {1.0f, 0.0f}, 2);  // [x, 0]
  return reshape(g, times(g, ops::softmax_last(g, pairs), {1.0f, 0.0f}, 1), x.shape());
}

namespace {

// x * cos + rotate_half(x) * sin on the first `rotary` dims, with angle(t, i) for pair i at row t.
template <class Angle>
Var rope_by_angles(Graph& g, const Var& x, const Tensor& positions, int rotary, Angle angle) {
  const std::int64_t T = x.shape()[2], Dh = x.shape()[3], half = rotary / 2;
  std::vector<std::int32_t> pos(static_cast<std::size_t>(T));
  g.backend().copy_to_host(pos.data(), positions);
  std::vector<float> cos(static_cast<std::size_t>(T * Dh), 1.0f), sin(cos.size(), 0.0f),
      turn(static_cast<std::size_t>(Dh * Dh), 0.0f);
  for (std::int64_t t = 0; t < T; ++t) {
    if (pos[static_cast<std::size_t>(t)] < 0)
      throw Error("ops::rope: positions hold " + std::to_string(pos[static_cast<std::size_t>(t)]) + "; expected positions >= 0");
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = angle(pos[static_cast<std::size_t>(t)], i);
      for (std::int64_t d : {i, i + half}) {
        cos[static_cast<std::size_t>(t * Dh + d)] = static_cast<float>(std::cos(a));
        sin[static_cast<std::size_t>(t * Dh + d)] = static_cast<float>(std::sin(a));
      }
    }
  }
  for (std::int64_t i = 0; i < half; ++i) {  // rotate_half: out[i] = -x[i + half], out[i + half] = x[i]
    turn[static_cast<std::size_t>((i + half) * Dh + i)] = -1.0f;
    turn[static_cast<std::size_t>(i * Dh + i + half)] = 1.0f;
  }
  const Var c = constant(g, {T, Dh}, x.dtype(), cos), s = constant(g, {T, Dh}, x.dtype(), sin);
  return add(g, mul(g, x, c), mul(g, times(g, x, turn, Dh), s));
}

}  // namespace

Var rope(Graph& g, const Var& x, const Tensor& positions, int rotary, float base) {
  return rope_by_angles(g, x, positions, rotary,
                        [rotary, base](std::int32_t p, std::int64_t i) { return rope_angle(p, i, rotary, base); });
}

Var rope(Graph& g, const Var& x, const Tensor& positions, const Tensor& freqs) {
  std::vector<float> f(static_cast<std::size_t>(freqs.numel()));
  g.backend().copy_to_host(f.data(), freqs);
  return rope_by_angles(g, x, positions, static_cast<int>(2 * f.size()),
                        [&f](std::int32_t p, std::int64_t i) { return rope_frequency_angle(p, f[static_cast<std::size_t>(i)]); });
}

Var repeat_heads(Graph& g, const Var& kv, std::int64_t heads) {
  const Shape& s = kv.shape();  // [B, Hkv, S, Dh]
  const std::int64_t B = s[0], Hkv = s[1], group = heads / Hkv;
  std::vector<float> pick(static_cast<std::size_t>(B * heads * Hkv), 0.0f);  // [B, H, Hkv]
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < heads; ++h) pick[static_cast<std::size_t>((b * heads + h) * Hkv + h / group)] = 1.0f;
  const Var p = constant(g, {B, heads, Hkv}, kv.dtype(), pick);
  return reshape(g, matmul(g, p, reshape(g, kv, {B, Hkv, s[2] * s[3]})), {B, heads, s[2], s[3]});
}

}  // namespace ablate::ops::composed
