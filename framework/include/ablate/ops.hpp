// Differentiable ops on Vars: each runs the backend's forward and records its backward on the
// Graph. This is the vocabulary components (blocks, FFNs, positional encodings, heads) are
// written in. Shapes use B, T, S, H, Dh, D, F, V, N as in backend.hpp.
#pragma once

#include <vector>

#include "ablate/autograd.hpp"

namespace ablate::ops {

// y[..., O] = act(x[..., I] · w[O, I]^T + b[O]); b may be an undefined Var (no bias).
Var linear(Graph& g, const Var& x, const Var& w, const Var& b, Activation act = Activation::None);

// c[Bt, M, N] = alpha * op(a) · op(b) (see Backend::matmul_forward).
Var matmul(Graph& g, const Var& a, const Var& b, bool trans_a = false, bool trans_b = false, float alpha = 1.0f);

struct AttentionOptions {
  bool causal = false;
  const Tensor* key_lengths = nullptr;  // I32 [B]; must outlive the graph's backward
  std::int64_t query_offset = 0;
  float scale = 0.0f;       // 0: 1/sqrt(Dh)
  float softcap = 0.0f;     // > 0: logits = softcap * tanh(scaled logits / softcap) before the bias (Gemma 2)
  float dropout = 0.0f;     // on the probabilities, in training only
  Tensor* probs = nullptr;  // if set, receives the probabilities [B, H, T, S] (F32) for logging
  Var bias;                 // F32 [1 or H, T, S] added to the logits (a learned one gets its gradient); undefined = none
  Tensor slopes;            // F32 [H] ALiBi slopes (Backend's AttentionParams); undefined = none
};
// out[B, H, T, Dv] from q[B, H, T, Dh], k[B, Hkv, S, Dh], v[B, Hkv, S, Dv] (Hkv divides H:
// grouped-query attention without repeating k and v; on a backend without grouped_attention, k and
// v are repeated). v may be narrower or wider than q and k (differential attention's v is twice
// their width): the backend op then runs at the wider width with zero columns, which change
// neither q·k nor p·v, and the output keeps v's width; scale's default stays 1/sqrt(Dh). A bias or
// slopes on a backend without attention_bias, and a softcap without attention_softcap, are refused.
Var attention(Graph& g, const Var& q, const Var& k, const Var& v, const AttentionOptions& options);
// The same over heads kept where the projections put them, with no copies to split or merge them
// (on a backend with OptionalOp::packed_heads; elsewhere split_heads, attention and merge_heads):
// q [B, T, Wq], k [B, S, Wk], v [B, S, Wv] holding the heads at the columns `layout` says
// (ablate/backend.hpp, PackedHeads) -> out [B, T, H Dh]. q, k and v may be one Var (a fused q/k/v
// projection) or k and v one (a fused k/v projection); Dv = Dh.
Var packed_attention(Graph& g, const Var& q, const Var& k, const Var& v, const PackedHeads& layout,
                     const AttentionOptions& options);

// Rotary positions: x[B, H, T, Dh] (q or k) with its first `rotary` dims (0: all of Dh; even)
// turned pair by pair by angles position * base^(-2i/rotary) (Backend::rope_forward, "rotate half").
// positions: I32 [T], absolute (cached decoding passes offset..offset+T-1), on the graph's backend.
// On a backend without rope (Backend::supports) it is composed from mul, matmul and add.
Var rope(Graph& g, const Var& x, const Tensor& positions, int rotary = 0, float base = 10000.0f);
// The same with the caller's frequency per pair: pair i (i < R/2) turns by positions[t] *
// freqs[i] (freqs: F32 [R/2] on the graph's backend; R = 2 |freqs| rotary dims). Interpolated
// positions (freqs / s), NTK-aware and YaRN's per-pair scaling are a table of frequencies built once
// (or per call when the scale follows the length: R/2 floats, no synchronisation). On a backend
// without rope_frequencies it is composed (tables built on the host from positions and freqs).
Var rope(Graph& g, const Var& x, const Tensor& positions, const Tensor& freqs);

// x[..., offset : offset + width] (the last dim sliced; e.g. q, k, v of unequal widths out of one
// projection), and [a | b] joined along the last dim (same leading dims). Backends: OptionalOp::slice_last;
// without it, composed from matmul with 0/1 selections.
Var slice_last(Graph& g, const Var& x, std::int64_t offset, std::int64_t width);
Var concat_last(Graph& g, const Var& a, const Var& b);

// The small general set (optional backend ops), for a plugin that composes what no fused op does:
// softmax and sum over the last dim (x[..., C] -> [..., C] and [..., 1]), the mean composed from
// the sum, exp and sigmoid elementwise, and a reshape (a view: same elements, another shape; its
// gradient is reshaped back). On a backend without them, softmax, sum and sigmoid are composed from
// the core ops (framework/core/composed_ops.hpp: finite inputs); exp is refused.
Var softmax_last(Graph& g, const Var& x);
Var sum_last(Graph& g, const Var& x);
Var mean_last(Graph& g, const Var& x);
Var exp(Graph& g, const Var& x);
Var sigmoid(Graph& g, const Var& x);
Var reshape(Graph& g, const Var& x, const Shape& shape);

// The index and layout ops. iota: a constant of `shape` holding start + i * step at flat index i
// (built on the host and copied: positions, frequencies, ramps); no gradient. compare: 1 where
// (a c b) holds, else 0, in a's shape and dtype (b: a's shape, a's trailing dims or one element);
// a mask, so no gradient flows through it. permute: y's dim i is x's dim axes[i] (rank <= 4); its
// gradient is permuted back. compare and permute need the backend's op (OptionalOp::compare,
// permute: reference, onednn); elsewhere they are refused (no composition from the core ops).
Var iota(Graph& g, const Shape& shape, float start = 0.0f, float step = 1.0f, DType dtype = DType::F32);
Var compare(Graph& g, const Var& a, const Var& b, Compare c);
Var permute(Graph& g, const Var& x, const std::vector<int>& axes);

Var layer_norm(Graph& g, const Var& x, const Var& gamma, const Var& beta, float eps = 1e-5f);
Var rms_norm(Graph& g, const Var& x, const Var& gamma, float eps = 1e-6f);
Var activation(Graph& g, const Var& x, Activation act);

// alpha * a + beta * b, and a * b: b is a's shape, or repeats over a's leading dimensions (b is
// a's trailing dimensions, e.g. a [T, D] table over [B, T, D], a [D] per-channel gate), or is one
// element (a [1] scalar gate, as in ReZero). b's gradient sums over the repeats.
Var add(Graph& g, const Var& a, const Var& b, float alpha = 1.0f, float beta = 1.0f);
Var mul(Graph& g, const Var& a, const Var& b);
Var scale(Graph& g, const Var& x, float alpha);
// Identity outside training or with p == 0.
Var dropout(Graph& g, const Var& x, float p);
// x + dropout(h, p): a block's residual add of its sublayer's output h (x, h of one shape). One
// pass where the backend has dropout_add (else the two ops); either way the same dropout draw, so
// the results agree, and in backward x takes dy as its gradient without a copy (Graph::pass_grad).
Var dropout_add(Graph& g, const Var& x, const Var& h, float p);
// dropout(linear(x, w, b, act), p): a feed-forward layer's hidden activations, dropped out. One op
// where the backend has linear_dropout (the mask applied in the activation's pass, its gradient
// in the activation gradient's; no separate dropout tensor), else the two ops; either way the same
// dropout draw and the same values.
Var linear_dropout(Graph& g, const Var& x, const Var& w, const Var& b, Activation act, float p);

// y[B, T, D] = table[ids[B, T], :] (ids: I32, any shape; y gets ids' shape + [D]).
Var embedding(Graph& g, const Tensor& ids, const Var& table);

// x[B, T, parts*H*Dh] -> part `part` as [B, H, T, Dh]; merge: [B, H, T, Dh] -> [B, T, H*Dh].
Var split_heads(Graph& g, const Var& x, int heads, int parts = 1, int part = 0);
Var merge_heads(Graph& g, const Var& x);

struct CrossEntropyResult {
  Var loss;            // F32 [1]: mean over counted rows
  double rows = 0;     // rows counted (target != ignore_index)
  double correct = 0;  // counted rows whose argmax is the target
};
// logits[..., V], targets I32 [...]. Synchronises once to read the counts.
CrossEntropyResult cross_entropy(Graph& g, const Var& logits, const Tensor& targets, std::int32_t ignore_index = -100,
                                 float label_smoothing = 0.0f);

Var cast(Graph& g, const Var& x, DType dtype);

}  // namespace ablate::ops
