// The argument contract of every Backend op, checked once for every backend
// (ablate/backend_contract.hpp), and Backend's public ops, which enforce it: each checks its
// contract, then runs the backend's do_<op>. The rules are those ablate/backend.hpp documents.
#include "ablate/backend_contract.hpp"

#include <algorithm>

#include "ablate/error.hpp"

namespace ablate::contract {
namespace {

std::string with(const char* name, const Tensor& t) { return std::string(name) + " " + t.str(); }

void allocated(const char* op, const char* name, const Tensor& t) {
  if (!t.defined()) fail(op, std::string(name) + " is not allocated");
}

void supported(const Backend& be, OptionalOp which, const char* op) {
  if (!be.supports(which))
    throw Error(
        std::string("Backend::") + op + ": this backend has no " + optional_op_name(which) + " (Backend::supports says no)",
        "call it through ablate::ops, which composes it from the core ops where it can, or run on a backend "
        "that has it (`ablate plugins` lists them)");
}

// A dropout probability (`name`: how the op calls it) in [0, 1).
void dropout_p(const char* op, float p, const char* name = "p") {
  if (!(p >= 0.0f && p < 1.0f)) fail(op, std::string(name) + " " + std::to_string(p) + " must be in [0, 1)");
}

// linear's [N, I] x and [O, I] w; returns O.
std::int64_t linear_out(const char* op, const Tensor& x, const Tensor& w) {
  value(op, "x", x);
  same_dtype(op, "w", w, "x", x);
  if (w.shape().rank() != 2 || w.shape()[1] != x.shape().last())
    fail(op, with("w", w) + " must be [O, I] with I of " + with("x", x));
  return w.shape()[0];
}

// c: [Bt, M, N]; a: [Bt, M, K] (trans_a: [Bt, K, M]); b: [Bt, K, N] (trans_b: [Bt, N, K]); any
// rank >= 2, all dims but the last two being the batch Bt (one product for a, b and c).
void matmul_shapes(const char* op, const char* c_name, const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a,
                   bool trans_b) {
  value(op, "a", a);
  same_dtype(op, "b", b, "a", a);
  same_dtype(op, c_name, c, "a", a);
  const Shape &sa = a.shape(), &sb = b.shape(), &sc = c.shape();
  if (sa.rank() < 2 || sb.rank() < 2 || sc.rank() < 2)
    fail(op, with("a", a) + ", " + with("b", b) + " and " + with(c_name, c) + " must have rank >= 2");
  const std::int64_t a0 = sa[sa.rank() - 2], a1 = sa[sa.rank() - 1], b0 = sb[sb.rank() - 2], b1 = sb[sb.rank() - 1];
  const std::int64_t M = trans_a ? a1 : a0, K = trans_a ? a0 : a1, Kb = trans_b ? b1 : b0, N = trans_b ? b0 : b1;
  const auto batch = [](const Shape& s) { return s.numel() / std::max<std::int64_t>(1, s[s.rank() - 2] * s[s.rank() - 1]); };
  if (Kb != K || sc[sc.rank() - 2] != M || sc[sc.rank() - 1] != N || batch(sa) != batch(sc) || batch(sb) != batch(sc))
    fail(op, std::string("shapes do not match: ") + with("a", a) + (trans_a ? "^T" : "") + ", " + with("b", b) +
                 (trans_b ? "^T" : "") + ", " + with(c_name, c));
}

// q/k/v, lse, key_lengths, dropout and what `be` supports: attention's common arguments.
void attention_common(const Backend& be, const char* op, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                      const AttentionParams& p) {
  value(op, "q", q);
  same_dtype(op, "k", k, "q", q);
  same_dtype(op, "v", v, "q", q);
  if (const std::string problem = attention_problem(q, k, v, p); !problem.empty()) fail(op, problem);
  if (p.packed.packed()) supported(be, OptionalOp::packed_heads, op);
  const AttentionShape a = attention_shape(q, k, p);
  const std::int64_t B = a.B, H = a.H, T = a.T;
  dtype(op, "lse", lse, DType::F32);
  shape(op, "lse", lse, Shape{B, H, T});
  if (p.key_lengths != nullptr) {
    dtype(op, "key_lengths", *p.key_lengths, DType::I32);
    shape(op, "key_lengths", *p.key_lengths, Shape{B});
  }
  dropout_p(op, p.dropout, "dropout");
  if (p.bias || p.slopes) supported(be, OptionalOp::attention_bias, op);
  if (p.softcap > 0.0f) supported(be, OptionalOp::attention_softcap, op);
  if (a.Hkv != H) supported(be, OptionalOp::grouped_attention, op);
}

// x: [N, D] (any leading dims); gamma (and beta): [D] in x's dtype; statistics F32 [N].
void norm_common(const char* op, const Tensor& x, const Tensor& gamma, const Tensor* beta) {
  value(op, "x", x);
  same_dtype(op, "gamma", gamma, "x", x);
  shape(op, "gamma", gamma, Shape{x.shape().last()});
  if (beta) {
    same_dtype(op, "beta", *beta, "x", x);
    shape(op, "beta", *beta, Shape{x.shape().last()});
  }
}
void statistic(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  dtype(op, name, t, DType::F32);
  numel(op, name, t, x.shape().rows());
}

// b (or db) repeats over the leading elements of a (or dy): its numel divides theirs.
void repeats(const char* op, const char* b_name, const Tensor& b, const char* a_name, const Tensor& a) {
  if (b.numel() == 0 || a.numel() % b.numel() != 0)
    fail(op, with(b_name, b) + " must have a number of elements dividing that of " + with(a_name, a));
}

// A parameter gradient that is not shaped like its value (db of add, dtable): f32 or dy's dtype.
void param_grad_dtype(const char* op, const char* name, const Tensor& g, const Tensor& dy) {
  value(op, name, g);
  if (g.dtype() != dy.dtype() && g.dtype() != DType::F32)
    fail(op, with(name, g) + " must be f32 or the dtype of " + with("dy", dy));
}

void dropout_common(const char* op, const char* out_name, const Tensor& out, const char* in_name, const Tensor& in, float p) {
  value(op, in_name, in);
  same_dtype(op, out_name, out, in_name, in);
  shape(op, out_name, out, in.shape());
  dropout_p(op, p);
}

// y (or dy): [N, D] for ids I32 (any shape, N elements) and table (or dtable) [V, D].
void embedding_common(const char* op, const char* y_name, const Tensor& y, const Tensor& ids, const char* table_name,
                      const Tensor& table) {
  dtype(op, "ids", ids, DType::I32);
  if (table.shape().rank() != 2) fail(op, with(table_name, table) + " must be [V, D]");
  if (y.shape().rows() != ids.numel() || y.shape().last() != table.shape()[1])
    fail(op, with(y_name, y) + " must be [N, D] for " + with("ids", ids) + " and " + with(table_name, table));
}

// x: [B, T, P*H*Dh] holding `parts` parts, y: [B, H, T, Dh]; 0 <= part < parts.
void split_common(const char* op, const char* y_name, const Tensor& y, const char* x_name, const Tensor& x, int parts, int part) {
  value(op, x_name, x);
  same_dtype(op, y_name, y, x_name, x);
  if (y.shape().rank() != 4 || x.shape().rank() != 3)
    fail(op, with(x_name, x) + " must be [B, T, P*H*Dh] and " + with(y_name, y) + " [B, H, T, Dh]");
  if (parts < 1 || part < 0 || part >= parts)
    fail(op, "part " + std::to_string(part) + " must be in [0, parts = " + std::to_string(parts) + ")");
  const Shape& s = y.shape();
  shape(op, x_name, x, Shape{s[0], s[2], parts * s[1] * s[3]});
}

// x: [B, H, T, Dh] -> y: [B, T, H*Dh].
void merge_common(const char* op, const char* y_name, const Tensor& y, const char* x_name, const Tensor& x) {
  value(op, x_name, x);
  same_dtype(op, y_name, y, x_name, x);
  if (x.shape().rank() != 4) fail(op, with(x_name, x) + " must be [B, H, T, Dh]");
  const Shape& s = x.shape();
  shape(op, y_name, y, Shape{s[0], s[2], s[1] * s[3]});
}

void rope_common(const char* op, const Tensor& x, const Tensor& positions, int rotary, float base) {
  value(op, "x", x);
  if (const std::string p = rope_problem(x, positions, rotary, base); !p.empty()) fail(op, p);
}

void slice_common(const char* op, const Tensor& whole, const Tensor& part, std::int64_t offset) {
  value(op, "whole", whole);
  if (const std::string p = slice_last_problem(whole, part, offset); !p.empty()) fail(op, p);
}

void rowwise_common(const char* op, const Tensor& x, const Tensor& y, bool reduces) {
  value(op, "x", x);
  if (const std::string p = rowwise_problem(x, y, reduces); !p.empty()) fail(op, p);
}

}  // namespace

// ---------------------------------------------------------------------------- building blocks

void fail(const char* op, const std::string& what) {
  throw Error(std::string("Backend::") + op + ": " + what, "the shapes and dtypes of each op are in ablate/backend.hpp");
}

void value(const char* op, const char* name, const Tensor& t) {
  allocated(op, name, t);
  if (t.dtype() != DType::F32 && t.dtype() != DType::BF16) fail(op, with(name, t) + " must be f32 or bf16");
}

void dtype(const char* op, const char* name, const Tensor& t, DType d) {
  allocated(op, name, t);
  if (t.dtype() != d) fail(op, with(name, t) + " must be " + dtype_name(d));
}

void shape(const char* op, const char* name, const Tensor& t, const Shape& s) {
  if (t.shape() != s) fail(op, with(name, t) + " must have shape " + s.str());
}

void numel(const char* op, const char* name, const Tensor& t, std::int64_t n) {
  allocated(op, name, t);
  if (t.numel() != n) fail(op, with(name, t) + " must have " + std::to_string(n) + " elements");
}

void same_dtype(const char* op, const char* name, const Tensor& t, const char* ref_name, const Tensor& ref) {
  value(op, name, t);
  if (t.dtype() != ref.dtype()) fail(op, with(name, t) + " must have the dtype of " + with(ref_name, ref));
}

void grad(const char* op, const char* name, const Tensor& g, const char* value_name, const Tensor& v, bool param) {
  value(op, name, g);
  if (g.numel() != v.numel() || g.shape().last() != v.shape().last())
    fail(op, with(name, g) + " must match " + with(value_name, v));
  if (g.dtype() != v.dtype() && !(param && g.dtype() == DType::F32))
    fail(op, with(name, g) + " must have the dtype of " + with(value_name, v) + (param ? " or f32" : ""));
}

// ---------------------------------------------------------------------------- memory

void fill(const Tensor& y) { allocated("fill", "y", y); }
void copy_from_host(const Tensor& dst) { allocated("copy_from_host", "dst", dst); }
void copy_to_host(const Tensor& src) { allocated("copy_to_host", "src", src); }
void copy(const Tensor& dst, const Tensor& src) {
  allocated("copy", "dst", dst);
  allocated("copy", "src", src);
  if (dst.numel() != src.numel() || dst.dtype() != src.dtype())
    fail("copy", with("dst", dst) + " and " + with("src", src) + " must have the same numel and dtype");
}

// ---------------------------------------------------------------------------- linear, matmul
// y: [N, O] (any leading dims), pre: [N, O] or null, x: [N, I], w: [O, I], b: [O] or null.
namespace {
// linear's y [N, O] (or dy) and b [O] for x [N, I], w [O, I]; returns O.
std::int64_t linear_output(const char* op, const char* y_name, const Tensor& y, const Tensor& x, const Tensor& w,
                           const Tensor* b) {
  const std::int64_t O = linear_out(op, x, w);
  same_dtype(op, y_name, y, "x", x);
  if (y.shape().rows() != x.shape().rows() || y.shape().last() != O)
    fail(op, with(y_name, y) + " must be [N, O] for " + with("x", x) + " and " + with("w", w));
  if (b) {
    same_dtype(op, "b", *b, "x", x);
    shape(op, "b", *b, Shape{O});
  }
  return O;
}

// linear's gradient outputs dx, dw, db for x, w and dy [N, O].
void linear_grads(const char* op, const Tensor* dx, const Tensor* dw, const Tensor* db, const Tensor& dy, const Tensor& x,
                  const Tensor& w) {
  const std::int64_t O = linear_output(op, "dy", dy, x, w, nullptr);
  if (dx) grad(op, "dx", *dx, "x", x, false);
  if (dw) grad(op, "dw", *dw, "w", w, true);
  if (db) {
    param_grad_dtype(op, "db", *db, dy);
    numel(op, "db", *db, O);
  }
}

// linear_dropout's slope: F32, one per element of y (or dy), n of them.
void slope_of(const char* op, const Tensor& slope, std::int64_t n) {
  dtype(op, "slope", slope, DType::F32);
  numel(op, "slope", slope, n);
}
}  // namespace

void linear_forward(const Tensor& y, const Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, Activation) {
  const char* op = "linear_forward";
  linear_output(op, "y", y, x, w, b);
  if (pre) {  // null: no backward will run (evaluation), nothing to save
    same_dtype(op, "pre", *pre, "x", x);
    numel(op, "pre", *pre, y.numel());
  }
}

void linear_backward(const Tensor* dx, const Tensor* dw, const Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                     const Tensor* pre, const Tensor& y, Activation act) {
  const char* op = "linear_backward";
  linear_grads(op, dx, dw, db, dy, x, w);
  if (activation_needs_pre(act)) {
    if (pre == nullptr) fail(op, std::string("activation ") + activation_name(act) + " needs `pre`");
    numel(op, "pre", *pre, dy.numel());
  } else if (act == Activation::ReLU) {
    numel(op, "y", y, dy.numel());
  }
}

void matmul_forward(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  matmul_shapes("matmul_forward", "c", c, a, b, trans_a, trans_b);
}

void matmul_backward(const Tensor* da, const Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a,
                     bool trans_b) {
  const char* op = "matmul_backward";
  matmul_shapes(op, "dc", dc, a, b, trans_a, trans_b);
  if (da) grad(op, "da", *da, "a", a, true);
  if (db) grad(op, "db", *db, "b", b, true);
}

// ---------------------------------------------------------------------------- attention
// q: [B, H, T, Dh], k/v: [B, Hkv, S, Dh], out: [B, H, T, Dh] (packed: [B, T, Wq], [B, S, Wk or Wv],
// [B, T, H Dh]), lse: F32 [B, H, T], probs: F32 [B, H, T, S] or null, key_lengths: I32 [B]; bias,
// slopes, dbias as attention_problem.
void attention_forward(const Backend& be, const Tensor& out, const Tensor& lse, const Tensor* probs, const Tensor& q,
                       const Tensor& k, const Tensor& v, const AttentionParams& params) {
  const char* op = "attention_forward";
  attention_common(be, op, lse, q, k, v, params);
  same_dtype(op, "out", out, "q", q);
  shape(op, "out", out, attention_out_shape(q, params));
  if (probs) {
    dtype(op, "probs", *probs, DType::F32);
    const AttentionShape a = attention_shape(q, k, params);
    shape(op, "probs", *probs, Shape{a.B, a.H, a.T, a.S});
  }
}

void attention_backward(const Backend& be, const Tensor* dq, const Tensor* dk, const Tensor* dv, const Tensor& dout,
                        const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionParams& params) {
  const char* op = "attention_backward";
  attention_common(be, op, lse, q, k, v, params);
  same_dtype(op, "dout", dout, "q", q);
  shape(op, "dout", dout, attention_out_shape(q, params));
  same_dtype(op, "out", out, "q", q);
  shape(op, "out", out, attention_out_shape(q, params));
  if (dq) grad(op, "dq", *dq, "q", q, false);
  if (dk) grad(op, "dk", *dk, "k", k, false);
  if (dv) grad(op, "dv", *dv, "v", v, false);
}

// ---------------------------------------------------------------------------- norms

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta) {
  const char* op = "layer_norm_forward";
  norm_common(op, x, gamma, &beta);
  same_dtype(op, "y", y, "x", x);
  shape(op, "y", y, x.shape());
  statistic(op, "mean", mean, x);
  statistic(op, "rstd", rstd, x);
}

