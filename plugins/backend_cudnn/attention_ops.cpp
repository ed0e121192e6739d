// backend/cudnn: attention (cuDNN's fused SDPA graph for BF16 training steps, else the unfused
// cuBLASLt + softmax-kernel path), the head split/merge kernels and the KV-cache time-slice write.
#include <optional>

#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

// ------------------------------------------------------------------------------------------
// attention

kernels::AttentionShape CudnnBackend::attention_shape(const Tensor& q, const Tensor& k, const ablate::AttentionParams& p) const {
  // k/v may have Hkv heads dividing H (grouped-query attention), the logits may be capped
  // (softcap), and a bias / ALiBi slopes may be added to them: the unfused path runs all of these;
  // the fused cuDNN graphs here are built without them, so such calls never take the fused path.
  kernels::AttentionShape a;
  a.B = q.shape()[0];
  a.H = q.shape()[1];
  a.T = q.shape()[2];
  a.S = k.shape()[2];
  a.Hkv = k.shape()[1];
  if (p.bias) {
    a.bias = p.bias->data<float>();
    a.bias_heads = p.bias->shape()[0];
  }
  if (p.slopes) a.slopes = p.slopes->data<float>();
  if (p.key_lengths) {
    a.key_lengths = p.key_lengths->data<std::int32_t>();
  }
  a.causal = p.causal;
  a.query_offset = p.causal || p.slopes ? p.query_offset : 0;  // the offset of masks and of ALiBi's distances
  a.dropout = p.dropout;
  a.rng = p.rng;
  a.softcap = p.softcap;
  return a;
}

// The fused SDPA configuration of this op when cuDNN's fused attention will run it: BF16
// training steps whose masks it expresses (causal from query 0, key padding), that need no
// probabilities, and that cuDNN has an engine for; nullopt sends the op down the unfused path.
std::optional<SdpaConfig> CudnnBackend::fused_attention(const kernels::AttentionShape& a, std::int64_t Dh, DType dtype,
                                                        bool probs, float scale, bool backward) {
  if (!config_.fused_attention || dtype != DType::BF16 || probs || a.query_offset != 0 || Dh % 8 != 0 || Dh > 128 ||
      a.Hkv != a.H || a.bias || a.slopes || a.softcap > 0.0f)
    return std::nullopt;
  SdpaConfig c;
  c.B = a.B;
  c.H = a.H;
  c.T = a.T;
  c.S = a.S;
  c.Dh = Dh;
  c.scale = scale;
  c.causal = a.causal;
  c.key_padding = a.key_lengths != nullptr;
  c.dropout = a.dropout > 0.0f;
  if (!graphs_->has_sdpa_engine(c, backward, stream_)) return std::nullopt;
  return c;
}

void CudnnBackend::do_attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                        const Tensor& v, const ablate::AttentionParams& params) {
  const char* op = "attention_forward";
  const kernels::AttentionShape a = attention_shape(q, k, params);
  const VT t = value_type(q);
  const std::int64_t Dh = q.shape()[3], BH = a.B * a.H;
  if (const auto cfg = fused_attention(a, Dh, q.dtype(), probs != nullptr, params.scale, false)) {
    const void* mask = cfg->dropout ? dropout_mask(a) : nullptr;
    if (graphs_->sdpa_forward(*cfg, out.raw(), lse.data<float>(), q.raw(), k.raw(), v.raw(), a.key_lengths, mask, stream_)) {
      if (a.key_lengths)  // queries of an item with no key: out 0, lse -inf, as the interface says
        kernels::attention_clear_keyless(out.raw(), lse.data<float>(), t, a, Dh, stream_);
      return;
    }
  }
  const std::size_t n = static_cast<std::size_t>(BH * a.T * a.S);
  auto* logits = static_cast<float*>(scratch(kAttLogits, n * sizeof(float)));
  void* pd = scratch(kAttPd, n * ablate::dtype_size(q.dtype()));
  // Grouped k/v heads: the G = H / Hkv query heads of a group are adjacent, one [G*T, Dh] block per k/v head.
  const std::int64_t BG = a.B * a.Hkv, GT = a.H / a.Hkv * a.T;
  // logits[BG, G*T, S] (= [BH, T, S]) = scale q[BG, G*T, Dh] · k^T[BG, Dh, S]
  gemm_->run(logits, VT::F32, operand(q, BG, GT, Dh, false), operand(k, BG, Dh, a.S, true), params.scale, 0.0f, {}, op);
  kernels::attention_softmax_forward(lse.data<float>(), probs ? probs->data<float>() : nullptr, pd, t, logits, a, stream_);
  // out[BG, G*T, Dh] = pd[BG, G*T, S] · v[BG, S, Dh]
  gemm_->run(out.raw(), t, GemmOperand{pd, t, BG, GT, a.S, false}, operand(v, BG, a.S, Dh, false), 1.0f, 0.0f, {}, op);
}

