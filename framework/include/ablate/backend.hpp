// Kind "backend": the compute interface every model op runs on. A backend owns its memory
// (tensors hold ref-counted storage it allocated), runs the coarse op set of docs/compute-core.md, and
// implements each op's forward and backward side by side. Model code only sees this interface,
// so a CPU backend (reference, onednn) and a GPU backend (cudnn, with device memory and a
// stream) are interchangeable.
//
// Every op's arguments are checked by one contract, ablate/backend_contract.hpp, which each op's
// public function calls before the backend's implementation (so every backend gives the same
// message for the same mistake, and no backend can forget it).
//
// Conventions for every op:
//  - Signature order: outputs, then inputs, then sizes/parameters, then state.
//  - Shapes use one vocabulary: B batch, T query/target length, S key/source length, H heads,
//    Dh head dim, D model width, F feed-forward width, V vocabulary, N rows (= B*T, any leading
//    dims flattened), I/O in/out features.
//  - Backward ops ACCUMULATE into gradient outputs (`dx += ...`); the caller zeroes them first.
//    A null gradient pointer means "not needed": the backend skips that work.
//  - Value tensors are F32 or BF16 (all of one op's float inputs/outputs share a dtype unless
//    stated); statistics (mean, rstd, lse, loss) are always F32; ids/targets/lengths are I32.
//    Parameter gradients (dw, db, dgamma, dbeta, dtable) may be F32 while the values are BF16:
//    mixed precision keeps f32 gradients for the f32 master weights.
//  - Ops are asynchronous on device backends: results are visible to the host after
//    copy_to_host (which synchronises).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend_ops.hpp"
#include "ablate/error.hpp"
#include "ablate/index_math.hpp"
#include "ablate/philox.hpp"
#include "ablate/plugin.hpp"
#include "ablate/rope.hpp"
#include "ablate/tensor.hpp"