void layer_norm_backward(const Tensor* dx, const Tensor* dgamma, const Tensor* dbeta, const Tensor& dy, const Tensor& x,
                         const Tensor& mean, const Tensor& rstd, const Tensor& gamma) {
  const char* op = "layer_norm_backward";
  norm_common(op, x, gamma, nullptr);
  same_dtype(op, "dy", dy, "x", x);
  shape(op, "dy", dy, x.shape());
  statistic(op, "mean", mean, x);
  statistic(op, "rstd", rstd, x);
  if (dx) grad(op, "dx", *dx, "x", x, false);
  if (dgamma) grad(op, "dgamma", *dgamma, "gamma", gamma, true);
  if (dbeta) grad(op, "dbeta", *dbeta, "gamma", gamma, true);
}

void rms_norm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& gamma) {
  const char* op = "rms_norm_forward";
  norm_common(op, x, gamma, nullptr);
  same_dtype(op, "y", y, "x", x);
  shape(op, "y", y, x.shape());
  statistic(op, "rstd", rstd, x);
}

void rms_norm_backward(const Tensor* dx, const Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                       const Tensor& gamma) {
  const char* op = "rms_norm_backward";
  norm_common(op, x, gamma, nullptr);
  same_dtype(op, "dy", dy, "x", x);
  shape(op, "dy", dy, x.shape());
  statistic(op, "rstd", rstd, x);
  if (dx) grad(op, "dx", *dx, "x", x, false);
  if (dgamma) grad(op, "dgamma", *dgamma, "gamma", gamma, true);
}