void CudnnBackend::do_attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out,
                                         const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                                         const ablate::AttentionParams& params) {
  const char* op = "attention_backward";
  const kernels::AttentionShape a = attention_shape(q, k, params);
  const VT t = value_type(q);
  const std::int64_t Dh = q.shape()[3], BH = a.B * a.H;
  zero_if_written(dq, params.dq_store);  // the paths below add
  zero_if_written(dk, params.dk_store);
  zero_if_written(dv, params.dv_store);

  const auto cfg = out.defined() ? fused_attention(a, Dh, q.dtype(), false, params.scale, true) : std::nullopt;
  if (cfg) {
    const void* mask = cfg->dropout ? dropout_mask(a) : nullptr;
    // cuDNN writes all three gradients; they are added to the caller's afterwards.
    void* gq = scratch(kGradA, q.bytes());
    void* gk = scratch(kGradB, k.bytes());
    void* gv = scratch(kGradC, v.bytes());
    if (graphs_->sdpa_backward(*cfg, gq, gk, gv, dout.raw(), out.raw(), lse.data<float>(), q.raw(), k.raw(), v.raw(),
                               a.key_lengths, mask, stream_)) {
      if (a.key_lengths) kernels::attention_zero_keyless_grads(gq, gk, gv, t, a, Dh, stream_);
      if (dq) kernels::axpy(dq->raw(), t, gq, t, q.numel(), 1.0f, stream_);
      if (dk) kernels::axpy(dk->raw(), t, gk, t, k.numel(), 1.0f, stream_);
      if (dv) kernels::axpy(dv->raw(), t, gv, t, v.numel(), 1.0f, stream_);
      return;
    }
  }
  const std::size_t n = static_cast<std::size_t>(BH * a.T * a.S), es = ablate::dtype_size(q.dtype());
  auto* logits = static_cast<float*>(scratch(kAttLogits, n * sizeof(float)));
  auto* dpd = static_cast<float*>(scratch(kAttDp, n * sizeof(float)));
  void* pd = scratch(kAttPd, n * es);
  void* ds = scratch(kAttDs, n * es);
  // Grouped k/v heads as in forward: [BG, G*T, ...] views of the [BH, T, ...] buffers.
  const std::int64_t BG = a.B * a.Hkv, GT = a.H / a.Hkv * a.T;
  // logits = scale q·k^T (recomputed); dpd[BG, G*T, S] = dout[BG, G*T, Dh] · v^T[BG, Dh, S]
  gemm_->run(logits, VT::F32, operand(q, BG, GT, Dh, false), operand(k, BG, Dh, a.S, true), params.scale, 0.0f, {}, op);
  gemm_->run(dpd, VT::F32, operand(dout, BG, GT, Dh, false), operand(v, BG, Dh, a.S, true), 1.0f, 0.0f, {}, op);
  kernels::attention_softmax_backward(ds, pd, t, logits, lse.data<float>(), dpd, a, stream_);
  if (params.dbias) kernels::attention_bias_backward(params.dbias->data<float>(), ds, t, a, stream_);
  // ds = d(capped logit) so far (the bias's gradient); q and k get it through the cap's slope.
  if (a.softcap > 0.0f && (dq || dk)) kernels::attention_softcap_backward(ds, t, logits, a, stream_);
  // dv[BG, S, Dh] += pd^T[BG, S, G*T] · dout[BG, G*T, Dh]
  if (dv) gemm_->run(dv->raw(), t, GemmOperand{pd, t, BG, a.S, GT, true}, operand(dout, BG, GT, Dh, false), 1.0f, 1.0f, {}, op);
  // dq[BG, G*T, Dh] += scale ds[BG, G*T, S] · k[BG, S, Dh]
  if (dq)
    gemm_->run(dq->raw(), t, GemmOperand{ds, t, BG, GT, a.S, false}, operand(k, BG, a.S, Dh, false), params.scale, 1.0f, {}, op);
  // dk[BG, S, Dh] += scale ds^T[BG, S, G*T] · q[BG, G*T, Dh]  (the group's heads summed)
  if (dk)
    gemm_->run(dk->raw(), t, GemmOperand{ds, t, BG, a.S, GT, true}, operand(q, BG, GT, Dh, false), params.scale, 1.0f, {}, op);
}