namespace ablate {

enum class Activation : std::uint8_t { None = 0, ReLU = 1, GeluErf = 2, GeluTanh = 3, SiLU = 4 };
const char* activation_name(Activation a);
// Whether an activation's backward needs the pre-activation (its derivative is not a function of
// its output): linear_forward then saves `pre`.
inline bool activation_needs_pre(Activation a) {
  return a == Activation::GeluErf || a == Activation::GeluTanh || a == Activation::SiLU;
}

// How a backward op stores a gradient output: Add (+= d(loss)/d(input): the contract of every
// gradient output) or Write (= d(loss)/d(input): every element written, the old contents never
// read). The framework asks for Write where an input's gradient buffer is new (Graph::grad_out),
// which saves zeroing it and reading the zeros back.
enum class GradStore : std::uint8_t { Add = 0, Write = 1 };

// Masks: none (causal = false, key_lengths = null), causal (query i sees keys j <= i +
// query_offset), key padding (query sees keys j < key_lengths[b]); causal and padding combine.
// Logits of head h, query i, key j (before the mask):
//   scale * q[h, i]·k[h / (H / Hkv), j] + bias[h or 0, i, j] - slopes[h] * |i + query_offset - j|
// where k and v may have fewer heads Hkv than q (H % Hkv == 0: grouped-query attention, Hkv = 1
// multi-query), a bias is an additive logit bias (relative-position biases such as T5's) and
// slopes are ALiBi's per-head distance penalties (Press et al. 2022; the causal case is the
// paper's, the others the symmetric |i - j| form).
// Where attention's heads lie (OptionalOp::packed_heads). heads == 0 (the default): in tensors of
// their own, q [B, H, T, Dh], k and v [B, Hkv, S, Dh], out [B, H, T, Dh]. heads > 0: token-major,
// where the projections put them, so that no copy splits or merges them: q [B, T, Wq], k [B, S, Wk],
// v [B, S, Wv] with query head h at columns q_col + h Dh .. q_col + (h + 1) Dh - 1 of q's rows and
// k/v head j at k_col + j Dh and v_col + j Dh (Dh = head_dim); out [B, T, H Dh]; lse and probs as
// ever. q, k and v may be one tensor (self-attention's fused projection [B, T, (H + 2 Hkv) Dh]),
// k and v another (cross-attention's [B, S, 2 Hkv Dh]): their gradients are then one tensor too,
// each part storing (GradStore) into its own columns only.
struct PackedHeads {
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;
  std::int64_t q_col = 0, k_col = 0, v_col = 0;
  bool packed() const { return heads > 0; }
};

// Attention's sizes, read from q and k in either layout (no tensor data read).
struct AttentionShape {
  std::int64_t B, H, Hkv, T, S, Dh;
};

struct AttentionParams {
  PackedHeads packed;                   // the layout of q, k, v and out (and their gradients)
  bool causal = false;                  // decoder self-attention
  const Tensor* key_lengths = nullptr;  // I32 [B]: valid keys per batch item (padding at the end); null = all S
  std::int64_t query_offset = 0;        // absolute position of query 0 (incremental decoding; also ALiBi's distance)
  float scale = 1.0f;                   // logits = scale * q·k (1/sqrt(Dh) in the paper)
  float softcap = 0.0f;                 // > 0: logits = softcap * tanh(scale q·k / softcap), before bias and
                                        // slopes (OptionalOp::attention_softcap); 0 = none
  float dropout = 0.0f;                 // on the attention probabilities; needs `rng`
  RngKey rng;
  const Tensor* bias = nullptr;    // F32 [1 or H, T, S]: added to the logits; null = none
  const Tensor* slopes = nullptr;  // F32 [H]: ALiBi slopes; null = none
  Tensor* dbias = nullptr;         // backward only, F32 like bias: += d(loss)/d(bias) summed over B (and heads
                                   // for a [1, T, S] bias); null = not needed
  GradStore dq_store = GradStore::Add, dk_store = GradStore::Add, dv_store = GradStore::Add;  // backward only
};

// The sizes of q and k in the layout `p.packed` says (their ranks checked by attention_problem).
inline AttentionShape attention_shape(const Tensor& q, const Tensor& k, const AttentionParams& p) {
  const PackedHeads& l = p.packed;
  if (l.packed()) return {q.shape()[0], l.heads, l.kv_heads, q.shape()[1], k.shape()[1], l.head_dim};
  return {q.shape()[0], q.shape()[1], k.shape()[1], q.shape()[2], k.shape()[2], q.shape()[3]};
}

// The shape of attention's output (and of the gradient dout): q's in the split layout, [B, T, H Dh]
// packed.
inline Shape attention_out_shape(const Tensor& q, const AttentionParams& p) {
  if (!p.packed.packed()) return q.shape();
  return Shape{q.shape()[0], q.shape()[1], p.packed.heads * p.packed.head_dim};
}

// The shape contract of attention's arguments beyond the core q/k/v, one definition for every
// backend and ops.cpp (no tensor data read): k, v [B, Hkv, S, Dh] with Hkv dividing q's H (or the
// packed layout's columns within q, k, v's rows), bias F32 [1 or H, T, S], slopes F32 [H], dbias as
// bias. "" when they fit.
inline std::string attention_problem(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& p) {
  const PackedHeads& l = p.packed;
  if (l.packed()) {
    if (q.shape().rank() != 3 || k.shape().rank() != 3 || v.shape().rank() != 3 || k.shape()[0] != q.shape()[0] ||
        v.shape()[0] != q.shape()[0] || v.shape()[1] != k.shape()[1])
      return "packed heads: q " + q.str() + ", k " + k.str() + ", v " + v.str() + " must be [B, T, Wq], [B, S, Wk], [B, S, Wv]";
    if (l.head_dim <= 0 || l.kv_heads <= 0 || l.heads % l.kv_heads != 0)
      return "packed heads: " + std::to_string(l.heads) + " heads, " + std::to_string(l.kv_heads) + " k/v heads of width " +
             std::to_string(l.head_dim) + ": the k/v heads must divide the heads, the width be > 0";
    const auto fits = [](std::int64_t col, std::int64_t n, std::int64_t width) { return col >= 0 && col + n <= width; };
    if (!fits(l.q_col, l.heads * l.head_dim, q.shape()[2]) || !fits(l.k_col, l.kv_heads * l.head_dim, k.shape()[2]) ||
        !fits(l.v_col, l.kv_heads * l.head_dim, v.shape()[2]))
      return "packed heads: columns q " + std::to_string(l.q_col) + ", k " + std::to_string(l.k_col) + ", v " +
             std::to_string(l.v_col) + " (+ heads x " + std::to_string(l.head_dim) + ") must lie within the rows of q " +
             q.str() + ", k " + k.str() + ", v " + v.str();
  } else if (q.shape().rank() != 4 || k.shape().rank() != 4 || k.shape() != v.shape()) {
    return "q " + q.str() + ", k " + k.str() + ", v " + v.str() + " must be [B, H, T, Dh], [B, Hkv, S, Dh], [B, Hkv, S, Dh]";
  } else if (k.shape()[0] != q.shape()[0] || k.shape()[3] != q.shape()[3] || k.shape()[1] <= 0 ||
             q.shape()[1] % k.shape()[1] != 0) {
    return "k " + k.str() + " must be [B, Hkv, S, Dh] with the B and Dh of q " + q.str() +
           " and Hkv dividing H = " + std::to_string(q.shape()[1]);
  }
  const AttentionShape a = attention_shape(q, k, p);
  const std::int64_t H = a.H, T = a.T, S = a.S;
  if (!(p.softcap >= 0.0f)) return "softcap " + std::to_string(p.softcap) + " must be >= 0 (0: none)";
  const auto bias_problem = [&](const char* name, const Tensor& b) -> std::string {
    if (b.dtype() != DType::F32 || b.shape().rank() != 3 || (b.shape()[0] != 1 && b.shape()[0] != H) || b.shape()[1] != T ||
        b.shape()[2] != S)
      return std::string(name) + " " + b.str() + " must be f32[1 or H = " + std::to_string(H) + ", T = " + std::to_string(T) +
             ", S = " + std::to_string(S) + "]";
    return {};
  };
  if (p.bias) {
    if (auto e = bias_problem("bias", *p.bias); !e.empty()) return e;
  }
  if (p.dbias) {
    if (!p.bias) return "dbias given without a bias";
    if (auto e = bias_problem("dbias", *p.dbias); !e.empty()) return e;
    if (p.dbias->shape() != p.bias->shape()) return "dbias " + p.dbias->str() + " must have bias's shape " + p.bias->str();
  }
  if (p.slopes && (p.slopes->dtype() != DType::F32 || p.slopes->shape() != Shape{H}))
    return "slopes " + p.slopes->str() + " must be f32[H = " + std::to_string(H) + "]";
  return {};
}

// One Adam update's parameters (optimizer/adam and adamw fill every field; their option defaults
// are these initial values, held equal by tests/plugins/optimizer_test.cpp).
struct AdamParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float eps = 1e-9f;
  float weight_decay = 0.0f;
  bool decoupled = false;   // true: AdamW (decay applied to the weight), false: L2 added to the gradient
  std::int64_t step = 1;    // 1-based, for bias correction
  float grad_scale = 1.0f;  // the gradient is multiplied by this first (clipping, loss scaling)
};