// ---------------------------------------------------------------------------- elementwise

void activation_forward(const Tensor& y, const Tensor& x) {
  const char* op = "activation_forward";
  value(op, "x", x);
  same_dtype(op, "y", y, "x", x);
  shape(op, "y", y, x.shape());
}

void activation_backward(const Tensor& dx, const Tensor& dy, const Tensor& x) {
  const char* op = "activation_backward";
  value(op, "x", x);
  same_dtype(op, "dy", dy, "x", x);
  shape(op, "dy", dy, x.shape());
  grad(op, "dx", dx, "x", x, false);
}

void add_forward(const Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "add_forward";
  value(op, "a", a);
  same_dtype(op, "b", b, "a", a);
  same_dtype(op, "y", y, "a", a);
  shape(op, "y", y, a.shape());
  repeats(op, "b", b, "a", a);
}

void add_backward(const Tensor* da, const Tensor* db, const Tensor& dy) {
  const char* op = "add_backward";
  value(op, "dy", dy);
  if (da) grad(op, "da", *da, "dy", dy, true);
  if (db) {
    param_grad_dtype(op, "db", *db, dy);
    repeats(op, "db", *db, "dy", dy);
  }
}

void mul_forward(const Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "mul_forward";
  value(op, "a", a);
  same_dtype(op, "b", b, "a", a);
  same_dtype(op, "y", y, "a", a);
  shape(op, "y", y, a.shape());
  repeats(op, "b", b, "a", a);
}

