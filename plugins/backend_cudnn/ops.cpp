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

// heads: [B, H, T, Dh] (checked by ablate::contract).
HeadDims head_dims(const Tensor& heads) {
  return HeadDims{heads.shape()[0], heads.shape()[2], heads.shape()[1], heads.shape()[3]};
}

}  // namespace

// ---------------------------------------------------------------------------- RMS norm
void CudnnBackend::rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  ablate::contract::rms_norm_forward(y, rstd, x, gamma);
  const auto [t, rows, D] = norm_dims(x);
  kernels::rms_norm_forward(y.raw(), rstd.data<float>(), x.raw(), gamma.raw(), t, rows, D, eps, stream_);
}

void CudnnBackend::rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                     const Tensor& gamma) {
  ablate::contract::rms_norm_backward(dx, dgamma, dy, x, rstd, gamma);
  const auto [t, rows, D] = norm_dims(x);
  const VT gt = dgamma ? value_type(*dgamma) : VT::F32;
  kernels::rms_norm_backward(dx ? dx->raw() : nullptr, dgamma ? dgamma->raw() : nullptr, gt, dy.raw(), x.raw(),
                             rstd.data<float>(), gamma.raw(), t, rows, D,
                             scratch(kReduce, kernels::column_sum_scratch_bytes(rows, D)), stream_);
}

// ---------------------------------------------------------------------------- elementwise
void CudnnBackend::activation_forward(Tensor& y, const Tensor& x, ablate::Activation act) {
  ablate::contract::activation_forward(y, x);
  const VT t = value_type(x);
  kernels::activation_forward(y.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, ablate::Activation act) {
  ablate::contract::activation_backward(dx, dy, x);
  const VT t = value_type(x);
  kernels::activation_backward(dx.raw(), dy.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  ablate::contract::add_forward(y, a, b);
  const VT t = value_type(a);
  kernels::add_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), alpha, beta, stream_);
}

void CudnnBackend::add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  ablate::contract::add_backward(da, db, dy);
  const char* op = "add_backward";
  const VT t = value_type(dy);
  if (da) {
    need_value_dtype(op, "da", *da, "dy", dy);
    kernels::axpy(da->raw(), t, dy.raw(), t, dy.numel(), alpha, stream_);
  }
  if (db) {
    const VT bt = value_type(*db);
    const std::int64_t nb = db->numel();
    if (nb > 0)  // db += beta * dy summed over its repeats: the column sums of dy as [numel / nb, nb]
      kernels::column_sum(db->raw(), bt, dy.raw(), t, dy.numel() / nb, nb, beta,
                          scratch(kReduce, kernels::column_sum_scratch_bytes(dy.numel() / nb, nb)), stream_);
  }
}

void CudnnBackend::mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  ablate::contract::mul_forward(y, a, b);
  const VT t = value_type(a);
  kernels::mul_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), stream_);
}

void CudnnBackend::mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  ablate::contract::mul_backward(da, db, dy, a, b);
  const char* op = "mul_backward";
  const VT t = value_type(a);
  const std::int64_t n = a.numel(), nb = b.numel();
  if (da) need_value_dtype(op, "da", *da, "a", a);
  if (db) need_value_dtype(op, "db", *db, "b", b);
  void* reduce = db && nb > 0 && nb != n ? scratch(kReduce, kernels::column_sum_scratch_bytes(n / nb, nb)) : nullptr;
  kernels::mul_backward(da ? da->raw() : nullptr, db ? db->raw() : nullptr, dy.raw(), a.raw(), b.raw(), t, n, nb, reduce,
                        stream_);
}

void CudnnBackend::axpy(Tensor& y, const Tensor& x, float alpha) {
  ablate::contract::axpy(y, x);
  const VT yt = value_type(y), xt = value_type(x);
  kernels::axpy(y.raw(), yt, x.raw(), xt, y.numel(), alpha, stream_);
}

void CudnnBackend::dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  ablate::contract::dropout_forward(y, x, p);
  const VT t = value_type(x);
  kernels::dropout_forward(y.raw(), x.raw(), t, x.numel(), p, rng, stream_);
}

void CudnnBackend::dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  ablate::contract::dropout_backward(dx, dy, p);
  const VT t = value_type(dy);
  kernels::dropout_backward(dx.raw(), dy.raw(), t, dy.numel(), p, rng, stream_);
}

// ---------------------------------------------------------------------------- embedding
void CudnnBackend::embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  ablate::contract::embedding_forward(y, ids, table);
  const VT t = value_type(table);
  const std::int64_t V = table.shape()[0], D = table.shape()[1], N = ids.numel();
  kernels::embedding_forward(y.raw(), ids.data<std::int32_t>(), table.raw(), t, N, D, V,
                             flags_device_, stream_);
}

