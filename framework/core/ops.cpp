// The differentiable ops (framework/include/ablate/ops.hpp). Each op: check shapes, allocate
// the output from the backend, run the forward, and record a closure that runs the backend's
// backward into the inputs' gradient buffers (accumulating, `+=`). Saved tensors live in the
// closure until Graph::backward consumes the tape.
#include "ablate/ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "composed_ops.hpp"

namespace ablate::ops {
namespace {

// t viewed as [rows, last].
Tensor rows2d(const Tensor& t) { return t.reshaped({t.shape().rows(), t.shape().last()}); }

// A gradient output viewed as [rows, last] (or nullptr), with how the op stores it (Graph::grad_out).
struct Grad2d {
  Tensor view;
  GradStore store;
  Tensor* get() { return view.defined() ? &view : nullptr; }
};
Grad2d grad2d(Graph& g, const Var& v) {
  const Graph::GradOut out = g.grad_out(v);
  return Grad2d{out.grad ? rows2d(*out.grad) : Tensor(), out.store};
}

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(std::string("ops::") + op + ": " + what);
}

// A dropout probability p in [0, 1).
void require_dropout_p(const char* op, float p) {
  require(p >= 0.0f && p < 1.0f, op, "p must be in [0, 1), got " + std::to_string(p));
}

// An op with no composition from the core ops, on a backend without `needed`: refused, naming both.
void require_backend_op(Graph& g, OptionalOp needed, const char* op) {
  require(g.backend().supports(needed), op,
          std::string("this backend has no ") + optional_op_name(needed) + " op (Backend::supports) and no composition of " + op +
              " from the core ops exists; run on a backend that has it (reference, onednn)");
}

// What linear and linear_dropout share: the shape check, the FLOPs, y[..., O] and the [N, I] and
// [N, O] views of x and y.
struct LinearCall {
  Tensor y, x2, y2;
};
LinearCall linear_call(Graph& g, const char* op, const Var& x, const Var& w) {
  require(w.shape().rank() == 2 && x.shape().last() == w.shape()[1], op,
          "x " + x.value().str() + " does not match w " + w.value().str() + " ([O, I])");
  const std::int64_t out_features = w.shape()[0];
  LinearCall c;
  c.y = g.backend().empty(x.shape().with_last(out_features), x.dtype());
  c.x2 = rows2d(x.value());
  c.y2 = rows2d(c.y);
  g.add_flops(2.0 * static_cast<double>(c.x2.shape()[0]) * static_cast<double>(out_features) * static_cast<double>(w.shape()[1]));
  return c;
}
const Tensor* opt(const Tensor& t) { return t.defined() ? &t : nullptr; }
const Tensor* opt(const Var& v) { return v.defined() ? &v.value() : nullptr; }
}  // namespace

Var linear(Graph& g, const Var& x, const Var& w, const Var& b, Activation act) {
  Backend& be = g.backend();
  LinearCall c = linear_call(g, "linear", x, w);
  Var out = g.result(c.y, {&x, &w, &b});
  Tensor pre;
  if (out.requires_grad() && activation_needs_pre(act)) pre = be.empty(c.y2.shape(), c.y.dtype());
  be.linear_forward(c.y2, pre.defined() ? &pre : nullptr, c.x2, w.value(), opt(b), act);
  g.record(out, [&g, x, w, b, x2 = c.x2, y2 = c.y2, pre, act](const Tensor& dy) {
    Grad2d dx = grad2d(g, x);
    Tensor* db = b.defined() ? g.grad_buffer(b) : nullptr;
    g.backend().linear_backward(dx.get(), g.grad_buffer(w), db, rows2d(dy), x2, w.value(), opt(pre), y2, act, dx.store);
  });
  return out;
}

