// backend/cudnn: the ops that are shape checks plus one or two kernel launches (kernels.cu):
// RMS norm, elementwise ops, dropout, embedding, head split/merge, the KV-cache write, cross
// entropy, the optimizer utilities and casts.
#include <algorithm>
#include <numeric>

#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

namespace {

// The [B, T, H, Dh] geometry of a head split (x [B, T, parts*H*Dh] -> y [B, H, T, Dh]).
struct HeadDims {
  std::int64_t B, T, H, Dh;
};

HeadDims split_dims(const char* op, const Tensor& merged, const Tensor& heads, int parts, int part) {
  if (heads.shape().rank() != 4) fail(op, "heads " + heads.str() + " must be [B, H, T, Dh]");
  const HeadDims d{heads.shape()[0], heads.shape()[2], heads.shape()[1], heads.shape()[3]};
  if (parts < 1 || part < 0 || part >= parts) fail(op, "part " + std::to_string(part) + " of " + std::to_string(parts));
  need_numel(op, "x", merged, d.B * d.T * parts * d.H * d.Dh);
  if (merged.shape().last() != parts * d.H * d.Dh)
    fail(op, "x " + merged.str() + " must be [B, T, " + std::to_string(parts) + "*H*Dh] for " + heads.str());
  if (merged.dtype() != heads.dtype()) fail(op, merged.str() + " and " + heads.str() + " differ in dtype");
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------- RMS norm
void CudnnBackend::rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  const char* op = "rms_norm_forward";
  const auto [t, rows, D] = norm_dims(op, x, "y", y, nullptr, gamma, {{"rstd", &rstd}});
  kernels::rms_norm_forward(y.raw(), rstd.data<float>(), x.raw(), gamma.raw(), t, rows, D, eps, stream_);
}

void CudnnBackend::rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                     const Tensor& gamma) {
  const char* op = "rms_norm_backward";
  const auto [t, rows, D] = norm_dims(op, x, "dy", dy, dx, gamma, {{"rstd", &rstd}});
  const VT gt = dgamma ? grad_type(op, "dgamma", *dgamma, gamma) : VT::F32;
  kernels::rms_norm_backward(dx ? dx->raw() : nullptr, dgamma ? dgamma->raw() : nullptr, gt, dy.raw(), x.raw(),
                             rstd.data<float>(), gamma.raw(), t, rows, D,
                             scratch(kReduce, kernels::column_sum_scratch_bytes(rows, D)), stream_);
}

// ---------------------------------------------------------------------------- elementwise
void CudnnBackend::activation_forward(Tensor& y, const Tensor& x, ablate::Activation act) {
  const char* op = "activation_forward";
  const VT t = value_type(op, "x", x);
  need_like(op, "y", y, x);
  kernels::activation_forward(y.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, ablate::Activation act) {
  const char* op = "activation_backward";
  const VT t = value_type(op, "x", x);
  need_like(op, "dy", dy, x);
  need_like(op, "dx", dx, x);
  kernels::activation_backward(dx.raw(), dy.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const char* op = "add_forward";
  const VT t = value_type(op, "a", a);
  need_dtype(op, "b", b, a.dtype());
  need_like(op, "y", y, a);
  if (b.numel() == 0 ? a.numel() != 0 : a.numel() % b.numel() != 0)
    fail(op, "b " + b.str() + " must repeat over a " + a.str() + " (its numel must divide a's)");
  kernels::add_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), alpha, beta, stream_);
}

void CudnnBackend::add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  const char* op = "add_backward";
  const VT t = value_type(op, "dy", dy);
  if (da) {
    need_like(op, "da", *da, dy);
    kernels::axpy(da->raw(), t, dy.raw(), t, dy.numel(), alpha, stream_);
  }
  if (db) {
    const VT bt = value_type(op, "db", *db);
    const std::int64_t nb = db->numel();
    if (nb == 0 ? dy.numel() != 0 : dy.numel() % nb != 0) fail(op, "db " + db->str() + " must repeat over dy " + dy.str());
    if (nb > 0)  // db += beta * dy summed over its repeats: the column sums of dy as [numel / nb, nb]
      kernels::column_sum(db->raw(), bt, dy.raw(), t, dy.numel() / nb, nb, beta,
                          scratch(kReduce, kernels::column_sum_scratch_bytes(dy.numel() / nb, nb)), stream_);
  }
}