// Ops beyond the core set: a backend says which it has (Backend::supports); the others refuse
// with a clear error. A new op lands in `reference` first and in the fast backends later: where a
// backend lacks one, ops.cpp composes it from core ops (framework/core/composed_ops.hpp) when it
// can: all but attention_bias and exp.
// attention_bias and grouped_attention are features of the core attention op (AttentionParams'
// bias/slopes, k/v with fewer heads than q): a backend without them refuses such arguments.
// softmax_last, sum_last and pointwise are the small general set a plugin composes its own ops from.
// dropout_add is a fusion: a block's residual add of its dropped-out sublayer in one pass.
// rope_frequencies is rope with the caller's frequency per pair (interpolated and YaRN-style
// scaled rotary positions). compare and permute are the index and layout ops a plugin builds masks
// and layouts from (no composition from the core ops exists: ops.cpp refuses them where a backend
// lacks them). packed_heads is attention reading and writing heads where the projections keep
// them (AttentionParams::packed): where a backend lacks it, ops.cpp splits and merges the heads.
// linear_dropout is a fusion: a linear layer's output through dropout, the mask applied in the
// activation's pass and its backward in the activation gradient's (ops::linear_dropout; where a
// backend lacks it, linear then dropout).
enum class OptionalOp {
  rope,
  slice_last,
  attention_bias,
  grouped_attention,
  softmax_last,
  sum_last,
  pointwise,
  attention_softcap,
  dropout_add,
  compare,
  permute,
  rope_frequencies,
  packed_heads,
  linear_dropout
};
inline const char* optional_op_name(OptionalOp op) {
  switch (op) {
    case OptionalOp::rope: return "rope";
    case OptionalOp::slice_last: return "slice_last";
    case OptionalOp::attention_bias: return "attention_bias";
    case OptionalOp::grouped_attention: return "grouped_attention";
    case OptionalOp::softmax_last: return "softmax_last";
    case OptionalOp::sum_last: return "sum_last";
    case OptionalOp::pointwise: return "pointwise";
    case OptionalOp::attention_softcap: return "attention_softcap";
    case OptionalOp::dropout_add: return "dropout_add";
    case OptionalOp::compare: return "compare";
    case OptionalOp::permute: return "permute";
    case OptionalOp::rope_frequencies: return "rope_frequencies";
    case OptionalOp::packed_heads: return "packed_heads";
    case OptionalOp::linear_dropout: return "linear_dropout";
  }
  return "?";
}