void mul_backward(const Tensor* da, const Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  value(op, "a", a);
  same_dtype(op, "b", b, "a", a);
  same_dtype(op, "dy", dy, "a", a);
  shape(op, "dy", dy, a.shape());
  repeats(op, "b", b, "a", a);
  if (da) grad(op, "da", *da, "a", a, true);
  if (db) grad(op, "db", *db, "b", b, true);
}

void axpy(const Tensor& y, const Tensor& x) {
  value("axpy", "x", x);
  value("axpy", "y", y);
  numel("axpy", "y", y, x.numel());
}

void dropout_forward(const Tensor& y, const Tensor& x, float p) { dropout_common("dropout_forward", "y", y, "x", x, p); }
void dropout_backward(const Tensor& dx, const Tensor& dy, float p) { dropout_common("dropout_backward", "dx", dx, "dy", dy, p); }

void embedding_forward(const Tensor& y, const Tensor& ids, const Tensor& table) {
  const char* op = "embedding_forward";
  value(op, "table", table);
  same_dtype(op, "y", y, "table", table);
  embedding_common(op, "y", y, ids, "table", table);
}

void embedding_backward(const Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const char* op = "embedding_backward";
  value(op, "dy", dy);
  param_grad_dtype(op, "dtable", dtable, dy);
  embedding_common(op, "dy", dy, ids, "dtable", dtable);
}