void CudnnBackend::mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "mul_forward";
  const VT t = value_type(op, "a", a);
  need_dtype(op, "b", b, a.dtype());
  need_like(op, "y", y, a);
  if (b.numel() == 0 ? a.numel() != 0 : a.numel() % b.numel() != 0)
    fail(op, "b " + b.str() + " must repeat over a " + a.str() + " (its numel must divide a's)");
  kernels::mul_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), stream_);
}

void CudnnBackend::mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  const VT t = value_type(op, "a", a);
  need_like(op, "dy", dy, a);
  need_dtype(op, "b", b, a.dtype());
  const std::int64_t n = a.numel(), nb = b.numel();
  if (nb == 0 ? n != 0 : n % nb != 0)
    fail(op, "b " + b.str() + " must repeat over a " + a.str() + " (its numel must divide a's)");
  if (da) need_like(op, "da", *da, a);
  if (db) need_like(op, "db", *db, b);
  void* reduce = db && nb > 0 && nb != n ? scratch(kReduce, kernels::column_sum_scratch_bytes(n / nb, nb)) : nullptr;
  kernels::mul_backward(da ? da->raw() : nullptr, db ? db->raw() : nullptr, dy.raw(), a.raw(), b.raw(), t, n, nb, reduce,
                        stream_);
}

void CudnnBackend::axpy(Tensor& y, const Tensor& x, float alpha) {
  const char* op = "axpy";
  const VT yt = value_type(op, "y", y), xt = value_type(op, "x", x);
  need_numel(op, "x", x, y.numel());
  kernels::axpy(y.raw(), yt, x.raw(), xt, y.numel(), alpha, stream_);
}

void CudnnBackend::dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_forward";
  const VT t = value_type(op, "x", x);
  need_like(op, "y", y, x);
  need_probability(op, "p", p);
  kernels::dropout_forward(y.raw(), x.raw(), t, x.numel(), p, rng, stream_);
}

void CudnnBackend::dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_backward";
  const VT t = value_type(op, "dy", dy);
  need_like(op, "dx", dx, dy);
  need_probability(op, "p", p);
  kernels::dropout_backward(dx.raw(), dy.raw(), t, dy.numel(), p, rng, stream_);
}

// ---------------------------------------------------------------------------- embedding
void CudnnBackend::embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  const char* op = "embedding_forward";
  const VT t = value_type(op, "table", table);
  need_dtype(op, "ids", ids, DType::I32);
  need_dtype(op, "y", y, table.dtype());
  if (table.shape().rank() != 2) fail(op, "table " + table.str() + " must be [V, D]");
  const std::int64_t V = table.shape()[0], D = table.shape()[1], N = ids.numel();
  if (y.shape().rows() != N || y.shape().last() != D)
    fail(op, "y " + y.str() + " must be [N, D] for ids " + ids.str() + " and table " + table.str());
  kernels::embedding_forward(y.raw(), ids.data<std::int32_t>(), table.raw(), t, N, D, V,
                             flags_device_, stream_);
}