// Compare (the comparisons of Backend::compare_forward) is in ablate/index_math.hpp.
inline const char* compare_name(Compare c) {
  static const char* const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return static_cast<int>(c) < 6 ? names[static_cast<int>(c)] : "?";
}

// An axis order for Backend::permute_forward: y's dim i is x's dim axes[i], for i < rank.
struct Permutation {
  int rank = 0;
  int axes[Shape::kMaxRank] = {};
};

// The functions of Backend::pointwise_forward; each one's derivative is a function of its output.
enum class Pointwise : std::uint8_t { exp = 0, sigmoid = 1 };
inline const char* pointwise_name(Pointwise f) { return f == Pointwise::exp ? "exp" : "sigmoid"; }

// The shape contract of the row-wise optional ops (softmax_last, sum_last, pointwise), one
// definition for every backend and ops.cpp: x [N, C] (any leading dims as N) and y of x's shape,
// or of x's shape with the last dim 1 when `reduces` (sum_last); one float dtype. "" when they fit.
// rowwise_input_problem checks x alone (ops.cpp, before it allocates y).
inline std::string rowwise_input_problem(const Tensor& x) {
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16) return "x " + x.str() + " must be f32 or bf16";
  if (x.shape().rank() == 0 || x.numel() == 0) return "x " + x.str() + " must be [..., C] with C > 0";
  return {};
}
inline std::string rowwise_problem(const Tensor& x, const Tensor& y, bool reduces) {
  if (x.dtype() != y.dtype()) return "x " + x.str() + " and y " + y.str() + " must share one float dtype (f32 or bf16)";
  if (std::string p = rowwise_input_problem(x); !p.empty()) return p;
  const Shape want = reduces ? x.shape().with_last(1) : x.shape();
  if (y.shape() != want) return "y " + y.str() + " must be " + want.str() + " for x " + x.str();
  return {};
}

// The shape contracts of the optional ops, one definition for every backend and for ops.cpp (they
// read no tensor data, so a device backend checks them without synchronising). "" when the
// arguments fit; else what is wrong, for the caller's error.
// rope: x [B, H, T, Dh], positions I32 [T], rotary even in (0, Dh], base > 0 and finite.
inline std::string rope_problem(const Tensor& x, const Tensor& positions, int rotary, float base) {
  if (x.shape().rank() != 4) return "x " + x.str() + " must be [B, H, T, Dh]";
  const std::int64_t T = x.shape()[2], Dh = x.shape()[3];
  if (positions.dtype() != DType::I32 || positions.shape() != Shape{T})
    return "positions " + positions.str() + " must be i32[" + std::to_string(T) + "] for x " + x.str();
  if (rotary <= 0 || rotary % 2 != 0 || rotary > Dh)
    return "rotary " + std::to_string(rotary) + " must be even and in (0, Dh = " + std::to_string(Dh) + "]";
  if (!(base > 0.0f) || !std::isfinite(base)) return "base " + std::to_string(base) + " must be > 0";
  return {};
}
// rope_frequencies: x [B, H, T, Dh], positions I32 [T], freqs F32 [R/2] with 0 < R <= Dh (R, the
// rotary dims, is twice the number of frequencies).
inline std::string rope_frequencies_problem(const Tensor& x, const Tensor& positions, const Tensor& freqs) {
  if (x.shape().rank() != 4) return "x " + x.str() + " must be [B, H, T, Dh]";
  const std::int64_t T = x.shape()[2], Dh = x.shape()[3];
  if (positions.dtype() != DType::I32 || positions.shape() != Shape{T})
    return "positions " + positions.str() + " must be i32[" + std::to_string(T) + "] for x " + x.str();
  if (freqs.dtype() != DType::F32 || freqs.shape().rank() != 1 || freqs.numel() == 0 || 2 * freqs.numel() > Dh)
    return "freqs " + freqs.str() + " must be f32[R/2], one frequency per turned pair, with 0 < R <= Dh = " + std::to_string(Dh);
  return {};
}
// slice_last: whole [N, C] and part [N, W] (any leading dims as N), one dtype, 0 <= offset,
// offset + W <= C.
inline std::string slice_last_problem(const Tensor& whole, const Tensor& part, std::int64_t offset) {
  if (whole.dtype() != part.dtype()) return "whole " + whole.str() + " and part " + part.str() + " differ in dtype";
  if (whole.shape().rank() == 0 || part.shape().rank() != whole.shape().rank() || part.shape().last() <= 0 ||
      whole.shape().with_last(1) != part.shape().with_last(1))
    return "whole " + whole.str() + " and part " + part.str() + " must differ in the last dim only (part's > 0)";
  if (offset < 0 || offset + part.shape().last() > whole.shape().last())
    return "offset " + std::to_string(offset) + " + width " + std::to_string(part.shape().last()) + " must lie in [0, " +
           std::to_string(whole.shape().last()) + "] of " + whole.str();
  return {};
}