// ---------------------------------------------------------------------------- heads, KV cache

void split_heads_forward(const Tensor& y, const Tensor& x, int parts, int part) {
  split_common("split_heads_forward", "y", y, "x", x, parts, part);
}
void split_heads_backward(const Tensor& dx, const Tensor& dy, int parts, int part) {
  split_common("split_heads_backward", "dy", dy, "dx", dx, parts, part);
}
void merge_heads_forward(const Tensor& y, const Tensor& x) { merge_common("merge_heads_forward", "y", y, "x", x); }
void merge_heads_backward(const Tensor& dx, const Tensor& dy) { merge_common("merge_heads_backward", "dy", dy, "dx", dx); }

// dst: [B, H, S, Dh], src: [B, H, T, Dh], 0 <= offset, offset + T <= S.
void write_time_slice(const Tensor& dst, const Tensor& src, std::int64_t offset) {
  const char* op = "write_time_slice";
  value(op, "src", src);
  same_dtype(op, "dst", dst, "src", src);
  if (dst.shape().rank() != 4 || src.shape().rank() != 4)
    fail(op, with("dst", dst) + " must be [B, H, S, Dh] and " + with("src", src) + " [B, H, T, Dh]");
  const Shape& d = dst.shape();
  const std::int64_t S = d[2], T = src.shape()[2];
  if (src.shape() != Shape{d[0], d[1], T, d[3]})
    fail(op, with("src", src) + " must be [B, H, T, Dh] with the B, H, Dh of " + with("dst", dst));
  if (offset < 0 || offset > S - T)
    fail(op, "offset " + std::to_string(offset) + " with T = " + std::to_string(T) +
                 " rows must satisfy 0 <= offset, offset + T <= S = " + std::to_string(S) + " (" + with("dst", dst) + ", " +
                 with("src", src) + ")");
}