Var linear_dropout(Graph& g, const Var& x, const Var& w, const Var& b, Activation act, float p) {
  require_dropout_p("linear_dropout", p);
  Backend& be = g.backend();
  if (!g.training() || p == 0.0f || !be.supports(OptionalOp::linear_dropout)) return dropout(g, linear(g, x, w, b, act), p);
  const RngKey key = g.next_rng();  // the one draw dropout(g, linear(...), p) would take
  LinearCall c = linear_call(g, "linear_dropout", x, w);
  Var out = g.result(c.y, {&x, &w, &b});
  Tensor slope;  // act' where kept (ReLU's backward reads y's sign instead)
  if (out.requires_grad() && act != Activation::ReLU) slope = be.empty(c.y2.shape(), DType::F32);
  Tensor* slope_out = slope.defined() ? &slope : nullptr;
  be.linear_dropout_forward(c.y2, slope_out, c.x2, w.value(), opt(b), act, p, key);
  g.record(out, [&g, x, w, b, x2 = c.x2, y2 = c.y2, slope, act, p](const Tensor& dy) {
    Grad2d dx = grad2d(g, x);
    Tensor* db = b.defined() ? g.grad_buffer(b) : nullptr;
    g.backend().linear_dropout_backward(dx.get(), g.grad_buffer(w), db, rows2d(dy), x2, w.value(), opt(slope), y2, act, p,
                                        dx.store);
  });
  return out;
}

Var matmul(Graph& g, const Var& a, const Var& b, bool trans_a, bool trans_b, float alpha) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  require(as.rank() == 3 && bs.rank() == 3 && as[0] == bs[0], "matmul",
          "expects a[Bt, M, K] and b[Bt, K, N], got " + a.value().str() + " and " + b.value().str());
  const std::int64_t m = trans_a ? as[2] : as[1], k = trans_a ? as[1] : as[2];
  const std::int64_t kb = trans_b ? bs[2] : bs[1], n = trans_b ? bs[1] : bs[2];
  require(k == kb, "matmul", "inner dimensions differ: " + a.value().str() + " and " + b.value().str());
  Tensor c = g.backend().empty({as[0], m, n}, a.dtype());
  g.add_flops(2.0 * static_cast<double>(as[0]) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  g.backend().matmul_forward(c, a.value(), b.value(), trans_a, trans_b, alpha);
  Var out = g.result(c, {&a, &b});
  g.record(out, [&g, a, b, trans_a, trans_b, alpha](const Tensor& dc) {
    g.backend().matmul_backward(g.grad_buffer(a), g.grad_buffer(b), dc, a.value(), b.value(), trans_a, trans_b, alpha);
  });
  return out;
}

namespace {

// x[..., C] -> [..., width] (width >= C), zeros after column C.
Var pad_last(Graph& g, const Var& x, std::int64_t width) {
  if (x.shape().last() == width) return x;
  Tensor zeros = g.backend().empty(x.shape().with_last(width - x.shape().last()), x.dtype());
  g.backend().fill(zeros, 0.0f);
  return concat_last(g, x, g.constant(zeros));
}

}  // namespace

