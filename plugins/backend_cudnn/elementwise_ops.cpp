// backend/cudnn: activations, add and mul (b repeating over a's leading elements), axpy, dropout
// and the embedding gather/scatter-add, each a kernel launch or two (elementwise_kernels.cu,
// embedding_kernels.cu).
#include <algorithm>

#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

// ---------------------------------------------------------------------------- elementwise
void CudnnBackend::do_activation_forward(Tensor& y, const Tensor& x, ablate::Activation act) {
  const VT t = value_type(x);
  kernels::activation_forward(y.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::do_activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, ablate::Activation act) {
  const VT t = value_type(x);
  kernels::activation_backward(dx.raw(), dy.raw(), x.raw(), t, x.numel(), act_of(act), stream_);
}

void CudnnBackend::do_add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const VT t = value_type(a);
  kernels::add_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), alpha, beta, stream_);
}

void CudnnBackend::do_add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
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

void CudnnBackend::do_mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  const VT t = value_type(a);
  kernels::mul_forward(y.raw(), a.raw(), b.raw(), t, a.numel(), b.numel(), stream_);
}

void CudnnBackend::do_mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  const VT t = value_type(a);
  const std::int64_t n = a.numel(), nb = b.numel();
  if (da) need_value_dtype(op, "da", *da, "a", a);
  if (db) need_value_dtype(op, "db", *db, "b", b);
  void* reduce = db && nb > 0 && nb != n ? scratch(kReduce, kernels::column_sum_scratch_bytes(n / nb, nb)) : nullptr;
  kernels::mul_backward(da ? da->raw() : nullptr, db ? db->raw() : nullptr, dy.raw(), a.raw(), b.raw(), t, n, nb, reduce,
                        stream_);
}

void CudnnBackend::do_axpy(Tensor& y, const Tensor& x, float alpha) {
  const VT yt = value_type(y), xt = value_type(x);
  kernels::axpy(y.raw(), yt, x.raw(), xt, y.numel(), alpha, stream_);
}

void CudnnBackend::do_dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  const VT t = value_type(x);
  kernels::dropout_forward(y.raw(), x.raw(), t, x.numel(), p, rng, stream_);
}

void CudnnBackend::do_dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  const VT t = value_type(dy);
  kernels::dropout_backward(dx.raw(), dy.raw(), t, dy.numel(), p, rng, stream_);
}

void CudnnBackend::do_dropout_add_forward(Tensor& y, const Tensor& x, const Tensor& h, float p, const ablate::RngKey& rng) {
  kernels::dropout_add_forward(y.raw(), x.raw(), h.raw(), value_type(h), h.numel(), p, rng, stream_);
}

// ---------------------------------------------------------------------------- embedding
void CudnnBackend::do_embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  const VT t = value_type(table);
  const std::int64_t V = table.shape()[0], D = table.shape()[1], N = ids.numel();
  kernels::embedding_forward(y.raw(), ids.data<std::int32_t>(), table.raw(), t, N, D, V, flags_device_, stream_);
}

// dtable[ids[n]] += dy[n]. Deterministic mode sorts the ids on the device and sums each id's
// rows in row order; otherwise float atomics. An id outside [0, V) is reported as the forward's
// is (check_flags, at the next synchronisation): the forward looked the same ids up.
void CudnnBackend::do_embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const VT t = value_type(dy);
  const VT gt = value_type(dtable);
  const std::int64_t V = dtable.shape()[0], D = dtable.shape()[1], N = ids.numel();
  if (N == 0) return;
  if (!config_.deterministic && gt == VT::F32) {
    kernels::embedding_backward_atomic(dtable.data<float>(), dy.raw(), t, ids.data<std::int32_t>(), N, D, V, stream_);
    return;
  }
  kernels::embedding_backward_sorted(dtable.raw(), gt, dy.raw(), t, ids.data<std::int32_t>(), N, D, V, flags_device_,
                                     scratch(kIds, kernels::embedding_sort_scratch_bytes(N)), stream_);
}

}  // namespace backend_cudnn
