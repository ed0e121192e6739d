// Op cases (op_cases.hpp) of the GEMM-shaped ops: linear with every fused activation (and with its
// dropout, linear_dropout), batched matmul, and attention with every mask kind, dropout, grouped
// k/v heads, a logit bias, ALiBi slopes, a softcap, and heads packed in their projections' rows.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ablate/bf16.hpp"
#include "backends/op_cases_catalogue.hpp"

namespace ablate::testing::catalogue {

// ---- linear: y[N, O] = act(x[N, I] w[O, I]^T + b[O])
void add_linear(std::vector<OpCase>& out) {
  struct L {
    Shape x;
    std::int64_t O;
    Activation act;
    bool bias, pre, dx;
    bool dw = true;      // false: only dx (and db) requested
    bool write = false;  // dx stored as GradStore::Write
  };
  const Activation acts[] = {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU};
  std::vector<L> ls;
  for (const Activation a : acts) ls.push_back({Shape{3, 7}, 5, a, true, true, true});
  ls.push_back({Shape{1, 1}, 1, Activation::None, true, false, true});
  ls.push_back({Shape{2, 3, 33}, 4, Activation::None, false, false, true});
  ls.push_back({Shape{2, 3, 33}, 4, Activation::GeluErf, false, true, true});
  ls.push_back({Shape{65, 16}, 9, Activation::ReLU, true, false, true});
  ls.push_back({Shape{7, 5}, 3, Activation::SiLU, true, true, false});             // null dx: skipped
  ls.push_back({Shape{7, 5}, 3, Activation::GeluTanh, true, true, true, false});   // null dw: skipped
  ls.push_back({Shape{3, 100, 130}, 129, Activation::GeluErf, true, true, true});  // above the threading grain
  // Shapes whose dw (and dx) GEMMs run on operands copied to padded rows in backend/onednn on
  // CPUs without AVX-512 (aliasing_shape: 4 KiB rows against a short side).
  ls.push_back({Shape{2, 12, 256}, 1024, Activation::None, true, false, true});
  ls.push_back({Shape{24, 1024}, 256, Activation::None, true, false, true});
  // dx's reduction (O) 8x its width (I): onednn's bf16 dx through an f32 result (the logits' shape)
  ls.push_back({Shape{6, 4}, 40, Activation::None, true, false, true});
  // dx written, not added (a new gradient buffer): plain, through ReLU, threaded, padded
  ls.push_back({Shape{3, 7}, 5, Activation::None, true, false, true, true, true});
  ls.push_back({Shape{65, 16}, 9, Activation::ReLU, true, false, true, true, true});
  ls.push_back({Shape{3, 100, 130}, 129, Activation::GeluErf, true, true, true, true, true});
  ls.push_back({Shape{24, 1024}, 256, Activation::None, true, false, true, true, true});
  for (const L& l : ls) {
    OpCase c;
    c.op = "linear";
    const std::int64_t N = l.x.rows(), I = l.x.last();
    c.name = "x" + dims(l.x) + "_O" + num(l.O) + "_" + act_tag(l.act) + (l.bias ? "" : "_nobias") + (l.pre ? "" : "_nopre") +
             (l.dx ? "" : "_nodx") + (l.dw ? "" : "_nodw") + (l.write ? "_write" : "");
    c.reduction = static_cast<double>(std::max(I, std::max(N, l.O)));
    c.inputs = {value("x", l.x), param("w", Shape{l.O, I})};
    if (l.act == Activation::ReLU) c.inputs[0].min_abs = 0.05;
    if (l.bias) c.inputs.push_back(param("b", Shape{l.O}));
    Shape ys = l.x.rank() == 3 ? Shape{l.x[0], l.x[1], l.O} : Shape{N, l.O};
    c.outputs = {value("y", ys)};
    if (l.pre) c.outputs.push_back(value("pre", ys));
    if (l.dw) c.grad_inputs.push_back("w");
    if (l.dx) c.grad_inputs.push_back("x");
    if (l.bias) c.grad_inputs.push_back("b");
    c.grad_outputs = {"y"};
    if (l.write) c.written = {"x"};
    const Activation act = l.act;
    const GradStore store = grad_store(c, "x");
    c.forward = [act](OpRun& r) { r.backend.linear_forward(r["y"], r.opt("pre"), r["x"], r["w"], r.opt("b"), act); };
    c.backward = [act, store](OpRun& r) {
      r.backend.linear_backward(r.opt("dx"), r.opt("dw"), r.opt("db"), r["dy"], r["x"], r["w"], r.opt("pre"), r["y"], act, store);
    };
    // The large shapes (a backend's threaded and padded paths) are parity only: finite differences
    // rerun their millions of multiply-adds per checked element (~45 s each under ASan), and the
    // small cases check the same formulas.
    c.finite_differences = N * I * l.O <= 1000000;
    out.push_back(std::move(c));
  }

  // ---- linear_dropout: y = dropout(act(x w^T + b), p) in one op (OptionalOp::linear_dropout), slope
  // kept for the backward (ReLU's may read y instead)
  struct LD {
    Shape x;
    std::int64_t O;
    Activation act;
    float p;
    bool slope;
    bool write = false;  // dx stored as GradStore::Write
    bool bf16 = true;    // false: at this size bf16's rounding of x and w moves some pre across
                         // ReLU's kink, which a bf16 run's comparison with f32 cannot tell from an error
  };
  std::vector<LD> lds;
  for (const Activation a : acts) lds.push_back({Shape{3, 7}, 5, a, 0.3f, true});
  lds.push_back({Shape{65, 16}, 9, Activation::ReLU, 0.1f, false});             // ReLU's backward from y
  lds.push_back({Shape{2, 3, 33}, 4, Activation::GeluTanh, 0.5f, true, true});  // dx written
  lds.push_back({Shape{3, 100, 130}, 129, Activation::GeluErf, 0.1f, true});    // above the threading grain
  lds.push_back({Shape{3, 100, 130}, 129, Activation::ReLU, 0.1f, false, true, false});
  lds.push_back({Shape{24, 1024}, 256, Activation::None, 0.1f, true});  // onednn's padded dw GEMM without AVX-512
  for (const LD& l : lds) {
    OpCase c;
    c.op = "linear_dropout";
    const std::int64_t N = l.x.rows(), I = l.x.last();
    c.name = cat("x", dims(l.x), "_O", l.O, "_", act_tag(l.act), "_p", static_cast<int>(l.p * 100), l.slope ? "" : "_noslope",
                 l.write ? "_write" : "");
    c.needs = {OptionalOp::linear_dropout};
    c.bf16 = l.bf16;
    c.reduction = static_cast<double>(std::max(I, std::max(N, l.O)));
    c.inputs = {value("x", l.x), param("w", Shape{l.O, I}), param("b", Shape{l.O})};
    if (l.act == Activation::ReLU) c.inputs[0].min_abs = 0.05;
    const Shape ys = l.x.rank() == 3 ? Shape{l.x[0], l.x[1], l.O} : Shape{N, l.O};
    c.outputs = {value("y", ys)};
    if (l.slope) c.outputs.push_back(f32("slope", ys));
    c.grad_inputs = {"w", "x", "b"};
    c.grad_outputs = {"y"};
    if (l.write) c.written = {"x"};
    const Activation act = l.act;
    const float p = l.p;
    const RngKey key{99, 5, 17};
    const GradStore store = grad_store(c, "x");
    c.forward = [=](OpRun& r) {
      r.backend.linear_dropout_forward(r["y"], r.opt("slope"), r["x"], r["w"], r.opt("b"), act, p, key);
    };
    c.backward = [=](OpRun& r) {
      r.backend.linear_dropout_backward(r.opt("dx"), r.opt("dw"), r.opt("db"), r["dy"], r["x"], r["w"], r.opt("slope"), r["y"],
                                        act, p, store);
    };
    c.finite_differences = N * I * l.O <= 1000000;
    out.push_back(std::move(c));
  }
}

// ---- matmul: c[Bt, M, N] = alpha op(a) op(b)
void add_matmul(std::vector<OpCase>& out) {
  struct M {
    std::int64_t Bt, M, K, N;
    bool ta, tb;
    float alpha;
    bool rank4;
  };
  std::vector<M> ms = {{1, 1, 1, 1, false, false, 1.0f, false},  {2, 3, 7, 5, false, false, 1.0f, false},
                       {2, 3, 7, 5, true, false, 0.5f, false},   {2, 3, 7, 5, false, true, 1.0f, false},
                       {2, 3, 7, 5, true, true, -2.0f, false},   {4, 7, 33, 3, false, true, 0.25f, true},
                       {1, 9, 4, 65, false, false, 1.0f, false}, {4, 64, 48, 70, true, true, 1.0f, false}};
  for (const M& m : ms) {
    OpCase c;
    c.op = "matmul";
    c.name = cat("B", m.Bt, "_M", m.M, "_K", m.K, "_N", m.N, m.ta ? "_ta" : "", m.tb ? "_tb" : "", m.rank4 ? "_rank4" : "");
    c.reduction = static_cast<double>(std::max({m.M, m.K, m.N}));
    auto shape = [&](std::int64_t r, std::int64_t cc) { return m.rank4 ? Shape{2, m.Bt / 2, r, cc} : Shape{m.Bt, r, cc}; };
    c.inputs = {value("a", m.ta ? shape(m.K, m.M) : shape(m.M, m.K)), value("b", m.tb ? shape(m.N, m.K) : shape(m.K, m.N))};
    c.outputs = {value("c", shape(m.M, m.N))};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"c"};
    const bool ta = m.ta, tb = m.tb;
    const float alpha = m.alpha;
    c.forward = [=](OpRun& r) { r.backend.matmul_forward(r["c"], r["a"], r["b"], ta, tb, alpha); };
    c.backward = [=](OpRun& r) { r.backend.matmul_backward(r.opt("da"), r.opt("db"), r["dc"], r["a"], r["b"], ta, tb, alpha); };
    out.push_back(std::move(c));
  }
}