namespace {

// One attention part (q, k or v) as its gradient sees it: the Var, and the columns of its rows the
// part's heads take (all of them in the split layout).
struct AttentionPart {
  const Var* x;
  std::int64_t col, width;
};

// The gradient outputs of q, k, v: a Var's parts write its new buffer when between them they cover
// its columns exactly once (a fused projection's q, k, v packed; a Var of its own in the split
// layout); otherwise (two parts on one split Var, or columns no part takes) they add into a zeroed one.
std::array<Graph::GradOut, 3> attention_grads(Graph& g, const std::array<AttentionPart, 3>& parts) {
  std::array<Graph::GradOut, 3> out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor* node = &parts[i].x->value();
    std::size_t first = 0;
    while (&parts[first].x->value() != node) ++first;
    if (first != i) {  // the node's first part decided
      out[i] = out[first];
      continue;
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> cols;  // [col, col + width) of the node's parts
    for (const AttentionPart& p : parts)
      if (&p.x->value() == node) cols.emplace_back(p.col, p.col + p.width);
    std::sort(cols.begin(), cols.end());
    std::int64_t at = 0;
    bool tiles = true;
    for (const auto& [from, to] : cols) {
      tiles = tiles && from == at;
      at = to;
    }
    tiles = tiles && at == node->shape().last();
    out[i] = tiles ? g.grad_out(*parts[i].x) : Graph::GradOut{g.grad_buffer(*parts[i].x), GradStore::Add};
  }
  return out;
}

// Packed heads on a backend without them: each part's heads split out of its rows (straight from an
// equal part of a fused projection, else from the columns cut first), attention, the heads merged.
Var split_packed_attention(Graph& g, const Var& q, const Var& k, const Var& v, const PackedHeads& layout,
                           const AttentionOptions& options) {
  const std::int64_t Dh = layout.head_dim;
  const auto heads_of = [&](const Var& x, std::int64_t col, std::int64_t n) {
    const std::int64_t w = n * Dh, W = x.shape().last();
    if (W % w == 0 && col % w == 0)
      return split_heads(g, x, static_cast<int>(n), static_cast<int>(W / w), static_cast<int>(col / w));
    return split_heads(g, slice_last(g, x, col, w), static_cast<int>(n));
  };
  return merge_heads(g, attention(g, heads_of(q, layout.q_col, layout.heads), heads_of(k, layout.k_col, layout.kv_heads),
                                  heads_of(v, layout.v_col, layout.kv_heads), options));
}

// The attention node, split or packed (`layout`): its contract checked once (errors named `op`),
// what the backend lacks composed (packed heads split and merged; k/v heads repeated), then the
// params from the options, the output, the FLOP count, the backward.
Var attention_node(Graph& g, const char* op, const Var& q, const Var& k, const Var& v, const PackedHeads& layout,
                   const AttentionOptions& options) {
  AttentionParams p;
  p.packed = layout;
  p.causal = options.causal;
  p.key_lengths = options.key_lengths;
  p.query_offset = options.query_offset;
  p.softcap = options.softcap;
  const Var bias = options.bias;
  const Tensor slopes = options.slopes;
  if (bias.defined()) p.bias = &bias.value();
  if (slopes.defined()) p.slopes = &slopes;
  const std::string problem = attention_problem(q.value(), k.value(), v.value(), p);
  require(problem.empty(), op, problem);
  Backend& be = g.backend();
  require(!(bias.defined() || slopes.defined()) || be.supports(OptionalOp::attention_bias), "attention",
          "this backend has no attention logit bias or ALiBi slopes (Backend::supports); run on reference or onednn");
  require(p.softcap == 0.0f || be.supports(OptionalOp::attention_softcap), "attention",
          "this backend has no attention logit soft-capping (Backend::supports); run on reference or onednn");
  const AttentionShape a = attention_shape(q.value(), k.value(), p);
  const bool repeat = a.Hkv != a.H && !be.supports(OptionalOp::grouped_attention);
  if (layout.packed() && (repeat || !be.supports(OptionalOp::packed_heads)))
    return split_packed_attention(g, q, k, v, layout, options);
  if (repeat)  // composed: k/v heads repeated
    return attention(g, q, composed::repeat_heads(g, k, a.H), composed::repeat_heads(g, v, a.H), options);
  p.scale = options.scale != 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(a.Dh));
  if (g.training() && options.dropout > 0.0f) {
    p.dropout = options.dropout;
    p.rng = g.next_rng();
  }
  Tensor out = be.empty(attention_out_shape(q.value(), p), q.dtype());
  Tensor lse = be.empty({a.B, a.H, a.T}, DType::F32);
  if (options.probs) *options.probs = be.empty({a.B, a.H, a.T, a.S}, DType::F32);
  // q k^T and p v in full ([B, H, T, S] each, masks not subtracted: bench/compare.py's convention)
  const std::int64_t dv = layout.packed() ? a.Dh : v.shape()[3];
  const double pairs = static_cast<double>(a.B) * static_cast<double>(a.H) * static_cast<double>(a.T) * static_cast<double>(a.S);
  g.add_flops(2.0 * pairs * static_cast<double>(a.Dh + dv));
  be.attention_forward(out, lse, options.probs, q.value(), k.value(), v.value(), p);
  Var result = bias.defined() ? g.result(out, {&q, &k, &v, &bias}) : g.result(out, {&q, &k, &v});
  g.record(result, [&g, q, k, v, out, lse, p, bias, slopes, a](const Tensor& dout) {
    AttentionParams bp = p;  // pointing into this closure's own copies
    bp.bias = bias.defined() ? &bias.value() : nullptr;
    bp.slopes = slopes.defined() ? &slopes : nullptr;
    bp.dbias = bias.defined() ? g.grad_buffer(bias) : nullptr;
    const PackedHeads& l = p.packed;
    const auto part = [&](const Var& x, std::int64_t col, std::int64_t heads) {
      return l.packed() ? AttentionPart{&x, col, heads * a.Dh} : AttentionPart{&x, 0, x.shape().last()};
    };
    const std::array<Graph::GradOut, 3> d =
        attention_grads(g, {part(q, l.q_col, a.H), part(k, l.k_col, a.Hkv), part(v, l.v_col, a.Hkv)});
    bp.dq_store = d[0].store;
    bp.dk_store = d[1].store;
    bp.dv_store = d[2].store;
    g.backend().attention_backward(d[0].grad, d[1].grad, d[2].grad, dout, out, lse, q.value(), k.value(), v.value(), bp);
  });
  return result;
}

}  // namespace