// compare: a (F32/BF16) and y of a's shape and dtype; b of a's dtype, and a's shape, a's trailing
// dims (repeated over its leading ones) or one element.
inline std::string compare_problem(const Tensor& y, const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::F32 && a.dtype() != DType::BF16) return "a " + a.str() + " must be f32 or bf16";
  if (b.dtype() != a.dtype() || y.dtype() != a.dtype())
    return "a " + a.str() + ", b " + b.str() + " and y " + y.str() + " must share one dtype";
  if (y.shape() != a.shape()) return "y " + y.str() + " must be a's shape " + a.shape().str();
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  bool trailing = bs.rank() <= as.rank() && bs.rank() > 0;
  for (int i = 0; trailing && i < bs.rank(); ++i) trailing = bs[bs.rank() - 1 - i] == as[as.rank() - 1 - i];
  if (!trailing && b.numel() != 1)
    return "b " + b.str() + " must be a's shape, a's trailing dims or one element (a " + a.str() + ")";
  return {};
}
// A permutation of x's axes: as many as x's rank, an order of 0 .. rank-1.
inline std::string permutation_problem(const Permutation& p, const Tensor& x) {
  const int r = x.shape().rank();
  if (p.rank != r || r < 1) return "the permutation has " + std::to_string(p.rank) + " axes; x " + x.str() + " needs its rank";
  bool seen[Shape::kMaxRank] = {};
  for (int i = 0; i < r; ++i) {
    if (p.axes[i] < 0 || p.axes[i] >= r || seen[p.axes[i]])
      return "axes must be an order of 0 .. " + std::to_string(r - 1) + " (axis " + std::to_string(p.axes[i]) + " at " +
             std::to_string(i) + ")";
    seen[p.axes[i]] = true;
  }
  return {};
}
// permute's walk, for every backend (PermutedStrides: ablate/index_math.hpp).
static_assert(PermutedStrides::kMaxRank == Shape::kMaxRank, "a permutation's walk holds every rank a Shape has");
inline PermutedStrides permuted_strides(const Shape& x, const Permutation& p) {
  std::int64_t x_strides[Shape::kMaxRank] = {};
  std::int64_t stride = 1;
  for (int d = x.rank() - 1; d >= 0; --d) {
    x_strides[d] = stride;
    stride *= x[d];
  }
  PermutedStrides w;
  w.rank = p.rank;
  for (int k = 0; k < p.rank; ++k) {
    w.y_dims[k] = x[p.axes[k]];
    w.strides[k] = x_strides[p.axes[k]];
  }
  return w;
}
// permute: x and y of one float dtype, p a permutation of x's axes, y's dim i = x's dim axes[i].
inline std::string permute_problem(const Tensor& y, const Tensor& x, const Permutation& p) {
  if (x.dtype() != DType::F32 && x.dtype() != DType::BF16) return "x " + x.str() + " must be f32 or bf16";
  if (y.dtype() != x.dtype()) return "x " + x.str() + " and y " + y.str() + " must share one dtype";
  if (std::string problem = permutation_problem(p, x); !problem.empty()) return problem;
  bool fits = y.shape().rank() == p.rank;
  for (int i = 0; fits && i < p.rank; ++i) fits = y.shape()[i] == x.shape()[p.axes[i]];
  if (!fits) return "y " + y.str() + " must be x " + x.str() + " permuted";
  return {};
}

