// backend/cudnn: activations, add and mul (b repeating over a's leading elements), axpy, dropout
// and the embedding gather/scatter-add, each a kernel launch or two (elementwise_kernels.cu,
// embedding_kernels.cu).
#include <algorithm>
#include <numeric>

#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

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
    if (nb == dy.numel())  // no repeats (a residual): an axpy, not a one-row column sum
      kernels::axpy(db->raw(), bt, dy.raw(), t, nb, beta, stream_);
    else if (nb > 0)  // db += beta * dy summed over its repeats: the column sums of dy as [numel / nb, nb]
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
  kernels::embedding_forward(y.raw(), ids.data<std::int32_t>(), table.raw(), t, N, D, V, flags_device_, stream_);
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
  kernels::embedding_backward_grouped(dtable.raw(), gt, dy.raw(), t, dev + n, dev + 2 * n, dev, static_cast<std::int64_t>(U), D,
                                      stream_);
  // groups_ must outlive the asynchronous copy from pageable memory: it is staged before return.
}

}  // namespace backend_cudnn