Var attention(Graph& g, const Var& q, const Var& k, const Var& v, const AttentionOptions& options) {
  const Shape& qs = q.shape();
  const Shape& vs = v.shape();
  if (qs.rank() == 4 && k.shape().rank() == 4 && vs.rank() == 4 && vs[3] != qs[3] && vs[3] > 0 &&
      vs.with_last(1) == k.shape().with_last(1)) {
    // v of another width than q and k: the backend op at the wider width W, zero columns added
    // (q·k and p·v unchanged), then the output cut to v's width.
    const std::int64_t W = std::max(qs[3], vs[3]);
    AttentionOptions o = options;
    if (o.scale == 0.0f) o.scale = 1.0f / std::sqrt(static_cast<float>(qs[3]));
    const Var out = attention(g, pad_last(g, q, W), pad_last(g, k, W), pad_last(g, v, W), o);
    return vs[3] < W ? slice_last(g, out, 0, vs[3]) : out;
  }
  return attention_node(g, "attention", q, k, v, PackedHeads{}, options);
}

Var packed_attention(Graph& g, const Var& q, const Var& k, const Var& v, const PackedHeads& layout,
                     const AttentionOptions& options) {
  require(layout.packed(), "packed_attention", "the layout has no heads (PackedHeads::heads must be > 0)");
  return attention_node(g, "packed_attention", q, k, v, layout, options);
}

Var rope(Graph& g, const Var& x, const Tensor& positions, int rotary, float base) {
  const Shape& s = x.shape();
  if (rotary == 0 && s.rank() == 4) rotary = static_cast<int>(s[3]);
  const std::string problem = rope_problem(x.value(), positions, rotary, base);
  require(problem.empty(), "rope", problem);
  if (!g.backend().supports(OptionalOp::rope)) return composed::rope(g, x, positions, rotary, base);
  Tensor y = g.backend().empty(s, x.dtype());
  g.backend().rope_forward(y, x.value(), positions, rotary, base);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, positions, rotary, base](const Tensor& dy) {
    g.backend().rope_backward(*g.grad_buffer(x), dy, positions, rotary, base);
  });
  return out;
}

Var rope(Graph& g, const Var& x, const Tensor& positions, const Tensor& freqs) {
  const std::string problem = rope_frequencies_problem(x.value(), positions, freqs);
  require(problem.empty(), "rope", problem);
  if (!g.backend().supports(OptionalOp::rope_frequencies)) return composed::rope(g, x, positions, freqs);
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().rope_frequencies_forward(y, x.value(), positions, freqs);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, positions, freqs](const Tensor& dy) {
    g.backend().rope_frequencies_backward(*g.grad_buffer(x), dy, positions, freqs);
  });
  return out;
}

Var slice_last(Graph& g, const Var& x, std::int64_t offset, std::int64_t width) {
  const Shape& s = x.shape();
  require(s.rank() > 0 && width > 0 && offset >= 0 && offset + width <= s.last(), "slice_last",
          "[" + std::to_string(offset) + ", " + std::to_string(offset + width) + ") is not inside the last dim of x " +
              x.value().str());
  if (!g.backend().supports(OptionalOp::slice_last)) return composed::slice_last(g, x, offset, width);
  Tensor y = g.backend().empty(s.with_last(width), x.dtype());
  g.backend().slice_last_forward(y, x.value(), offset);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, offset](const Tensor& dy) { g.backend().slice_last_backward(*g.grad_buffer(x), dy, offset); });
  return out;
}