struct BackendCaps {
  std::string device;            // "cpu", "cuda:0"
  bool host_addressable = true;  // Tensor::raw() is a host pointer
  bool bf16 = false;             // BF16 value tensors supported (mixed precision)
  std::string bf16_arithmetic;   // how a bf16 run computes, recorded and printed with it
                                 // (e.g. "f32 arithmetic on bf16-rounded values")
  bool deterministic = true;     // current mode gives bit-identical results run to run
  int threads = 1;               // CPU threads used
  bool computes = true;          // false: tensors have shapes but no memory and ops do nothing (the
                                 // host's dry build of a model, to count and check it; a
                                 // ParameterStore then initialises nothing)
};

class BOOST_SYMBOL_VISIBLE Backend : public Component {
 public:
  static constexpr const char* kKind = "backend";

  virtual BackendCaps caps() const = 0;

  // --- memory (the backend owns it; storage returns to its allocator when the last tensor goes)
  // The contents of a new tensor are unspecified (the reference backend fills NaN, to expose
  // an op that forgets to write its output).
  virtual Tensor empty(const Shape& shape, DType dtype) = 0;
  virtual void synchronize() = 0;
  // --- optional ops (see OptionalOp): true if this backend runs `op`.
  virtual bool supports(OptionalOp op) const {
    (void)op;
    return false;
  }