// dtable[ids[n]] += dy[n]. Deterministic mode groups the rows by id on the host (one small
// device-to-host copy of the ids) and sums each group in row order; otherwise float atomics.
void CudnnBackend::embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  ablate::contract::embedding_backward(dtable, dy, ids);
  const char* op = "embedding_backward";
  const VT t = value_type(dy);
  const VT gt = value_type(dtable);
  const std::int64_t V = dtable.shape()[0], D = dtable.shape()[1], N = ids.numel();
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
  ablate::contract::split_heads_forward(y, x, parts, part);
  const VT t = value_type(x);
  const HeadDims d = head_dims(y);
  kernels::split_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  ablate::contract::split_heads_backward(dx, dy, parts, part);
  const VT t = value_type(dy);
  const HeadDims d = head_dims(dy);
  kernels::split_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, parts, part, stream_);
}

void CudnnBackend::merge_heads_forward(Tensor& y, const Tensor& x) {
  ablate::contract::merge_heads_forward(y, x);
  const VT t = value_type(x);
  const HeadDims d = head_dims(x);
  kernels::merge_heads_forward(y.raw(), x.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

void CudnnBackend::merge_heads_backward(Tensor& dx, const Tensor& dy) {
  ablate::contract::merge_heads_backward(dx, dy);
  const VT t = value_type(dy);
  const HeadDims d = head_dims(dx);
  kernels::merge_heads_backward(dx.raw(), dy.raw(), t, d.B, d.T, d.H, d.Dh, stream_);
}

// For every (b, h): rows offset .. offset+T-1 of dst [B, H, S, Dh] = src [B, H, T, Dh]: one
// strided 2-D copy (B*H blocks of T*Dh elements, S*Dh apart in dst).
void CudnnBackend::write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  ablate::contract::write_time_slice(dst, src, offset);
  const char* op = "write_time_slice";
  const std::int64_t B = src.shape()[0], H = src.shape()[1], T = src.shape()[2], Dh = src.shape()[3], S = dst.shape()[2];
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
  ablate::contract::cross_entropy_forward(loss, dlogits, stats, logits, targets, label_smoothing);
  const VT t = value_type(logits);
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  kernels::cross_entropy(loss.data<float>(), dlogits.raw(), stats.data<float>(), logits.raw(),
                         targets.data<std::int32_t>(), t, N, V, ignore_index, label_smoothing,
                         flags_device_ + 1,
                         scratch(kReduce, kernels::cross_entropy_scratch_bytes(N)), stream_);
}

void CudnnBackend::sum_squares(Tensor& total, const Tensor& x) {
  ablate::contract::sum_squares(total, x);
  const VT t = value_type(x);
  kernels::sum_squares(total.data<float>(), x.raw(), t, x.numel(), scratch(kReduce, kernels::sum_squares_scratch_bytes(x.numel())),
                       stream_);
}

void CudnnBackend::adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                               const ablate::AdamParams& p) {
  ablate::contract::adam_update(w, m, v, w_low, grad, p);
  kernels::adam_update(w.data<float>(), m.data<float>(), v.data<float>(), w_low ? w_low->raw() : nullptr,
                       grad.data<float>(), w.numel(), p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.decoupled, p.step,
                       p.grad_scale, stream_);
}

void CudnnBackend::rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  ablate::contract::rope_forward(*this, y, x, positions, rotary, base);
  const VT t = value_type(x);
  const std::int64_t Dh = x.shape()[3];
  kernels::rope(y.raw(), x.raw(), positions.data<std::int32_t>(), t, x.numel() / Dh, x.shape()[2], Dh, rotary, base,
                false, stream_);
}

void CudnnBackend::rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  ablate::contract::rope_backward(*this, dx, dy, positions, rotary, base);
  const VT t = value_type(dy);
  const std::int64_t Dh = dy.shape()[3];
  kernels::rope(dx.raw(), dy.raw(), positions.data<std::int32_t>(), t, dy.numel() / Dh, dy.shape()[2], Dh, rotary, base,
                true, stream_);
}

void CudnnBackend::slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  ablate::contract::slice_last_forward(*this, y, x, offset);
  const VT t = value_type(x);
  kernels::slice_last(y.raw(), x.raw(), t, x.shape().rows(), x.shape().last(), y.shape().last(), offset,
                      false, stream_);
}

void CudnnBackend::slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  ablate::contract::slice_last_backward(*this, dx, dy, offset);
  const VT t = value_type(dx);
  kernels::slice_last(dy.raw(), dx.raw(), t, dx.shape().rows(), dx.shape().last(), dy.shape().last(),
                      offset, true, stream_);
}

void CudnnBackend::cast(Tensor& y, const Tensor& x) {
  ablate::contract::cast(y, x);
  const VT yt = value_type(y), xt = value_type(x);
  kernels::cast(y.raw(), yt, x.raw(), xt, y.numel(), stream_);
}

}  // namespace backend_cudnn