namespace {

// The checks every row-wise optional op shares (its input's contract, rowwise_input_problem);
// whether the backend has it (else the caller composes it).
bool rowwise_supported(Graph& g, OptionalOp op, const Var& x) {
  const std::string problem = rowwise_input_problem(x.value());
  require(problem.empty(), optional_op_name(op), problem);
  return g.backend().supports(op);
}

Var pointwise(Graph& g, const Var& x, Pointwise f) {
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().pointwise_forward(y, x.value(), f);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, y, f](const Tensor& dy) { g.backend().pointwise_backward(*g.grad_buffer(x), dy, y, f); });
  return out;
}

}  // namespace

Var softmax_last(Graph& g, const Var& x) {
  if (!rowwise_supported(g, OptionalOp::softmax_last, x)) return composed::softmax_last(g, x);
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().softmax_last_forward(y, x.value());
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, y](const Tensor& dy) { g.backend().softmax_last_backward(*g.grad_buffer(x), dy, y); });
  return out;
}

Var sum_last(Graph& g, const Var& x) {
  if (!rowwise_supported(g, OptionalOp::sum_last, x)) return composed::sum_last(g, x);
  Tensor y = g.backend().empty(x.shape().with_last(1), x.dtype());
  g.backend().sum_last_forward(y, x.value());
  Var out = g.result(y, {&x});
  g.record(out, [&g, x](const Tensor& dy) { g.backend().sum_last_backward(*g.grad_buffer(x), dy); });
  return out;
}

// Composed: no backend op of its own.
Var mean_last(Graph& g, const Var& x) { return scale(g, sum_last(g, x), 1.0f / static_cast<float>(x.shape().last())); }

Var exp(Graph& g, const Var& x) {
  if (!rowwise_supported(g, OptionalOp::pointwise, x)) require_backend_op(g, OptionalOp::pointwise, "exp");
  return pointwise(g, x, Pointwise::exp);
}
Var sigmoid(Graph& g, const Var& x) {
  if (!rowwise_supported(g, OptionalOp::pointwise, x)) return composed::sigmoid(g, x);
  return pointwise(g, x, Pointwise::sigmoid);
}

Var reshape(Graph& g, const Var& x, const Shape& shape) {
  require(shape.numel() == x.shape().numel(), "reshape",
          "x " + x.value().str() + " has " + std::to_string(x.shape().numel()) + " elements, " + shape.str() + " holds " +
              std::to_string(shape.numel()));
  Var out = g.result(x.value().reshaped(shape), {&x});
  const Shape from = x.shape();
  g.record(out, [&g, x, from](const Tensor& dy) {
    if (!g.pass_grad(x, dy.reshaped(from))) g.backend().axpy(*g.grad_buffer(x), dy.reshaped(from), 1.0f);
  });
  return out;
}

Var concat_last(Graph& g, const Var& a, const Var& b) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  require(as.rank() == bs.rank() && as.with_last(1) == bs.with_last(1) && a.dtype() == b.dtype(), "concat_last",
          "a " + a.value().str() + " and b " + b.value().str() + " must differ in the last dim only");
  if (!g.backend().supports(OptionalOp::slice_last)) return composed::concat_last(g, a, b);
  const std::int64_t wa = as.last(), wb = bs.last();
  Tensor y = g.backend().empty(as.with_last(wa + wb), a.dtype());
  g.backend().fill(y, 0.0f);
  g.backend().slice_last_backward(y, a.value(), 0);  // y[..., 0:wa] += a
  g.backend().slice_last_backward(y, b.value(), wa);
  Var out = g.result(y, {&a, &b});
  g.record(out, [&g, a, b, wa](const Tensor& dy) {  // each part's gradient: its slice of dy
    const std::pair<const Var*, std::int64_t> parts[] = {{&a, 0}, {&b, wa}};
    for (const auto& [v, offset] : parts) {
      Tensor* d = g.grad_buffer(*v);
      if (!d) continue;
      Tensor part = g.backend().empty(v->shape(), dy.dtype());
      g.backend().slice_last_forward(part, dy, offset);
      g.backend().axpy(*d, part, 1.0f);
    }
  });
  return out;
}

Var iota(Graph& g, const Shape& shape, float start, float step, DType dtype) {
  require(dtype == DType::F32 || dtype == DType::BF16, "iota", "dtype must be f32 or bf16");
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(static_cast<double>(start) + static_cast<double>(step) * static_cast<double>(i));
  return composed::constant(g, shape, dtype, values);
}