  // === The ops. Each is declared once, in ablate/backend_ops.hpp's list: here as a public
  // function that checks the op's contract (ablate/backend_contract.hpp) and then calls the
  // protected virtual do_<op>, which a backend overrides. What each op computes:
  //
  // fill(y, value): y any F32/BF16; I32 gets (int)value. copy_from_host(dst, src): src holds
  // dst.bytes() bytes. copy_to_host(dst, src): synchronises. copy(dst, src): same numel and dtype.
  //
  // linear_forward(y, pre, x, w, b, act): y[N, O] = act(x[N, I] · w[O, I]^T + b[O]); pre[N, O]
  // keeps x·w^T + b when act needs it for backward (GeluErf/GeluTanh/SiLU). pre may be null for
  // None/ReLU, and always when no backward will run (evaluation); backward then requires it for
  // those acts. linear_backward(dx, dw, db, dy, x, w, pre, y, act, dx_store): dx[N, I] += g·w
  // (= with GradStore::Write), dw[O, I] += g^T·x, db[O] += sum_rows(g), with g = dy ⊙ act'(pre or y).
  //
  // linear_dropout_forward(y, slope, x, w, b, act, p, rng) (OptionalOp::linear_dropout): y[N, O] =
  // dropout(act(x·w^T + b), p) with rng, the values linear_forward then dropout_forward would store
  // (each rounded to y's dtype). slope[N, O] (F32) keeps what the backward needs: act'(pre) times
  // the keep indicator (1 kept, 0 dropped: a dropped element's 0 carries act's sign), with pre = x·w^T
  // + b rounded to y's dtype (act' is 1 for None). slope may be null for ReLU (its backward then
  // reads y: y > 0 exactly where kept and pre > 0) and always when no backward will run.
  // linear_dropout_backward(dx, dw, db, dy, x, w, slope, y, act, p, dx_store): as linear_backward
  // with g = h ⊙ slope (ReLU without slope: h where y > 0, else 0 · h), h = dy / (1 - p) rounded to
  // dy's dtype (dropout's gradient as dropout_forward stores it).
  //
  // matmul_forward(c, a, b, trans_a, trans_b, alpha), batched: c[Bt, M, N] = alpha * op(a) ·
  // op(b); op(a) = a[Bt, M, K] or a[Bt, K, M]^T. a, b and c have the same batch Bt (no
  // broadcasting). matmul_backward: da, db += their gradients.
  //
  // attention_forward(out, lse, probs, q, k, v, params), scaled dot-product, per (b, h):
  // out[T, Dh] = dropout(softmax(mask(logits))) · v with the logits of AttentionParams (scale
  // q·k^T, plus bias and ALiBi slopes when given). q[B, H, T, Dh], k/v[B, Hkv, S, Dh],
  // out[B, H, T, Dh]; lse[B, H, T] (F32) = logsumexp of the masked, scaled logits per query
  // (saved for backward: probabilities are recomputed from it). A query with no visible key gets
  // out = 0 and lse = -inf. probs[B, H, T, S] (F32, optional): the probabilities before dropout,
  // for logging. query_offset only matters with causal; dropout must be in [0, 1). With
  // params.packed (OptionalOp::packed_heads) q, k, v, out and their gradients are token-major
  // rows, as PackedHeads says.
  // attention_backward(dq, dk, dv, dout, out, lse, q, k, v, params): dq, dk, dv += (shapes of
  // q, k, v; = where params.dq/dk/dv_store say Write: rows no query sees are then written 0);
  // params.dbias += the bias's gradient.
  //
  // layer_norm_forward(y, mean, rstd, x, gamma, beta, eps), over the last dim: y[N, D] =
  // (x - mean) * rstd * gamma[D] + beta[D]; mean[N], rstd[N] (F32) saved for backward.
  // rms_norm_forward(y, rstd, x, gamma, eps): y[N, D] = x * rstd * gamma[D], rstd =
  // 1/sqrt(mean(x^2) + eps). Their backwards (..., dx_store): dx += (= with GradStore::Write),
  // dgamma (, dbeta) +=.
  //
  // Elementwise (any shape): activation_forward(y, x, act); activation_backward: dx +=.
  // add_forward(y, a, b, alpha, beta): y = alpha * a + beta * b, where b is either a's shape or
  // repeats over a's leading elements (b.numel() divides a.numel(): a positional table [T, D]
  // added to every batch item [B, T, D]). add_backward: da += alpha * dy; db += beta * (dy summed
  // over the repeats). mul_forward(y, a, b): y = a * b, b of a's shape or repeating as in add (a
  // gate: [D] per channel or [1] scalar over [B, T, D]); mul_backward: da += dy * b (b
  // repeated), db += (dy * a) summed over the repeats. axpy(y, x, alpha): y += alpha * x (scale,
  // gradient accumulation); y and x may differ in dtype (F32 += BF16).
  // dropout_forward(y, x, p, rng): y = x * keep / (1 - p), keep drawn by dropout_keep(rng,
  // element index, p); dropout_backward: dx +=.
  //
  // embedding_forward(y, ids, table): y[N, D] = table[ids[N], :]; ids I32 in [0, V).
  // embedding_backward(dtable, dy, ids) scatter-adds: dtable +=.
  //
  // Heads: x[B, T, P*H*Dh] holds P parts (q, k, v of a fused projection) side by side;
  // split_heads_forward(y, x, parts, part) takes part `part` as y[B, H, T, Dh].
  // merge_heads_forward(y, x): x[B, H, T, Dh] -> y[B, T, H*Dh]. Their backwards: dx +=.
  //
  // write_time_slice(dst, src, offset), the KV cache of incremental decoding (no backward): for
  // every (b, h), rows offset .. offset+T-1 of dst[B, H, S, Dh] = src[B, H, T, Dh]; the other rows
  // of dst are left untouched. Same dtype (F32 or BF16); offset >= 0, offset + T <= S.
  //
  // cross_entropy_forward(loss, dlogits, stats, logits, targets, ignore_index, label_smoothing),
  // fused: logits[N, V], targets[N] I32. loss[1] (F32) = mean over rows whose target !=
  // ignore_index of -sum_c q_c log softmax(logits)_c with q = (1 - ls) onehot + ls / V.
  // dlogits[N, V] (logits' dtype) = d(loss)/d(logits), computed in the same pass. stats[2] (F32)
  // = {number of counted rows, number whose argmax equals the target}. dlogits is overwritten
  // (not accumulated: it is this op's saved state) with the gradient of the mean loss itself;
  // with no counted row, loss and dlogits are 0.
  //
  // Optimizer and gradient utilities (F32 master weights and moments): sum_squares(total, x):
  // total[1] (F32) += sum(x^2) (the global grad norm is sqrt of the sum over all gradients).
  // adam_update(w, m, v, w_low, grad, params): Adam/AdamW step on w (F32) with m, v (F32); grad
  // F32 (times params.grad_scale): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  // w -= lr * m̂ / (sqrt(v̂) + eps) with m̂, v̂ bias-corrected by step; Adam adds weight_decay * w
  // to g, AdamW subtracts lr * weight_decay * w (the old w) from w (PyTorch's conventions). If
  // w_low is given (BF16, same shape) it receives the updated weight rounded to bf16 (the compute
  // copy). cast(y, x): y = x converted to y's dtype (F32 <-> BF16, round to nearest even).
  //
  // The optional ops, each refused by its contract where supports() says no:
  // rope_forward(y, x, positions, rotary, base): rotary positions (RoPE), "rotate half" pairing
  // (GPT-NeoX, LLaMA): for every (b, h, t) of x[B, H, T, Dh], the first `rotary` dims (even,
  // 0 < rotary <= Dh) turn as pairs (i, i + rotary/2) by rope_angle(positions[t], i, rotary,
  // base): y_i = x_i cos - x_{i+R/2} sin, y_{i+R/2} = x_{i+R/2} cos + x_i sin; dims from
  // `rotary` on are copied. positions: I32 [T], >= 0, absolute (a cached decoding step passes
  // offset, offset+1, ...). y has x's shape and dtype. rope_backward: dx += dy turned back (by
  // the negative angle): the transpose of the forward's rotation.
  // slice_last_forward(y, x, offset): y[N, W] = x[N, offset : offset + W] (any leading dims as
  // N; same dtype; 0 <= offset, offset + W <= x's last dim). slice_last_backward:
  // dx[N, offset : offset + W] += dy, which also assembles a concatenation (ops::concat_last).
  // softmax_last_forward(y, x): y[N, C] = exp(x - max) / sum(exp(x - max)) per row
  // (rowwise_problem); softmax_last_backward(dx, dy, y): dx += y ⊙ (dy - sum_c dy ⊙ y), per row.
  // sum_last_forward(y, x): y[N, 1] = sum_c x[N, c] (accumulated in f32); sum_last_backward:
  // dx[N, c] += dy[N, 1].
  // pointwise_forward(y, x, f): y = f(x) for f in Pointwise (exp, sigmoid); any shape, y of x's
  // shape and dtype. pointwise_backward(dx, dy, y, f), from the output: dx += dy ⊙ f'(x), with
  // exp' = y and sigmoid' = y (1 - y).
  // dropout_add_forward(y, x, h, p, rng): y = x + d, d = dropout_forward(h, p, rng) as that op
  // would store it (rounded to the dtype; the same keep mask); x, h, y of one shape and float
  // dtype. Forward only: its gradient is dx += dy, dh += dropout_backward(dy) (ops::dropout_add).
  // rope_frequencies_forward(y, x, positions, freqs): rope_forward with pair i (i < R/2, R = 2
  // |freqs|) turned by rope_frequency_angle(positions[t], freqs[i]) = positions[t] * freqs[i]
  // instead of base's frequency (rope_frequencies_problem); freqs' values finite. Backward as rope's.
  // compare_forward(y, a, b, c): y = 1 where (a c b) holds, else 0, elementwise, b repeated over a
  // (compare_problem); no gradient. permute_forward(y, x, p): y[i_0, .., i_{r-1}] = x at the index
  // whose dim axes[k] is i_k (permute_problem); permute_backward(dx, dy, p): dx += dy permuted back.
#define ABLATE_BACKEND_PUBLIC_OP(name, params, args, checks) void name params;
  ABLATE_BACKEND_OPS(ABLATE_BACKEND_PUBLIC_OP)
#undef ABLATE_BACKEND_PUBLIC_OP

