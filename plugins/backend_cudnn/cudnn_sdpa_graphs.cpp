// backend/cudnn: the attention graphs (SDPA forward and backward, cudnn_graph.hpp's sdpa_*),
// built from cudnn_descriptors.hpp's Builder in the layout cuDNN's fused attention engines take.
//
// The attention graphs are the ones cuDNN's fused flash-attention engines (Hopper) recognize,
// as cudnn-frontend's composite SDPA nodes lay them out for cuDNN 9.x: batched matmuls, the
// scale, masks made of GEN_INDEX / compare / BINARY_SELECT pointwise ops, a softmax spelled out
// as MAX and ADD reductions, and the softmax statistics max + log(sum exp), that is the
// natural-log logsumexp of each row of masked, scaled logits (Ablate's `lse`). cuDNN classifies
// these graphs as its SDPA_FWD / SDPA_BWD patterns. The tensor data types of that layout
// (including those of the virtual tensors) are kept as they are, since the engines match them.
#include <cstdint>
#include <limits>
#include <vector>

#include "cudnn_descriptors.hpp"

namespace backend_cudnn {

namespace {

// The attention tensors of one configuration: q, o, do [B, H, T, Dh], k, v [B, H, S, Dh], all
// dense, and the statistics [B, H, T, 1].
struct SdpaShape {
  Dims q, kv, stats, stats_strides, scores;
  // k (or v) [B, H, S, Dh] read as its transpose [B, H, Dh, S]: same data, strides swapped
  Dims kv_t, kv_t_strides;
  explicit SdpaShape(const SdpaConfig& c)
      : q{c.B, c.H, c.T, c.Dh},
        kv{c.B, c.H, c.S, c.Dh},
        stats{c.B, c.H, c.T, 1},
        stats_strides{c.H * c.T, c.T, 1, 1},
        scores{c.B, c.H, c.T, c.S},
        kv_t{c.B, c.H, c.Dh, c.S},
        kv_t_strides{c.H * c.S * c.Dh, c.S * c.Dh, 1, c.Dh} {}
};

// The per-item sequence lengths of a key-padded batch, I32 [B, 1, 1, 1]: the queries' (all T, in
// device memory the plan owns) and the caller's kv_lengths.
struct SeqLens {
  GraphTensor q, kv;
};
SeqLens seq_lens(Builder& g, const SdpaConfig& c) {
  const Dims dims{c.B, 1, 1, 1}, strides{1, 1, 1, 1};
  const std::vector<std::int32_t> q_lengths(static_cast<std::size_t>(c.B), static_cast<std::int32_t>(c.T));
  return {g.device_i32(q_lengths, dims, strides), g.arg(kKvLengths, CUDNN_DATA_INT32, dims, strides)};
}

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Key padding: logits outside (query i < q_len[b]) and (key j < kv_len[b]) become -inf.
GraphTensor padding_mask(Builder& g, const GraphTensor& s, const SeqLens& lens) {
  const GraphTensor row = g.gen_index(s, 2, CUDNN_DATA_INT32);
  const GraphTensor col = g.gen_index(s, 3, CUDNN_DATA_INT32);
  const GraphTensor row_ok = g.boolean(CUDNN_POINTWISE_CMP_LT, row, lens.q);
  const GraphTensor col_ok = g.boolean(CUDNN_POINTWISE_CMP_LT, col, lens.kv);
  const GraphTensor keep = g.boolean(CUDNN_POINTWISE_LOGICAL_AND, row_ok, col_ok);
  return g.select(s, g.constant(kMinusInf), keep);
}

// Causal, top-left aligned: logits of keys j > query i become -inf. (The index generation runs in
// F32 math here, as in the pattern the fused engines take; the padding mask's runs in I32.)
GraphTensor causal_mask(Builder& g, const GraphTensor& s) {
  const GraphTensor row = g.gen_index(s, 2, kF32);
  const GraphTensor col = g.gen_index(s, 3, kF32);
  const GraphTensor keep = g.boolean(CUDNN_POINTWISE_CMP_GE, row, col);
  return g.select(s, g.constant(kMinusInf), keep);
}

}  // namespace

// SDPA forward: s = mask(scale q·kᵀ); stats = max + log(sum exp(s - max)); p = softmax(s),
// times the dropout factors; o = p·v.
void sdpa_forward_graph(Builder& g, const SdpaConfig& c) {
  const SdpaShape sh(c);
  const GraphTensor q = g.arg(kQ, kBF16, sh.q, dense(sh.q));
  const GraphTensor k_t = g.arg(kK, kBF16, sh.kv_t, sh.kv_t_strides);
  const GraphTensor v = g.arg(kV, kBF16, sh.kv, dense(sh.kv));
  const GraphTensor o = g.arg(kO, kBF16, sh.q, dense(sh.q));
  const GraphTensor stats = g.arg(kStats, kF32, sh.stats, sh.stats_strides);
  const GraphTensor scale = g.host_scalar(kScale);
  SeqLens lens;
  if (c.key_padding) lens = seq_lens(g, c);
  const GraphTensor* q_len = c.key_padding ? &lens.q : nullptr;
  const GraphTensor* kv_len = c.key_padding ? &lens.kv : nullptr;

  GraphTensor s = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(q, k_t, s, {.m = q_len, .n = kv_len});
  s = g.binary(CUDNN_POINTWISE_MUL, s, scale);
  if (c.key_padding) s = padding_mask(g, s, lens);
  if (c.causal) s = causal_mask(g, s);

  const GraphTensor max = g.reduction(CUDNN_REDUCE_TENSOR_MAX, s);
  const GraphTensor e = g.unary(CUDNN_POINTWISE_EXP, g.binary(CUDNN_POINTWISE_SUB, s, max));
  const GraphTensor sum = g.reduction(CUDNN_REDUCE_TENSOR_ADD, e);
  const GraphTensor log_sum = g.unary(CUDNN_POINTWISE_LOG, sum);
  g.pointwise(CUDNN_POINTWISE_ADD, kF32, max, &log_sum, nullptr, stats);
  // the probabilities that enter the second matmul are BF16, like v
  GraphTensor p = g.binary(CUDNN_POINTWISE_DIV, e, sum, c.dropout ? kF32 : kBF16);
  if (c.dropout) {
    // The pattern's dropout scale, then the mask; the mask already holds the scaled factors.
    p = g.binary(CUDNN_POINTWISE_MUL, p, g.constant(1.0f));
    p = g.binary(CUDNN_POINTWISE_MUL, p, g.arg(kDropoutMask, kBF16, sh.scores, dense(sh.scores)), kBF16);
  }
  g.matmul(p, v, o, {.m = q_len, .k = kv_len});
}

// SDPA backward: p = exp(mask(scale q·kᵀ) - stats) (times the dropout factors: pd);
// dv = pdᵀ·do; ds = scale · p ∘ (dp - rowsum(do ∘ o)) with dp = (do·vᵀ) ∘ factors;
// dk = dsᵀ·q; dq = ds·k. Deterministic mode writes dq from the matmul directly; otherwise the
// engine accumulates it in an F32 buffer (in the workspace) and converts.
void sdpa_backward_graph(Builder& g, const SdpaConfig& c, bool deterministic) {
  const SdpaShape sh(c);
  const GraphTensor q = g.arg(kQ, kBF16, sh.q, dense(sh.q));
  const GraphTensor k_t = g.arg(kK, kBF16, sh.kv_t, sh.kv_t_strides);
  const GraphTensor v_t = g.arg(kV, kBF16, sh.kv_t, sh.kv_t_strides);
  const GraphTensor o = g.arg(kO, kBF16, sh.q, dense(sh.q));
  const GraphTensor d_o = g.arg(kDO, kBF16, sh.q, dense(sh.q));
  const GraphTensor stats = g.arg(kStats, kF32, sh.stats, sh.stats_strides);
  const GraphTensor dq = g.arg(kDQ, kBF16, sh.q, dense(sh.q));
  const GraphTensor dk = g.arg(kDK, kBF16, sh.kv, dense(sh.kv));
  const GraphTensor dv = g.arg(kDV, kBF16, sh.kv, dense(sh.kv));
  const GraphTensor scale = g.host_scalar(kScale);
  SeqLens lens;
  if (c.key_padding) lens = seq_lens(g, c);
  const GraphTensor* q_len = c.key_padding ? &lens.q : nullptr;
  const GraphTensor* kv_len = c.key_padding ? &lens.kv : nullptr;

  // softmax_sum = rowsum(do ∘ o) · 1 (the pattern's inverse dropout scale; 1 as the mask is scaled),
  // kept in the workspace. The product's strides are the pattern's (a virtual tensor).
  const GraphTensor do_o = g.virt(kF32, sh.q, {c.H * c.T * c.Dh, c.T * c.Dh, c.H * c.Dh, 1});
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, d_o, &o, nullptr, do_o);
  const GraphTensor row_sum = g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o);
  const GraphTensor softmax_sum = g.scratch(sh.stats);
  const GraphTensor one = g.constant(1.0f);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, row_sum, &one, nullptr, softmax_sum);

  // p, recomputed from the forward's statistics
  GraphTensor s = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(q, k_t, s, {.m = q_len, .n = kv_len});
  s = g.binary(CUDNN_POINTWISE_MUL, s, scale);
  if (c.key_padding) s = padding_mask(g, s, lens);
  s = g.binary(CUDNN_POINTWISE_SUB, s, stats);
  if (c.causal) s = causal_mask(g, s);
  const GraphTensor p = g.unary(CUDNN_POINTWISE_EXP, s);
  GraphTensor mask, dropout_scale, pd = p;
  if (c.dropout) {
    mask = g.arg(kDropoutMask, kBF16, sh.scores, dense(sh.scores));
    dropout_scale = g.constant(1.0f);  // the pattern's dropout scale; the mask holds the scaled factors
    pd = g.binary(CUDNN_POINTWISE_MUL, g.binary(CUDNN_POINTWISE_MUL, p, mask), dropout_scale);
  }

  // dv = pdᵀ·do, pdᵀ [B, H, S, T] a BF16 view
  const Dims scores_t{c.B, c.H, c.S, c.T}, scores_t_strides{c.H * c.T * c.S, c.T * c.S, 1, c.S};
  g.matmul(g.reshape(pd, kBF16, scores_t, scores_t_strides), d_o, dv, {.m = kv_len, .k = q_len});

  // ds
  GraphTensor dp = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(d_o, v_t, dp, {.m = q_len, .n = kv_len});
  if (c.dropout) dp = g.binary(CUDNN_POINTWISE_MUL, dp, mask);
  GraphTensor ds = g.binary(CUDNN_POINTWISE_MUL, g.binary(CUDNN_POINTWISE_SUB, dp, softmax_sum), p);
  if (c.dropout) ds = g.binary(CUDNN_POINTWISE_MUL, ds, dropout_scale);
  ds = g.binary(CUDNN_POINTWISE_MUL, ds, scale);

  // dk = dsᵀ·q
  g.matmul(g.reshape(ds, kBF16, scores_t, scores_t_strides), q, dk, {.m = kv_len, .k = q_len});

  // dq = ds·k, k [B, H, S, Dh] as a view of kᵀ (an F32 virtual tensor in the pattern)
  const GraphTensor k = g.reshape(k_t, kF32, sh.kv, dense(sh.kv));
  if (deterministic) {
    g.matmul(ds, k, dq, {.m = q_len, .k = kv_len});
  } else {
    const GraphTensor dq_accum = g.scratch(sh.q);
    g.matmul(ds, k, dq_accum, {.m = q_len, .k = kv_len});
    g.pointwise(CUDNN_POINTWISE_IDENTITY, kF32, dq_accum, nullptr, nullptr, dq);
  }
}

}  // namespace backend_cudnn