// dtable[ids[n]] += dy[n]. Deterministic mode groups the rows by id on the host (one small
// device-to-host copy of the ids) and sums each group in row order; otherwise float atomics.
void CudnnBackend::embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const char* op = "embedding_backward";
  const VT t = value_type(op, "dy", dy);
  const VT gt = value_type(op, "dtable", dtable);
  need_dtype(op, "ids", ids, DType::I32);
  if (dtable.shape().rank() != 2) fail(op, "dtable " + dtable.str() + " must be [V, D]");
  const std::int64_t V = dtable.shape()[0], D = dtable.shape()[1], N = ids.numel();
  if (dy.shape().rows() != N || dy.shape().last() != D)
    fail(op, "dy " + dy.str() + " must be [N, D] for ids " + ids.str() + " and dtable " + dtable.str());
  if (dtable.dtype() != DType::F32 && dtable.dtype() != dy.dtype()) fail(op, "dtable must be f32 or dy's dtype");
  if (N == 0) return;
  if (!config_.deterministic && gt == VT::F32) {
    kernels::embedding_backward_atomic(dtable.data<float>(), dy.raw(), t, ids.data<std::int32_t>(), N, D, V, stream_);
    return;
  }
  host_ids_.resize(static_cast<std::size_t>(N));
  copy_to_host(host_ids_.data(), ids);
  for (std::int64_t n = 0; n < N; ++n)
    if (host_ids_[static_cast<std::size_t>(n)] < 0 || host_ids_[static_cast<std::size_t>(n)] >= V)
      fail(op, "ids[" + std::to_string(n) + "] = " + std::to_string(host_ids_[static_cast<std::size_t>(n)]) +
                   " is outside [0, V = " + std::to_string(V) + ")");
  // groups_ = [rows (N) | uniq ids (U <= N) | starts (U + 1)], rows stable-sorted by id: built in
  // place at fixed offsets, so a warm step allocates nothing here.
  const std::size_t n = static_cast<std::size_t>(N);
  groups_.resize(3 * n + 1);
  std::int32_t* rows = groups_.data();
  std::int32_t* uniq = rows + n;
  std::int32_t* starts = uniq + n;
  std::iota(rows, rows + n, 0);
  std::stable_sort(rows, rows + n, [this](std::int32_t a, std::int32_t b) {
    return host_ids_[static_cast<std::size_t>(a)] < host_ids_[static_cast<std::size_t>(b)];
  });
  std::size_t U = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int32_t id = host_ids_[static_cast<std::size_t>(rows[k])];
    if (U == 0 || uniq[U - 1] != id) {
      uniq[U] = id;
      starts[U++] = static_cast<std::int32_t>(k);
    }
  }
  starts[U] = static_cast<std::int32_t>(N);
  const std::size_t used = 2 * n + U + 1;  // rows, the uniq region, and the U + 1 starts
  auto* dev = static_cast<std::int32_t*>(scratch(kIds, used * sizeof(std::int32_t)));
  check_cuda(cudaMemcpyAsync(dev, groups_.data(), used * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_), op);
  kernels::embedding_backward_grouped(dtable.raw(), gt, dy.raw(), t, dev + n, dev + 2 * n, dev,
                                      static_cast<std::int64_t>(U), D, stream_);
  // groups_ must outlive the asynchronous copy from pageable memory: it is staged before return.
}

// ---------------------------------------------------------------------------- heads
void CudnnBackend::split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) {
  const char* op = "split_heads_forward";
  const VT t = value_type(op, "x", x);
  const HeadDims d = split_dims(op, x, y, parts, part);
  kernels::split_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  const char* op = "split_heads_backward";
  const VT t = value_type(op, "dy", dy);
  const HeadDims d = split_dims(op, dx, dy, parts, part);
  kernels::split_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::merge_heads_forward(Tensor& y, const Tensor& x) {
  const char* op = "merge_heads_forward";
  const VT t = value_type(op, "x", x);
  const HeadDims d = split_dims(op, y, x, 1, 0);
  kernels::merge_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

void CudnnBackend::merge_heads_backward(Tensor& dx, const Tensor& dy) {
  const char* op = "merge_heads_backward";
  const VT t = value_type(op, "dy", dy);
  const HeadDims d = split_dims(op, dy, dx, 1, 0);
  kernels::merge_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

// For every (b, h): rows offset .. offset+T-1 of dst [B, H, S, Dh] = src [B, H, T, Dh]: one
// strided 2-D copy (B*H blocks of T*Dh elements, S*Dh apart in dst).
void CudnnBackend::write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  const char* op = "write_time_slice";
  const auto bad = [&](const std::string& why) { fail(op, why + " (dst " + dst.str() + ", src " + src.str() + ")"); };
  if (!src.defined() || !dst.defined() || src.dtype() == DType::I32) bad("dst and src must be f32 or bf16");
  if (dst.dtype() != src.dtype()) bad("dst and src differ in dtype");
  if (dst.shape().rank() != 4 || src.shape().rank() != 4) bad("dst must be [B, H, S, Dh] and src [B, H, T, Dh]");
  const std::int64_t B = src.shape()[0], H = src.shape()[1], T = src.shape()[2], Dh = src.shape()[3], S = dst.shape()[2];
  if (dst.shape() != Shape{B, H, S, Dh}) bad("dst and src differ in B, H or Dh");
  if (offset < 0 || offset + T > S)
    bad("offset " + std::to_string(offset) + " + T " + std::to_string(T) + " must lie in [0, S = " + std::to_string(S) + "]");
  if (B * H * T * Dh == 0) return;
  const std::size_t es = ablate::dtype_size(src.dtype());
  check_cuda(cudaMemcpy2DAsync(static_cast<char*>(dst.raw()) + static_cast<std::size_t>(offset * Dh) * es,
                               static_cast<std::size_t>(S * Dh) * es, src.raw(), static_cast<std::size_t>(T * Dh) * es,
                               static_cast<std::size_t>(T * Dh) * es, static_cast<std::size_t>(B * H),
                               cudaMemcpyDeviceToDevice, stream_),
             op);
}

// ---------------------------------------------------------------------------- loss, optimizer
void CudnnBackend::cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                         const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  const char* op = "cross_entropy_forward";
  const VT t = value_type(op, "logits", logits);
  need_like(op, "dlogits", dlogits, logits);
  need_dtype(op, "loss", loss, DType::F32);
  need_numel(op, "loss", loss, 1);
  need_dtype(op, "stats", stats, DType::F32);
  need_numel(op, "stats", stats, 2);
  need_dtype(op, "targets", targets, DType::I32);
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  need_numel(op, "targets", targets, N);
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    fail(op, "label_smoothing " + std::to_string(label_smoothing) + " must be in [0, 1]");
  kernels::cross_entropy(loss.data<float>(), dlogits.raw(), stats.data<float>(), logits.raw(),
                         targets.data<std::int32_t>(), t, N, V, ignore_index, label_smoothing,
                         flags_device_ + 1,
                         scratch(kReduce, kernels::cross_entropy_scratch_bytes(N)), stream_);
}

void CudnnBackend::sum_squares(Tensor& total, const Tensor& x) {
  const char* op = "sum_squares";
  const VT t = value_type(op, "x", x);
  need_dtype(op, "total", total, DType::F32);
  need_numel(op, "total", total, 1);
  kernels::sum_squares(total.data<float>(), x.raw(), t, x.numel(), scratch(kReduce, kernels::sum_squares_scratch_bytes(x.numel())),
                       stream_);
}

void CudnnBackend::adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                               const ablate::AdamParams& p) {
  const char* op = "adam_update";
  need_dtype(op, "w", w, DType::F32);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"m", &m}, {"v", &v}, {"grad", &grad}}) {
    need_dtype(op, name, *t, DType::F32);
    need_numel(op, name, *t, w.numel());
  }
  if (w_low) {
    need_dtype(op, "w_low", *w_low, DType::BF16);
    need_numel(op, "w_low", *w_low, w.numel());
  }
  if (p.step < 1) fail(op, "step must be >= 1, got " + std::to_string(p.step));
  kernels::adam_update(w.data<float>(), m.data<float>(), v.data<float>(), w_low ? w_low->raw() : nullptr,
                       grad.data<float>(), w.numel(), p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.decoupled, p.step,
                       p.grad_scale, stream_);
}