 protected:
  // What a backend implements: every core op, and the optional ops it announces (the others'
  // defaults throw; the contract refuses them before).
#define ABLATE_BACKEND_CORE_VIRTUAL(name, params, args, checks) virtual void do_##name params = 0;
  ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_CORE_VIRTUAL)
#undef ABLATE_BACKEND_CORE_VIRTUAL
#define ABLATE_BACKEND_OPTIONAL_VIRTUAL(name, params, args, checks) virtual void do_##name params;
  ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OPTIONAL_VIRTUAL)
#undef ABLATE_BACKEND_OPTIONAL_VIRTUAL

  // For a backend that wraps another (the run's HostedBackend, a test's forwarder): runs `inner`'s
  // implementation of the op directly, its contract having been checked once, by the wrapper's
  // own public op: forward_<op>(inner, args).
#define ABLATE_BACKEND_FORWARD(name, params, args, checks) \
  static void forward_##name(Backend& inner, ABLATE_BACKEND_UNPAREN params) { inner.do_##name args; }
  ABLATE_BACKEND_OPS(ABLATE_BACKEND_FORWARD)
#undef ABLATE_BACKEND_FORWARD
};

// t's values on the host as floats: F32 copied, BF16 widened (exactly) on the host. For
// logging and decoding, not for hot paths. Synchronises.
std::vector<float> host_floats(Backend& backend, const Tensor& t);

}  // namespace ablate