// ---------------------------------------------------------------------------- loss, optimizer
// logits, dlogits: [N, V]; targets: I32 [N]; loss: F32 [1]; stats: F32 [2].
void cross_entropy_forward(const Tensor& loss, const Tensor& dlogits, const Tensor& stats, const Tensor& logits,
                           const Tensor& targets, float label_smoothing) {
  const char* op = "cross_entropy_forward";
  value(op, "logits", logits);
  same_dtype(op, "dlogits", dlogits, "logits", logits);
  shape(op, "dlogits", dlogits, logits.shape());
  dtype(op, "loss", loss, DType::F32);
  numel(op, "loss", loss, 1);
  dtype(op, "stats", stats, DType::F32);
  numel(op, "stats", stats, 2);
  dtype(op, "targets", targets, DType::I32);
  numel(op, "targets", targets, logits.shape().rows());
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    fail(op, "label_smoothing " + std::to_string(label_smoothing) + " must be in [0, 1]");
}

void sum_squares(const Tensor& total, const Tensor& x) {
  value("sum_squares", "x", x);
  dtype("sum_squares", "total", total, DType::F32);
  numel("sum_squares", "total", total, 1);
}

// w, m, v, grad: F32 of one shape; w_low: BF16 of w's numel or null; step >= 1.
void adam_update(const Tensor& w, const Tensor& m, const Tensor& v, const Tensor* w_low, const Tensor& grad,
                 const AdamParams& params) {
  const char* op = "adam_update";
  dtype(op, "w", w, DType::F32);
  dtype(op, "m", m, DType::F32);
  dtype(op, "v", v, DType::F32);
  dtype(op, "grad", grad, DType::F32);
  shape(op, "m", m, w.shape());
  shape(op, "v", v, w.shape());
  shape(op, "grad", grad, w.shape());
  if (w_low) {
    dtype(op, "w_low", *w_low, DType::BF16);
    numel(op, "w_low", *w_low, w.numel());
  }
  if (params.step < 1) fail(op, "step " + std::to_string(params.step) + " must be >= 1 (1-based)");
}