// ---- attention: q[B, H, T, Dh], k/v[B, Hkv, S, Dh] -> out[B, H, T, Dh], lse[B, H, T], probs[B, H, T, S]
// What every attention case's parameters start from: its mask and offset, the 1/sqrt(Dh) scale,
// its dropout and one fixed RNG key.
AttentionParams base_params(bool causal, std::int64_t offset, std::int64_t Dh, float dropout) {
  AttentionParams p;
  p.causal = causal;
  p.query_offset = offset;
  p.scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  p.dropout = dropout;
  p.rng = RngKey{12345, 7, 3};
  return p;
}

// p with the stores of the case's written gradients (dq, dk, dv) set to Write.
AttentionParams written_params(const OpCase& c, AttentionParams p) {
  p.dq_store = grad_store(c, "q");
  p.dk_store = grad_store(c, "k");
  p.dv_store = grad_store(c, "v");
  return p;
}

namespace {
// Attention with as many k/v heads as q heads: the masks, offsets, dropout and probabilities.
void add_plain_attention(std::vector<OpCase>& out) {
  struct A {
    std::string tag;
    std::int64_t B, H, T, S, Dh;
    bool causal;
    std::vector<double> lengths;  // empty: no key padding
    std::int64_t offset;
    float dropout;
    bool probs;
    bool write = false;  // dq, dk, dv stored as GradStore::Write
  };
  std::vector<A> as = {
      {"none", 2, 2, 5, 7, 4, false, {}, 0, 0.0f, true},
      {"tiny", 1, 1, 1, 1, 1, false, {}, 0, 0.0f, true},
      {"causal", 2, 2, 7, 7, 4, true, {}, 0, 0.0f, true},
      {"causal_offset", 1, 2, 3, 7, 4, true, {}, 4, 0.0f, true},
      {"padding", 3, 2, 5, 7, 4, false, {7, 3, 0}, 0, 0.0f, true},
      {"causal_padding", 3, 1, 7, 7, 3, true, {7, 4, 0}, 0, 0.0f, true},
      {"causal_offset_padding", 2, 2, 3, 9, 4, true, {9, 5}, 6, 0.0f, true},
      {"causal_more_queries", 1, 2, 9, 5, 4, true, {}, 0, 0.0f, true},
      {"dropout", 2, 2, 5, 7, 4, false, {}, 0, 0.2f, true},
      {"causal_padding_dropout", 3, 2, 7, 7, 4, true, {5, 7, 0}, 0, 0.3f, false},
      {"long", 1, 3, 33, 65, 5, false, {}, 0, 0.0f, false},
      {"long_padding_dropout", 2, 1, 33, 65, 5, false, {65, 17}, 0, 0.1f, true},
      {"large_causal_offset_padding_dropout", 2, 4, 64, 72, 8, true, {72, 40}, 8, 0.1f, true},  // above the grain
      // More keys than backend/onednn's fused tiles take (S > 256): its batched-GEMM path on any CPU.
      {"wide_padding_dropout", 2, 2, 3, 300, 4, false, {300, 131}, 0, 0.1f, true},
      // Shapes a GPU backend runs as one fused kernel (cudnn: bf16, Dh a multiple of 8, no probs, no
      // offset; tests/plugins/backend_cudnn checks that it did): masks, dropout, an item without keys.
      {"sdpa_causal_dropout", 2, 4, 128, 128, 64, true, {}, 0, 0.1f, false},
      {"sdpa_padding_dropout", 2, 2, 96, 160, 64, false, {160, 77}, 0, 0.2f, false},
      {"sdpa_causal_padding_Dh128", 3, 2, 64, 64, 128, true, {64, 0, 33}, 0, 0.0f, false},
      // Gradients written, not added (new buffers): queries and keys nobody sees are written 0, on
      // onednn's fused tiles and its batched-GEMM path (S > 256).
      {"padding_write", 3, 2, 5, 7, 4, false, {7, 3, 0}, 0, 0.0f, false, true},
      {"causal_padding_dropout_write", 3, 2, 7, 7, 4, true, {5, 7, 0}, 0, 0.3f, false, true},
      {"large_causal_offset_padding_dropout_write", 2, 4, 64, 72, 8, true, {72, 40}, 8, 0.1f, false, true},
      {"wide_padding_dropout_write", 2, 2, 3, 300, 4, false, {300, 131}, 0, 0.1f, false, true},
  };
  for (const A& a : as) {
    OpCase c;
    c.op = "attention";
    c.name = a.tag + "_B" + num(a.B) + "_H" + num(a.H) + "_T" + num(a.T) + "_S" + num(a.S) + "_Dh" + num(a.Dh);
    c.reduction = static_cast<double>(std::max(a.S, a.Dh));
    c.finite_differences = a.B * a.H * a.T * a.Dh <= 4096;  // the sdpa_ shapes: parity only
    c.inputs = {value("q", Shape{a.B, a.H, a.T, a.Dh}, -1.5, 1.5), value("k", Shape{a.B, a.H, a.S, a.Dh}, -1.5, 1.5),
                value("v", Shape{a.B, a.H, a.S, a.Dh})};
    if (!a.lengths.empty()) c.inputs.push_back(fixed_i32("key_lengths", Shape{a.B}, a.lengths));
    c.outputs = {value("out", Shape{a.B, a.H, a.T, a.Dh}), f32("lse", Shape{a.B, a.H, a.T})};
    if (a.probs) c.outputs.push_back(f32("probs", Shape{a.B, a.H, a.T, a.S}));
    c.grad_inputs = {"q", "k", "v"};
    c.grad_outputs = {"out"};
    if (a.write) c.written = {"q", "k", "v"};
    const AttentionParams base = written_params(c, base_params(a.causal, a.offset, a.Dh, a.dropout));
    c.forward = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      r.backend.attention_forward(r["out"], r["lse"], r.opt("probs"), r["q"], r["k"], r["v"], p);
    };
    c.backward = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      r.backend.attention_backward(r.opt("dq"), r.opt("dk"), r.opt("dv"), r["dout"], r["out"], r["lse"], r["q"], r["k"], r["v"],
                                   p);
    };
    out.push_back(std::move(c));
  }
}

