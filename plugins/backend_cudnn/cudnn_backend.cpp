// backend/cudnn: the backend's life cycle and memory, the GEMM-shaped ops (linear, batched
// matmul) on cuBLASLt, attention (cuDNN's fused SDPA graph for BF16 training steps, else the
// unfused cuBLASLt + softmax-kernel path), layer norm (cuDNN graph, else kernels), and the
// runtime library's exported create function.
#include "cudnn_backend.hpp"

#include <algorithm>
#include <optional>

#include "ablate/error.hpp"
#include "cuda_check.hpp"

namespace backend_cudnn {

using kernels::Act;
using kernels::VT;

// ------------------------------------------------------------------------------------------
// checks

void fail(const char* op, const std::string& message) {
  throw ablate::Error(std::string("backend/cudnn: ") + op + ": " + message);
}

kernels::VT value_type(const Tensor& t) { return t.dtype() == DType::BF16 ? VT::BF16 : VT::F32; }

void need_value_dtype(const char* op, const char* name, const Tensor& g, const char* value_name, const Tensor& value) {
  if (g.dtype() != value.dtype())
    fail(op, std::string(name) + " " + g.str() + " must have the dtype of " + value_name + " " + value.str() +
                 " here: this backend has no f32 gradient for a bf16 " + op);
}

kernels::Act act_of(ablate::Activation a) { return static_cast<Act>(static_cast<int>(a)); }

NormDims norm_dims(const Tensor& x) { return NormDims{value_type(x), x.shape().rows(), x.shape().last()}; }

namespace {

// The [N, I] x [O, I] geometry of a linear op (its shapes checked by ablate::contract).
struct LinearDims {
  VT t;
  std::int64_t N, I, O;
};
LinearDims linear_dims(const Tensor& x, const Tensor& w) { return {value_type(x), x.shape().rows(), w.shape()[1], w.shape()[0]}; }

GemmOperand operand(const Tensor& t, std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  return GemmOperand{t.raw(), t.dtype() == DType::BF16 ? VT::BF16 : VT::F32, batch, rows, cols, trans};
}


}  // namespace

// ------------------------------------------------------------------------------------------
// life cycle and memory

CudnnBackend::CudnnBackend(const RuntimeConfig& config) : config_(config) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw ablate::Error(std::string("backend/cudnn: no usable CUDA GPU (cudaGetDeviceCount: ") +
                            (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")",
                        kNoGpuHint);
  if (config.device >= count)
    throw ablate::Error("backend/cudnn: device " + std::to_string(config.device) + " does not exist; this machine has " +
                            std::to_string(count) + " CUDA device(s)",
                        "set backend.device to a value in [0, " + std::to_string(count) + ")");
  check_cuda(cudaSetDevice(static_cast<int>(config.device)), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, static_cast<int>(config.device)), "cudaGetDeviceProperties");
  device_name_ = prop.name;
  if (prop.major < 8)
    throw ablate::Error("backend/cudnn: " + device_name_ + " (compute capability " + std::to_string(prop.major) + "." +
                            std::to_string(prop.minor) + ") is too old; bf16 and the kernels need 8.0 or newer");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cudnn(cudnnCreate(&cudnn_), "cudnnCreate");
  check_cudnn(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
  alloc_ = DeviceAllocator::create();
  auto workspace = [this](std::size_t bytes) { return scratch(kWorkspace, bytes); };
  gemm_ = std::make_unique<Gemm>(stream_, config.deterministic, config.tf32, workspace);
  graphs_ = std::make_unique<CudnnGraphs>(cudnn_, config.deterministic, workspace);
  check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(std::int32_t), cudaHostAllocMapped),
             "cudaHostAlloc (error flags)");
  flags_[0] = flags_[1] = 0;
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_device_), flags_, 0), "cudaHostGetDevicePointer");
}

CudnnBackend::~CudnnBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  graphs_.reset();
  gemm_.reset();
  for (auto& s : slots_) s.reset();
  if (flags_) cudaFreeHost(flags_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (stream_) cudaStreamDestroy(stream_);
}

ablate::BackendCaps CudnnBackend::caps() const {
  ablate::BackendCaps c;
  c.device = "cuda:" + std::to_string(config_.device) + " (" + device_name_ + ")";
  c.host_addressable = false;
  c.bf16 = true;
  c.bf16_arithmetic = "bf16 GEMMs and attention with f32 accumulation";
  c.deterministic = config_.deterministic;
  c.threads = 1;
  return c;
}

Tensor CudnnBackend::empty(const Shape& shape, DType dtype) {
  auto self = shared_from_this();
  return Tensor(alloc_->allocate(static_cast<std::size_t>(shape.numel()) * ablate::dtype_size(dtype), self), shape, dtype);
}