void cast(const Tensor& y, const Tensor& x) {
  value("cast", "x", x);
  value("cast", "y", y);
  numel("cast", "y", y, x.numel());
}

// ---------------------------------------------------------------------------- optional ops

void rope_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_forward";
  supported(be, OptionalOp::rope, op);
  rope_common(op, x, positions, rotary, base);
  same_dtype(op, "y", y, "x", x);
  shape(op, "y", y, x.shape());
}

void rope_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_backward";
  supported(be, OptionalOp::rope, op);
  rope_common(op, dy, positions, rotary, base);
  grad(op, "dx", dx, "dy", dy, false);
}

void slice_last_forward(const Backend& be, const Tensor& y, const Tensor& x, std::int64_t offset) {
  supported(be, OptionalOp::slice_last, "slice_last_forward");
  slice_common("slice_last_forward", x, y, offset);
}
void slice_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy, std::int64_t offset) {
  supported(be, OptionalOp::slice_last, "slice_last_backward");
  slice_common("slice_last_backward", dx, dy, offset);
}

void softmax_last_forward(const Backend& be, const Tensor& y, const Tensor& x) {
  supported(be, OptionalOp::softmax_last, "softmax_last_forward");
  rowwise_common("softmax_last_forward", x, y, false);
}
void softmax_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& y) {
  const char* op = "softmax_last_backward";
  supported(be, OptionalOp::softmax_last, op);
  rowwise_common(op, y, dy, false);
  grad(op, "dx", dx, "y", y, false);
}

void sum_last_forward(const Backend& be, const Tensor& y, const Tensor& x) {
  supported(be, OptionalOp::sum_last, "sum_last_forward");
  rowwise_common("sum_last_forward", x, y, true);
}
void sum_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy) {
  supported(be, OptionalOp::sum_last, "sum_last_backward");
  rowwise_common("sum_last_backward", dx, dy, true);
}

void pointwise_forward(const Backend& be, const Tensor& y, const Tensor& x) {
  supported(be, OptionalOp::pointwise, "pointwise_forward");
  rowwise_common("pointwise_forward", x, y, false);
}
void pointwise_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& y) {
  const char* op = "pointwise_backward";
  supported(be, OptionalOp::pointwise, op);
  rowwise_common(op, y, dy, false);
  grad(op, "dx", dx, "y", y, false);
}

void dropout_add_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& h, float p) {
  const char* op = "dropout_add_forward";
  supported(be, OptionalOp::dropout_add, op);
  dropout_common(op, "y", y, "h", h, p);
  same_dtype(op, "x", x, "h", h);
  shape(op, "x", x, h.shape());
}

void rope_frequencies_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& freqs) {
  const char* op = "rope_frequencies_forward";
  supported(be, OptionalOp::rope_frequencies, op);
  value(op, "x", x);
  if (const std::string p = rope_frequencies_problem(x, positions, freqs); !p.empty()) fail(op, p);
  same_dtype(op, "y", y, "x", x);
  shape(op, "y", y, x.shape());
}

