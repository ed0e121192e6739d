// backend/cudnn: the index and layout ops (contracts compare_problem and permute_problem in
// ablate/backend.hpp): an elementwise comparison into a 0/1 mask, and an axis permutation with
// its backward; the kernels in index_kernels.cu.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

// a: any shape; b: a's shape, its trailing dims or one element (repeated over a); y: a's shape.
void CudnnBackend::do_compare_forward(Tensor& y, const Tensor& a, const Tensor& b, ablate::Compare c) {
  kernels::compare(y.raw(), a.raw(), b.raw(), value_type(a), a.numel(), b.numel(), c, stream_);
}

// y[j] = x[offset(j)], y of x's dims in p's order.
void CudnnBackend::do_permute_forward(Tensor& y, const Tensor& x, const ablate::Permutation& p) {
  kernels::permute(y.raw(), x.raw(), value_type(x), ablate::permuted_strides(x.shape(), p), y.numel(), false, stream_);
}

// dx[offset(j)] += dy[j].
void CudnnBackend::do_permute_backward(Tensor& dx, const Tensor& dy, const ablate::Permutation& p) {
  kernels::permute(dy.raw(), dx.raw(), value_type(dx), ablate::permuted_strides(dx.shape(), p), dy.numel(), true, stream_);
}

}  // namespace backend_cudnn