void* CudnnBackend::scratch(Slot slot, std::size_t bytes) {
  std::shared_ptr<ablate::Storage>& s = slots_[slot];
  if (!s || s->bytes < bytes) {
    s.reset();  // back to the cache first, so a grown slot can reuse it
    s = alloc_->allocate(std::max<std::size_t>(bytes, 256), nullptr);
  }
  return s->data;
}

void CudnnBackend::fill(Tensor& y, float value) {
  ablate::contract::fill(y);
  kernels::fill(y.raw(), static_cast<int>(y.dtype()), y.numel(), value, stream_);
}

void CudnnBackend::copy_from_host(Tensor& dst, const void* src) {
  ablate::contract::copy_from_host(dst);
  check_cuda(cudaMemcpyAsync(dst.raw(), src, dst.bytes(), cudaMemcpyHostToDevice, stream_), "copy_from_host");
}

void CudnnBackend::copy_to_host(void* dst, const Tensor& src) {
  ablate::contract::copy_to_host(src);
  check_cuda(cudaMemcpyAsync(dst, src.raw(), src.bytes(), cudaMemcpyDeviceToHost, stream_), "copy_to_host");
  synchronize();
}

void CudnnBackend::copy(Tensor& dst, const Tensor& src) {
  ablate::contract::copy(dst, src);
  check_cuda(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToDevice, stream_), "copy");
}

void CudnnBackend::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "synchronize (an earlier kernel failed)");
  check_flags();
}

void CudnnBackend::check_flags() {
  const std::int32_t bad_id = flags_[0], bad_target = flags_[1];  // the stream is idle: no kernel writes them now
  if (bad_id == 0 && bad_target == 0) return;
  flags_[0] = flags_[1] = 0;
  if (bad_id != 0) fail("embedding_forward", "ids[" + std::to_string(bad_id - 1) + "] is outside [0, V)");
  fail("cross_entropy_forward", "targets[" + std::to_string(bad_target - 1) + "] is outside [0, V) and is not ignore_index");
}

// ------------------------------------------------------------------------------------------
// linear and batched matmul on cuBLASLt

void CudnnBackend::linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                  ablate::Activation act) {
  ablate::contract::linear_forward(y, pre, x, w, b, act);
  const char* op = "linear_forward";
  const auto [t, N, I, O] = linear_dims(x, w);
  GemmEpilogue ep{b ? b->raw() : nullptr, act_of(act), pre ? pre->raw() : nullptr};
  gemm_->run(y.raw(), t, operand(x, 1, N, I, false), operand(w, 1, I, O, true), 1.0f, 0.0f, ep, op);
}

void CudnnBackend::linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                   const Tensor& w, const Tensor* pre, const Tensor& y, ablate::Activation act) {
  ablate::contract::linear_backward(dx, dw, db, dy, x, w, pre, y, act);
  const char* op = "linear_backward";
  const auto [t, N, I, O] = linear_dims(x, w);
  // g = dy ⊙ act'(pre), or dy itself without an activation
  const void* g = dy.raw();
  if (act != ablate::Activation::None) {
    void* gbuf = scratch(kLinG, dy.bytes());
    const bool from_output = pre == nullptr;  // ReLU: y > 0
    kernels::activation_grad(gbuf, t, dy.raw(), from_output ? y.raw() : pre->raw(), t, N * O, act_of(act), from_output,
                             stream_);
    g = gbuf;
  }
  const GemmOperand gop{g, t, 1, N, O, false};
  if (dx) {  // dx[N, I] += g[N, O] · w[O, I]
    gemm_->run(dx->raw(), t, gop, operand(w, 1, O, I, false), 1.0f, 1.0f, {}, op);
  }
  if (dw) {  // dw[O, I] += g^T[O, N] · x[N, I]
    const VT wt = value_type(*dw);
    gemm_->run(dw->raw(), wt, GemmOperand{g, t, 1, O, N, true}, operand(x, 1, N, I, false), 1.0f, 1.0f, {}, op);
  }
  if (db) {  // db[O] += column sums of g
    const VT bt = value_type(*db);
    kernels::column_sum(db->raw(), bt, g, t, N, O, 1.0f, scratch(kReduce, kernels::column_sum_scratch_bytes(N, O)),
                        stream_);
  }
}

namespace {

// [..., R, C] (rank >= 2, checked by ablate::contract) as (batch, R, C).
void matrix_dims(const Tensor& t, std::int64_t& batch, std::int64_t& r, std::int64_t& c) {
  const int rank = t.shape().rank();
  r = t.shape()[rank - 2];
  c = t.shape()[rank - 1];
  batch = (r * c == 0) ? 0 : t.numel() / (r * c);
}

}  // namespace