Var compare(Graph& g, const Var& a, const Var& b, Compare c) {
  const std::string problem = compare_problem(a.value(), a.value(), b.value());  // y is a's shape and dtype
  require(problem.empty(), "compare", problem);
  require_backend_op(g, OptionalOp::compare, "compare");
  Tensor y = g.backend().empty(a.shape(), a.dtype());
  g.backend().compare_forward(y, a.value(), b.value(), c);
  return g.constant(y);  // a mask: no gradient flows through a comparison
}

Var permute(Graph& g, const Var& x, const std::vector<int>& axes) {
  Permutation p;
  require(axes.size() <= static_cast<std::size_t>(Shape::kMaxRank), "permute",
          std::to_string(axes.size()) + " axes; x " + x.value().str() + " needs its rank");
  p.rank = static_cast<int>(axes.size());
  std::copy(axes.begin(), axes.end(), p.axes);
  const std::string problem = permutation_problem(p, x.value());
  require(problem.empty(), "permute", problem);
  require_backend_op(g, OptionalOp::permute, "permute");
  std::vector<std::int64_t> dims(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) dims[i] = x.shape()[axes[i]];
  Tensor y = g.backend().empty(Shape(dims), x.dtype());
  g.backend().permute_forward(y, x.value(), p);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, p](const Tensor& dy) { g.backend().permute_backward(*g.grad_buffer(x), dy, p); });
  return out;
}

Var layer_norm(Graph& g, const Var& x, const Var& gamma, const Var& beta, float eps) {
  const std::int64_t d = x.shape().last();
  require(gamma.shape() == Shape{d} && beta.shape() == Shape{d}, "layer_norm",
          "gamma/beta must be [" + std::to_string(d) + "] for x " + x.value().str());
  Backend& be = g.backend();
  Tensor y = be.empty(x.shape(), x.dtype());
  Tensor mean = be.empty({x.shape().rows()}, DType::F32), rstd = be.empty({x.shape().rows()}, DType::F32);
  Tensor x2 = rows2d(x.value()), y2 = rows2d(y);
  be.layer_norm_forward(y2, mean, rstd, x2, gamma.value(), beta.value(), eps);
  Var out = g.result(y, {&x, &gamma, &beta});
  g.record(out, [&g, x, gamma, beta, x2, mean, rstd](const Tensor& dy) {
    Grad2d dx = grad2d(g, x);
    g.backend().layer_norm_backward(dx.get(), g.grad_buffer(gamma), g.grad_buffer(beta), rows2d(dy), x2, mean, rstd,
                                    gamma.value(), dx.store);
  });
  return out;
}

Var rms_norm(Graph& g, const Var& x, const Var& gamma, float eps) {
  const std::int64_t d = x.shape().last();
  require(gamma.shape() == Shape{d}, "rms_norm", "gamma must be [" + std::to_string(d) + "] for x " + x.value().str());
  Backend& be = g.backend();
  Tensor y = be.empty(x.shape(), x.dtype());
  Tensor rstd = be.empty({x.shape().rows()}, DType::F32);
  Tensor x2 = rows2d(x.value()), y2 = rows2d(y);
  be.rms_norm_forward(y2, rstd, x2, gamma.value(), eps);
  Var out = g.result(y, {&x, &gamma});
  g.record(out, [&g, x, gamma, x2, rstd](const Tensor& dy) {
    Grad2d dx = grad2d(g, x);
    g.backend().rms_norm_backward(dx.get(), g.grad_buffer(gamma), rows2d(dy), x2, rstd, gamma.value(), dx.store);
  });
  return out;
}

Var activation(Graph& g, const Var& x, Activation act) {
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().activation_forward(y, x.value(), act);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, act](const Tensor& dy) { g.backend().activation_backward(*g.grad_buffer(x), dy, x.value(), act); });
  return out;
}