void CudnnBackend::rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_forward";
  const VT t = value_type(op, "x", x);
  if (const std::string p = ablate::rope_problem(x, positions, rotary, base); !p.empty()) fail(op, p);
  need_like(op, "y", y, x);
  const std::int64_t Dh = x.shape()[3];
  kernels::rope(y.raw(), x.raw(), positions.data<std::int32_t>(), t, x.numel() / Dh, x.shape()[2], Dh, rotary, base,
                false, stream_);
}

void CudnnBackend::rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const char* op = "rope_backward";
  const VT t = value_type(op, "dy", dy);
  if (const std::string p = ablate::rope_problem(dy, positions, rotary, base); !p.empty()) fail(op, p);
  need_like(op, "dx", dx, dy);
  const std::int64_t Dh = dy.shape()[3];
  kernels::rope(dx.raw(), dy.raw(), positions.data<std::int32_t>(), t, dy.numel() / Dh, dy.shape()[2], Dh, rotary, base,
                true, stream_);
}

void CudnnBackend::slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  const char* op = "slice_last_forward";
  const VT t = value_type(op, "x", x);
  if (const std::string p = ablate::slice_last_problem(x, y, offset); !p.empty()) fail(op, p);
  kernels::slice_last(y.raw(), x.raw(), t, x.shape().rows(), x.shape().last(), y.shape().last(), offset,
                      false, stream_);
}

void CudnnBackend::slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  const char* op = "slice_last_backward";
  const VT t = value_type(op, "dx", dx);
  if (const std::string p = ablate::slice_last_problem(dx, dy, offset); !p.empty()) fail(op, p);
  kernels::slice_last(dy.raw(), dx.raw(), t, dx.shape().rows(), dx.shape().last(), dy.shape().last(),
                      offset, true, stream_);
}

void CudnnBackend::cast(Tensor& y, const Tensor& x) {
  const char* op = "cast";
  const VT yt = value_type(op, "y", y), xt = value_type(op, "x", x);
  need_numel(op, "x", x, y.numel());
  kernels::cast(y.raw(), yt, x.raw(), xt, y.numel(), stream_);
}

}  // namespace backend_cudnn