void CudnnBackend::matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool ta, bool tb, float alpha) {
  ablate::contract::matmul_forward(c, a, b, ta, tb);
  const char* op = "matmul_forward";
  const VT t = value_type(a);
  std::int64_t ba, ar, ac, bb, br, bc;
  matrix_dims(a, ba, ar, ac);
  matrix_dims(b, bb, br, bc);
  const std::int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
  gemm_->run(c.raw(), t, operand(a, ba, M, K, ta), operand(b, ba, K, N, tb), alpha, 0.0f, {}, op);
}

// With C = alpha op(A)·op(B): d op(A) = alpha dC·op(B)^T and d op(B) = alpha op(A)^T·dC, written
// into the stored layouts (a stored transposed gets the transposed product).
void CudnnBackend::matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool ta,
                                   bool tb, float alpha) {
  ablate::contract::matmul_backward(da, db, dc, a, b, ta, tb);
  const char* op = "matmul_backward";
  const VT t = value_type(a);
  std::int64_t Bt, ar, ac, bb, br, bc;
  matrix_dims(a, Bt, ar, ac);
  matrix_dims(b, bb, br, bc);
  const std::int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
  const GemmOperand dC{dc.raw(), t, Bt, M, N, false}, dCt{dc.raw(), t, Bt, N, M, true};
  if (da) {
    need_value_dtype(op, "da", *da, "a", a);
    if (!ta)  // da[M, K] += alpha dC[M, N] · op(B)^T[N, K]
      gemm_->run(da->raw(), t, dC, operand(b, Bt, N, K, !tb), alpha, 1.0f, {}, op);
    else  // da[K, M] += alpha op(B)[K, N] · dC^T[N, M]
      gemm_->run(da->raw(), t, operand(b, Bt, K, N, tb), dCt, alpha, 1.0f, {}, op);
  }
  if (db) {
    need_value_dtype(op, "db", *db, "b", b);
    if (!tb)  // db[K, N] += alpha op(A)^T[K, M] · dC[M, N]
      gemm_->run(db->raw(), t, operand(a, Bt, K, M, !ta), dC, alpha, 1.0f, {}, op);
    else  // db[N, K] += alpha dC^T[N, M] · op(A)[M, K]
      gemm_->run(db->raw(), t, dCt, operand(a, Bt, M, K, ta), alpha, 1.0f, {}, op);
  }
}

// ------------------------------------------------------------------------------------------
// attention

kernels::AttentionShape CudnnBackend::attention_shape(const Tensor& q, const Tensor& k,
                                                      const ablate::AttentionParams& p) const {
  // k/v may have Hkv heads dividing H (grouped-query attention), and a bias / ALiBi slopes may be
  // added to the logits: the unfused path runs both (compiled, not yet run on a GPU); the fused
  // cuDNN graphs here are built without them, so such calls never take the fused path.
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
  return a;
}