// Grouped k/v heads (k/v [B, Hkv, S, Dh]), a logit bias [1 or H, T, S] with its gradient, ALiBi
// slopes [H] and a logit softcap, alone and with the masks, offset and dropout.
void add_extended_attention(std::vector<OpCase>& out) {
  struct X {
    std::string tag;
    std::int64_t B, H, Hkv, T, S, Dh;
    bool causal;
    std::vector<double> lengths;  // empty: no key padding
    std::int64_t offset;
    std::int64_t bias_heads;  // 0: no bias
    bool slopes;
    float dropout;
    float softcap = 0.0f;  // 0: none
    bool write = false;    // dq, dk, dv stored as GradStore::Write (a group's first head writes dk, dv)
  };
  const std::vector<X> xs = {
      {"gqa", 2, 4, 2, 5, 7, 4, false, {}, 0, 0, false, 0.0f},
      {"mqa_causal_padding", 2, 3, 1, 6, 6, 4, true, {6, 3}, 0, 0, false, 0.0f},
      {"bias_shared", 2, 2, 2, 5, 7, 4, false, {}, 0, 1, false, 0.0f},
      {"bias_per_head_causal_padding", 2, 2, 2, 6, 6, 3, true, {6, 4}, 0, 2, false, 0.0f},
      {"alibi_causal_offset", 1, 4, 4, 3, 7, 4, true, {}, 4, 0, true, 0.0f},
      {"alibi_bidirectional_padding", 2, 2, 2, 5, 7, 4, false, {7, 3}, 0, 0, true, 0.0f},
      {"gqa_bias_alibi_dropout", 2, 4, 2, 7, 7, 4, true, {7, 5}, 0, 4, true, 0.2f},
      {"large_gqa_bias_alibi", 2, 8, 2, 40, 48, 8, true, {48, 30}, 8, 1, true, 0.0f},  // above the grain
      {"softcap", 2, 2, 2, 5, 7, 4, false, {7, 4}, 0, 0, false, 0.0f, 0.8f},  // q·k up to ~4.5 scaled: well into tanh's bend
      {"softcap_gqa_bias_alibi_causal_dropout", 2, 4, 2, 6, 6, 4, true, {6, 5}, 0, 4, true, 0.2f, 1.5f},
      {"gqa_write", 2, 4, 2, 5, 7, 4, false, {}, 0, 0, false, 0.0f, 0.0f, true},
      {"mqa_causal_padding_dropout_write", 2, 3, 1, 6, 6, 4, true, {6, 3}, 0, 0, false, 0.2f, 0.0f, true},
  };
  for (const X& a : xs) {
    OpCase c;
    c.op = "attention";
    c.name = a.tag + "_B" + num(a.B) + "_H" + num(a.H) + "_Hkv" + num(a.Hkv) + "_T" + num(a.T) + "_S" + num(a.S);
    if (a.Hkv != a.H) c.needs.push_back(OptionalOp::grouped_attention);
    if (a.bias_heads > 0 || a.slopes) c.needs.push_back(OptionalOp::attention_bias);
    if (a.softcap > 0.0f) c.needs.push_back(OptionalOp::attention_softcap);
    c.reduction = static_cast<double>(std::max(a.S, a.Dh));
    c.finite_differences = a.B * a.H * a.T * a.Dh <= 4096;  // the sdpa_ shapes: parity only
    c.inputs = {value("q", Shape{a.B, a.H, a.T, a.Dh}, -1.5, 1.5), value("k", Shape{a.B, a.Hkv, a.S, a.Dh}, -1.5, 1.5),
                value("v", Shape{a.B, a.Hkv, a.S, a.Dh})};
    c.grad_inputs = {"q", "k", "v"};
    if (!a.lengths.empty()) c.inputs.push_back(fixed_i32("key_lengths", Shape{a.B}, a.lengths));
    if (a.bias_heads > 0) {
      c.inputs.push_back(f32("bias", Shape{a.bias_heads, a.T, a.S}, -1.0, 1.0));
      c.grad_inputs.push_back("bias");
    }
    if (a.slopes) c.inputs.push_back(f32("slopes", Shape{a.H}, 0.05, 0.6));
    c.outputs = {value("out", Shape{a.B, a.H, a.T, a.Dh}), f32("lse", Shape{a.B, a.H, a.T}),
                 f32("probs", Shape{a.B, a.H, a.T, a.S})};
    c.grad_outputs = {"out"};
    if (a.write) c.written = {"q", "k", "v"};
    AttentionParams base = written_params(c, base_params(a.causal, a.offset, a.Dh, a.dropout));
    base.softcap = a.softcap;
    const auto params = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      p.bias = r.opt("bias");
      p.slopes = r.opt("slopes");
      return p;
    };
    c.forward = [params](OpRun& r) {
      const AttentionParams p = params(r);
      r.backend.attention_forward(r["out"], r["lse"], r.opt("probs"), r["q"], r["k"], r["v"], p);
    };
    c.backward = [params](OpRun& r) {
      AttentionParams p = params(r);
      p.dbias = r.opt("dbias");
      r.backend.attention_backward(r.opt("dq"), r.opt("dk"), r.opt("dv"), r["dout"], r["out"], r["lse"], r["q"], r["k"], r["v"],
                                   p);
    };
    out.push_back(std::move(c));
  }
}
// Heads packed in their projections' rows (AttentionParams::packed, OptionalOp::packed_heads):
// self-attention over one fused q/k/v tensor "qkv" [B, T, (H + 2 Hkv) Dh] (its gradient one tensor
// that q, k and v each store into), cross-attention over q [B, T, Wq] and one fused k/v tensor "kv"
// [B, S, 2 Hkv Dh]; masks, dropout, grouped heads, probabilities; gradients added and written (a
// written tensor is NaN-filled: a column no part stores shows); onednn's fused tiles and, past 256
// keys, its split copies.
void add_packed_attention(std::vector<OpCase>& out) {
  struct P {
    std::string tag;
    std::int64_t B, H, Hkv, T, S, Dh;
    bool self, causal;
    std::vector<double> lengths;  // empty: no key padding
    float dropout;
    bool probs;
    bool write;          // the gradients stored as GradStore::Write
    std::int64_t q_col;  // cross: q's heads from this column of q's rows (the columns before get no gradient)
  };
  const std::vector<P> ps = {
      {"self", 2, 2, 2, 5, 5, 4, true, false, {}, 0.0f, true, false, 0},
      {"self_causal_dropout_write", 2, 2, 2, 7, 7, 4, true, true, {}, 0.3f, true, true, 0},
      {"self_gqa_padding_write", 2, 4, 2, 6, 6, 4, true, false, {6, 3}, 0.0f, false, true, 0},
      {"self_mqa_causal_padding_dropout", 3, 3, 1, 6, 6, 4, true, true, {6, 4, 0}, 0.2f, true, false, 0},
      {"cross_padding", 2, 2, 2, 3, 7, 4, false, false, {7, 3}, 0.0f, true, false, 0},
      {"cross_offset_q_padding_dropout", 2, 2, 2, 4, 5, 3, false, false, {5, 2}, 0.2f, false, false, 2},
      {"cross_gqa_dropout_write", 2, 4, 2, 3, 7, 4, false, false, {}, 0.1f, false, true, 0},
      {"large_self_causal_dropout_write", 2, 4, 4, 64, 64, 8, true, true, {}, 0.1f, false, true, 0},  // above the grain
      {"wide_cross_padding_dropout_write", 2, 2, 2, 3, 300, 4, false, false, {300, 131}, 0.1f, true, true, 0},
  };
  for (const P& a : ps) {
    OpCase c;
    c.op = "attention";
    c.name = "packed_" + a.tag + "_B" + num(a.B) + "_H" + num(a.H) + "_Hkv" + num(a.Hkv) + "_T" + num(a.T) + "_S" + num(a.S);
    c.needs.push_back(OptionalOp::packed_heads);
    if (a.Hkv != a.H) c.needs.push_back(OptionalOp::grouped_attention);
    c.reduction = static_cast<double>(std::max(a.S, a.Dh));
    c.finite_differences = a.B * a.H * a.T * a.Dh <= 4096;
    const std::int64_t D = a.H * a.Dh, K = a.Hkv * a.Dh;
    PackedHeads l;
    l.heads = a.H, l.kv_heads = a.Hkv, l.head_dim = a.Dh;
    if (a.self) {
      c.inputs = {value("qkv", Shape{a.B, a.T, D + 2 * K}, -1.5, 1.5)};
      c.grad_inputs = {"qkv"};
      l.k_col = D, l.v_col = D + K;
    } else {
      c.inputs = {value("q", Shape{a.B, a.T, a.q_col + D}, -1.5, 1.5), value("kv", Shape{a.B, a.S, 2 * K}, -1.5, 1.5)};
      c.grad_inputs = {"q", "kv"};
      l.q_col = a.q_col, l.v_col = K;
    }
    if (!a.lengths.empty()) c.inputs.push_back(fixed_i32("key_lengths", Shape{a.B}, a.lengths));
    c.outputs = {value("out", Shape{a.B, a.T, D}), f32("lse", Shape{a.B, a.H, a.T})};
    if (a.probs) c.outputs.push_back(f32("probs", Shape{a.B, a.H, a.T, a.S}));
    c.grad_outputs = {"out"};
    if (a.write) c.written = c.grad_inputs;
    AttentionParams base = base_params(a.causal, 0, a.Dh, a.dropout);
    base.packed = l;
    const std::string qn = a.self ? "qkv" : "q", kvn = a.self ? "qkv" : "kv";
    base.dq_store = grad_store(c, qn);
    base.dk_store = base.dv_store = grad_store(c, kvn);
    c.forward = [base, qn, kvn](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      r.backend.attention_forward(r["out"], r["lse"], r.opt("probs"), r[qn], r[kvn], r[kvn], p);
    };
    c.backward = [base, qn, kvn](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      Tensor* dkv = r.opt("d" + kvn);
      r.backend.attention_backward(r.opt("d" + qn), dkv, dkv, r["dout"], r["out"], r["lse"], r[qn], r[kvn], r[kvn], p);
    };
    out.push_back(std::move(c));
  }
}
}  // namespace

void add_attention(std::vector<OpCase>& out) {
  add_plain_attention(out);
  add_extended_attention(out);
  add_packed_attention(out);
}

}  // namespace ablate::testing::catalogue