namespace {

// The broadcast of add and mul, checked once: b is a's shape, a's trailing dimensions (a [T, D]
// table over [B, T, D], a [D] gate per channel; leading 1s of b are ignored), or one element.
void require_repeats_over(const char* op, const Var& a, const Var& b) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  bool ok = bs.numel() == 1;
  if (!ok) {
    int lead = 0;  // b's leading 1s
    while (lead < bs.rank() - 1 && bs[lead] == 1) ++lead;
    const int k = bs.rank() - lead;
    ok = k <= as.rank();
    for (int i = 0; ok && i < k; ++i) ok = bs[lead + i] == as[as.rank() - k + i];
  }
  require(ok, op,
          "b " + b.value().str() + " must be a's shape, a's trailing dimensions or a single element (a " + a.value().str() + ")");
}

}  // namespace

Var add(Graph& g, const Var& a, const Var& b, float alpha, float beta) {
  require_repeats_over("add", a, b);
  Tensor y = g.backend().empty(a.shape(), a.dtype());
  g.backend().add_forward(y, a.value(), b.value(), alpha, beta);
  Var out = g.result(y, {&a, &b});
  g.record(out, [&g, a, b, alpha, beta](const Tensor& dy) {
    Tensor* db = g.grad_buffer(b);  // first: a that is b then has a buffer and accumulates
    Tensor* da = alpha == 1.0f && g.pass_grad(a, dy) ? nullptr : g.grad_buffer(a);
    if (da || db) g.backend().add_backward(da, db, dy, alpha, beta);
  });
  return out;
}

Var mul(Graph& g, const Var& a, const Var& b) {
  require_repeats_over("mul", a, b);
  Tensor y = g.backend().empty(a.shape(), a.dtype());
  g.backend().mul_forward(y, a.value(), b.value());
  Var out = g.result(y, {&a, &b});
  g.record(out, [&g, a, b](const Tensor& dy) {
    g.backend().mul_backward(g.grad_buffer(a), g.grad_buffer(b), dy, a.value(), b.value());
  });
  return out;
}

Var scale(Graph& g, const Var& x, float alpha) {
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().fill(y, 0.0f);
  g.backend().axpy(y, x.value(), alpha);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, alpha](const Tensor& dy) { g.backend().axpy(*g.grad_buffer(x), dy, alpha); });
  return out;
}

namespace {
// dx (+)= dropout_backward(dy): into a fresh buffer as dropout_forward of dy (the same key, so the
// same mask and scale: the values the accumulation into zeros would give), else added.
void dropout_grad(Graph& g, const Var& x, const Tensor& dy, float p, const RngKey& key) {
  if (Tensor* fresh = g.fresh_grad_buffer(x))
    g.backend().dropout_forward(*fresh, dy, p, key);
  else if (Tensor* dx = g.grad_buffer(x))
    g.backend().dropout_backward(*dx, dy, p, key);
}
}  // namespace

Var dropout(Graph& g, const Var& x, float p) {
  require_dropout_p("dropout", p);
  if (!g.training() || p == 0.0f) return x;
  const RngKey key = g.next_rng();
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().dropout_forward(y, x.value(), p, key);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, p, key](const Tensor& dy) { dropout_grad(g, x, dy, p, key); });
  return out;
}

Var dropout_add(Graph& g, const Var& x, const Var& h, float p) {
  require_dropout_p("dropout_add", p);
  if (!g.training() || p == 0.0f || !g.backend().supports(OptionalOp::dropout_add) || x.shape() != h.shape() ||
      x.dtype() != h.dtype())
    return add(g, x, dropout(g, h, p));
  const RngKey key = g.next_rng();  // the one draw dropout(g, h, p) would take
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().dropout_add_forward(y, x.value(), h.value(), p, key);
  Var out = g.result(y, {&x, &h});
  g.record(out, [&g, x, h, p, key](const Tensor& dy) {
    dropout_grad(g, h, dy, p, key);  // first: x that is h accumulates
    if (!g.pass_grad(x, dy)) g.backend().axpy(*g.grad_buffer(x), dy, 1.0f);
  });
  return out;
}

Var embedding(Graph& g, const Tensor& ids, const Var& table) {
  require(ids.dtype() == DType::I32 && ids.shape().rank() < Shape::kMaxRank && table.shape().rank() == 2, "embedding",
          "expects ids I32 of rank < 4 and table [V, D], got " + ids.str() + " and " + table.value().str());
  std::vector<std::int64_t> dims = ids.shape().dims();
  dims.push_back(table.shape()[1]);
  Tensor y = g.backend().empty(Shape(dims), table.dtype());
  const Tensor flat_ids = ids.reshaped({ids.numel()});
  Tensor y2 = rows2d(y);
  g.backend().embedding_forward(y2, flat_ids, table.value());
  Var out = g.result(y, {&table});
  g.record(out, [&g, table, flat_ids](const Tensor& dy) {
    g.backend().embedding_backward(*g.grad_buffer(table), rows2d(dy), flat_ids);
  });
  return out;
}