// The fused SDPA configuration of this op when cuDNN's fused attention will run it: BF16
// training steps whose masks it expresses (causal from query 0, key padding), that need no
// probabilities, and that cuDNN has an engine for; nullopt sends the op down the unfused path.
std::optional<SdpaConfig> CudnnBackend::fused_attention(const kernels::AttentionShape& a, std::int64_t Dh, DType dtype,
                                                        bool probs, float scale, bool backward) {
  if (!config_.fused_attention || dtype != DType::BF16 || probs || a.query_offset != 0 || Dh % 8 != 0 || Dh > 128 ||
      a.Hkv != a.H || a.bias || a.slopes)
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

void CudnnBackend::attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                     const Tensor& v, const ablate::AttentionParams& params) {
  ablate::contract::attention_forward(*this, out, lse, probs, q, k, v, params);
  const char* op = "attention_forward";
  const kernels::AttentionShape a = attention_shape(q, k, params);
  const VT t = value_type(q);
  const std::int64_t Dh = q.shape()[3], BH = a.B * a.H;
  if (const auto cfg = fused_attention(a, Dh, q.dtype(), probs != nullptr, params.scale, false)) {
    const void* mask = cfg->dropout ? dropout_mask(a) : nullptr;
    if (graphs_->sdpa_forward(*cfg, out.raw(), lse.data<float>(), q.raw(), k.raw(), v.raw(), a.key_lengths, mask,
                              stream_)) {
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

void CudnnBackend::attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out,
                                      const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const ablate::AttentionParams& params) {
  ablate::contract::attention_backward(*this, dq, dk, dv, dout, out, lse, q, k, v, params);
  const char* op = "attention_backward";
  const kernels::AttentionShape a = attention_shape(q, k, params);
  const VT t = value_type(q);
  const std::int64_t Dh = q.shape()[3], BH = a.B * a.H;

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
  // dv[BG, S, Dh] += pd^T[BG, S, G*T] · dout[BG, G*T, Dh]
  if (dv) gemm_->run(dv->raw(), t, GemmOperand{pd, t, BG, a.S, GT, true}, operand(dout, BG, GT, Dh, false), 1.0f, 1.0f, {}, op);
  // dq[BG, G*T, Dh] += scale ds[BG, G*T, S] · k[BG, S, Dh]
  if (dq) gemm_->run(dq->raw(), t, GemmOperand{ds, t, BG, GT, a.S, false}, operand(k, BG, a.S, Dh, false), params.scale, 1.0f, {}, op);
  // dk[BG, S, Dh] += scale ds^T[BG, S, G*T] · q[BG, G*T, Dh]  (the group's heads summed)
  if (dk) gemm_->run(dk->raw(), t, GemmOperand{ds, t, BG, a.S, GT, true}, operand(q, BG, GT, Dh, false), params.scale, 1.0f, {}, op);
}

// The BF16 [B, H, T, S] dropout factors of this attention op: Ablate's Philox masks, so the fused
// path drops exactly what the CPU backends and the unfused path drop.
const void* CudnnBackend::dropout_mask(const kernels::AttentionShape& a) {
  const std::int64_t n = a.B * a.H * a.T * a.S;
  void* mask = scratch(kAttPd, static_cast<std::size_t>(n) * 2);
  kernels::dropout_factors(mask, VT::BF16, n, a.dropout, a.rng, stream_);
  return mask;
}

// ------------------------------------------------------------------------------------------
// layer norm: cuDNN's norm graphs, or the kernels where cuDNN has no engine

void CudnnBackend::layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                      const Tensor& beta, float eps) {
  ablate::contract::layer_norm_forward(y, mean, rstd, x, gamma, beta);
  const auto [t, rows, D] = norm_dims(x);
  if (rows == 0) return;
  if (graphs_->layer_norm_forward(t == VT::BF16, rows, D, eps, y.raw(), mean.data<float>(), rstd.data<float>(), x.raw(),
                                  gamma.raw(), beta.raw(), stream_))
    return;
  kernels::layer_norm_forward(y.raw(), mean.data<float>(), rstd.data<float>(), x.raw(), gamma.raw(), beta.raw(), t, rows,
                              D, eps, stream_);
}

void CudnnBackend::layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                       const Tensor& mean, const Tensor& rstd, const Tensor& gamma) {
  ablate::contract::layer_norm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
  const char* op = "layer_norm_backward";
  const auto [t, rows, D] = norm_dims(x);
  const VT gt = dgamma ? value_type(*dgamma) : VT::F32;
  const VT bt = dbeta ? value_type(*dbeta) : VT::F32;
  if (rows == 0) return;
  // cuDNN writes dx, dgamma and dbeta (F32); they are then added to the caller's gradients.
  void* gx = scratch(kGradA, x.bytes());
  auto* gg = static_cast<float*>(scratch(kGradB, static_cast<std::size_t>(D) * sizeof(float)));
  auto* gb = static_cast<float*>(scratch(kGradC, static_cast<std::size_t>(D) * sizeof(float)));
  if (graphs_->layer_norm_backward(t == VT::BF16, rows, D, gx, gg, gb, dy.raw(), x.raw(), mean.data<float>(),
                                   rstd.data<float>(), gamma.raw(), stream_)) {
    if (dx) kernels::axpy(dx->raw(), t, gx, t, x.numel(), 1.0f, stream_);
    if (dgamma) kernels::axpy(dgamma->raw(), gt, gg, VT::F32, D, 1.0f, stream_);
    if (dbeta) kernels::axpy(dbeta->raw(), bt, gb, VT::F32, D, 1.0f, stream_);
    return;
  }
  if (dgamma && dbeta && gt != bt) fail(op, "dgamma and dbeta must share a dtype");
  kernels::layer_norm_backward(dx ? dx->raw() : nullptr, dgamma ? dgamma->raw() : nullptr,
                               dbeta ? dbeta->raw() : nullptr, dgamma ? gt : bt, dy.raw(), x.raw(), mean.data<float>(),
                               rstd.data<float>(), gamma.raw(), t, rows, D,
                               scratch(kReduce, kernels::column_sum_scratch_bytes(rows, D)), stream_);
}

}  // namespace backend_cudnn

// ------------------------------------------------------------------------------------------
// the runtime library's entry point (see runtime_entry.hpp)

extern "C" __attribute__((visibility("default"))) ablate::Component* ablate_backend_cudnn_runtime_create(
    const backend_cudnn::RuntimeConfig* config) {
  return new backend_cudnn::CudnnBackend(*config);
}