void rope_frequencies_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& positions,
                               const Tensor& freqs) {
  const char* op = "rope_frequencies_backward";
  supported(be, OptionalOp::rope_frequencies, op);
  value(op, "dy", dy);
  if (const std::string p = rope_frequencies_problem(dy, positions, freqs); !p.empty()) fail(op, p);
  grad(op, "dx", dx, "dy", dy, false);
}

void compare_forward(const Backend& be, const Tensor& y, const Tensor& a, const Tensor& b, Compare c) {
  const char* op = "compare_forward";
  supported(be, OptionalOp::compare, op);
  if (static_cast<int>(c) > static_cast<int>(Compare::ge))
    fail(op, "comparison " + std::to_string(static_cast<int>(c)) + " is none of eq, ne, lt, le, gt, ge");
  allocated(op, "a", a);
  allocated(op, "b", b);
  allocated(op, "y", y);
  if (const std::string p = compare_problem(y, a, b); !p.empty()) fail(op, p);
}

void permute_forward(const Backend& be, const Tensor& y, const Tensor& x, const Permutation& p) {
  const char* op = "permute_forward";
  supported(be, OptionalOp::permute, op);
  allocated(op, "x", x);
  allocated(op, "y", y);
  if (const std::string problem = permute_problem(y, x, p); !problem.empty()) fail(op, problem);
}
// dy is y's gradient and dx x's: dy = dx permuted.
void permute_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Permutation& p) {
  const char* op = "permute_backward";
  supported(be, OptionalOp::permute, op);
  allocated(op, "dx", dx);
  allocated(op, "dy", dy);
  if (const std::string problem = permute_problem(dy, dx, p); !problem.empty()) fail(op, problem);
}

void linear_dropout_forward(const Backend& be, const Tensor& y, const Tensor* slope, const Tensor& x, const Tensor& w,
                            const Tensor* b, float p) {
  const char* op = "linear_dropout_forward";
  supported(be, OptionalOp::linear_dropout, op);
  linear_output(op, "y", y, x, w, b);
  dropout_p(op, p);
  if (slope) slope_of(op, *slope, y.numel());  // null: no backward will run, or ReLU's backward reads y
}

void linear_dropout_backward(const Backend& be, const Tensor* dx, const Tensor* dw, const Tensor* db, const Tensor& dy,
                             const Tensor& x, const Tensor& w, const Tensor* slope, const Tensor& y, Activation act, float p) {
  const char* op = "linear_dropout_backward";
  supported(be, OptionalOp::linear_dropout, op);
  linear_grads(op, dx, dw, db, dy, x, w);
  dropout_p(op, p);
  if (slope) {
    slope_of(op, *slope, dy.numel());
  } else if (act == Activation::ReLU) {
    numel(op, "y", y, dy.numel());
  } else {
    fail(op, std::string("activation ") + activation_name(act) + " needs `slope` (only ReLU's backward can read y instead)");
  }
}

}  // namespace ablate::contract

namespace ablate {

// Backend::<op>(args): contract::<op>(contract args), then do_<op>(args) (ablate/backend_ops.hpp).
#define ABLATE_BACKEND_PUBLIC_OP(name, params, args, checks) \
  void Backend::name params {                                \
    contract::name checks;                                   \
    do_##name args;                                          \
  }
ABLATE_BACKEND_OPS(ABLATE_BACKEND_PUBLIC_OP)
#undef ABLATE_BACKEND_PUBLIC_OP

// The optional ops' defaults: never reached through the public op, whose contract refuses an op
// supports() denies; a backend that announces one and forgets its do_<op> fails here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define ABLATE_BACKEND_OPTIONAL_DEFAULT(name, params, args, checks)                                                     \
  void Backend::do_##name params {                                                                                      \
    throw Error(std::string("backend announces ") + #name + " in supports() but does not implement it (do_" #name ")"); \
  }
ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OPTIONAL_DEFAULT)
#undef ABLATE_BACKEND_OPTIONAL_DEFAULT
#pragma GCC diagnostic pop

}  // namespace ablate