Var split_heads(Graph& g, const Var& x, int heads, int parts, int part) {
  const Shape& xs = x.shape();
  require(xs.rank() == 3 && heads > 0 && parts > 0 && part >= 0 && part < parts && xs[2] % (heads * parts) == 0, "split_heads",
          "x " + x.value().str() + " cannot hold " + std::to_string(parts) + " parts of " + std::to_string(heads) + " heads");
  const std::int64_t dh = xs[2] / (heads * parts);
  Tensor y = g.backend().empty({xs[0], heads, xs[1], dh}, x.dtype());
  g.backend().split_heads_forward(y, x.value(), parts, part);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x, parts, part](const Tensor& dy) {
    Tensor* fresh = parts == 1 ? g.fresh_grad_buffer(x) : nullptr;  // one part: dy merged is all of dx
    if (fresh)
      g.backend().merge_heads_forward(*fresh, dy);
    else if (Tensor* dx = g.grad_buffer(x))
      g.backend().split_heads_backward(*dx, dy, parts, part);
  });
  return out;
}

Var merge_heads(Graph& g, const Var& x) {
  const Shape& xs = x.shape();
  require(xs.rank() == 4, "merge_heads", "expects x[B, H, T, Dh], got " + x.value().str());
  Tensor y = g.backend().empty({xs[0], xs[2], xs[1] * xs[3]}, x.dtype());
  g.backend().merge_heads_forward(y, x.value());
  Var out = g.result(y, {&x});
  g.record(out, [&g, x](const Tensor& dy) {
    if (Tensor* fresh = g.fresh_grad_buffer(x))  // dy split into heads is all of dx
      g.backend().split_heads_forward(*fresh, dy, 1, 0);
    else if (Tensor* dx = g.grad_buffer(x))
      g.backend().merge_heads_backward(*dx, dy);
  });
  return out;
}

CrossEntropyResult cross_entropy(Graph& g, const Var& logits, const Tensor& targets, std::int32_t ignore_index,
                                 float label_smoothing) {
  require(targets.dtype() == DType::I32 && targets.numel() == logits.shape().rows(), "cross_entropy",
          "targets " + targets.str() + " must be I32 with one entry per row of logits " + logits.value().str());
  Backend& be = g.backend();
  Tensor loss = be.empty({1}, DType::F32);
  Tensor dlogits = be.empty({logits.shape().rows(), logits.shape().last()}, logits.dtype());
  Tensor stats = be.empty({2}, DType::F32);
  be.cross_entropy_forward(loss, dlogits, stats, rows2d(logits.value()), targets.reshaped({targets.numel()}), ignore_index,
                           label_smoothing);
  float host_stats[2] = {0.0f, 0.0f};
  be.copy_to_host(host_stats, stats);
  CrossEntropyResult r;
  r.loss = g.result(loss, {&logits});
  r.rows = host_stats[0];
  r.correct = host_stats[1];
  g.record(r.loss, [&g, logits, dlogits](const Tensor& dloss) {
    float scale = 0.0f;  // d(total)/d(loss): 1 when the loss is the objective itself
    g.backend().copy_to_host(&scale, dloss);
    // The objective itself: dlogits is the gradient, handed over (no zero-fill, no pass over it).
    if (scale == 1.0f && g.pass_grad(logits, dlogits.reshaped(logits.shape()))) return;
    Tensor dx = rows2d(*g.grad_buffer(logits));  // axpy adds: a zeroed buffer when new
    g.backend().axpy(dx, dlogits, scale);
  });
  return r;
}

Var cast(Graph& g, const Var& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor y = g.backend().empty(x.shape(), dtype);
  g.backend().cast(y, x.value());
  Var out = g.result(y, {&x});
  g.record(out, [&g, x](const Tensor& dy) { g.backend().axpy(*g.grad_buffer(x), dy, 1.0f); });
  return out;
}

}  // namespace ablate::ops