// The BF16 [B, H, T, S] dropout factors of this attention op: Ablate's Philox masks, so the fused
// path drops exactly what the CPU backends and the unfused path drop.
const void* CudnnBackend::dropout_mask(const kernels::AttentionShape& a) {
  const std::int64_t n = a.B * a.H * a.T * a.S;
  void* mask = scratch(kAttPd, static_cast<std::size_t>(n) * 2);
  kernels::dropout_factors(mask, VT::BF16, n, a.dropout, a.rng, stream_);
  return mask;
}

namespace {

// The [B, T, H, Dh] geometry of a head split (x [B, T, parts*H*Dh] -> y [B, H, T, Dh]).
struct HeadDims {
  std::int64_t B, T, H, Dh;
};

// heads: [B, H, T, Dh] (checked by ablate::contract).
HeadDims head_dims(const Tensor& heads) {
  return HeadDims{heads.shape()[0], heads.shape()[2], heads.shape()[1], heads.shape()[3]};
}

}  // namespace

// ---------------------------------------------------------------------------- heads
void CudnnBackend::do_split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) {
  const VT t = value_type(x);
  const HeadDims d = head_dims(y);
  kernels::split_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::do_split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  const VT t = value_type(dy);
  const HeadDims d = head_dims(dy);
  kernels::split_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::do_merge_heads_forward(Tensor& y, const Tensor& x) {
  const VT t = value_type(x);
  const HeadDims d = head_dims(x);
  kernels::merge_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

void CudnnBackend::do_merge_heads_backward(Tensor& dx, const Tensor& dy) {
  const VT t = value_type(dy);
  const HeadDims d = head_dims(dx);
  kernels::merge_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

// For every (b, h): rows offset .. offset+T-1 of dst [B, H, S, Dh] = src [B, H, T, Dh]: one
// strided 2-D copy (B*H blocks of T*Dh elements, S*Dh apart in dst).
void CudnnBackend::do_write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  const char* op = "write_time_slice";
  const std::int64_t B = src.shape()[0], H = src.shape()[1], T = src.shape()[2], Dh = src.shape()[3], S = dst.shape()[2];
  if (B * H * T * Dh == 0) return;
  const std::size_t es = ablate::dtype_size(src.dtype());
  check_cuda(cudaMemcpy2DAsync(static_cast<char*>(dst.raw()) + static_cast<std::size_t>(offset * Dh) * es,
                               static_cast<std::size_t>(S * Dh) * es, src.raw(), static_cast<std::size_t>(T * Dh) * es,
                               static_cast<std::size_t>(T * Dh) * es, static_cast<std::size_t>(B * H), cudaMemcpyDeviceToDevice,
                               stream_),
             op);
}

}  // namespace backend_cudnn
