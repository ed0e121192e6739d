// backend/cudnn: the small general optional ops (contract rowwise_problem in ablate/backend.hpp):
// softmax and sum over the last dim, exp/sigmoid elementwise; the kernels in rowwise_kernels.cu.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

void CudnnBackend::do_softmax_last_forward(Tensor& y, const Tensor& x) {
  kernels::softmax_last_forward(y.raw(), x.raw(), value_type(x), x.shape().rows(), x.shape().last(), stream_);
}

void CudnnBackend::do_softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  kernels::softmax_last_backward(dx.raw(), dy.raw(), y.raw(), value_type(y), y.shape().rows(), y.shape().last(), stream_);
}

void CudnnBackend::do_sum_last_forward(Tensor& y, const Tensor& x) {
  kernels::sum_last_forward(y.raw(), x.raw(), value_type(x), x.shape().rows(), x.shape().last(), stream_);
}

void CudnnBackend::do_sum_last_backward(Tensor& dx, const Tensor& dy) {
  kernels::sum_last_backward(dx.raw(), dy.raw(), value_type(dx), dx.shape().rows(), dx.shape().last(), stream_);
}

void CudnnBackend::do_pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) {
  kernels::pointwise_forward(y.raw(), x.raw(), value_type(x), x.numel(), f == ablate::Pointwise::sigmoid, stream_);
}

void CudnnBackend::do_pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) {
  kernels::pointwise_backward(dx.raw(), dy.raw(), y.raw(), value_type(y), y.numel(), f == ablate::Pointwise::sigmoid, stream_);
}

}  // namespace backend_cudnn
