// backend/cudnn: the small general optional ops (contract rowwise_problem in ablate/backend.hpp):
// softmax and sum over the last dim, exp/sigmoid elementwise; the kernels in rowwise_kernels.cu.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

void CudnnBackend::softmax_last_forward(Tensor& y, const Tensor& x) {
  ablate::contract::softmax_last_forward(*this, y, x);
  kernels::softmax_last_forward(y.raw(), x.raw(), value_type(x), x.shape().rows(), x.shape().last(), stream_);
}

void CudnnBackend::softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  ablate::contract::softmax_last_backward(*this, dx, dy, y);
  kernels::softmax_last_backward(dx.raw(), dy.raw(), y.raw(), value_type(y), y.shape().rows(), y.shape().last(), stream_);
}

void CudnnBackend::sum_last_forward(Tensor& y, const Tensor& x) {
  ablate::contract::sum_last_forward(*this, y, x);
  kernels::sum_last_forward(y.raw(), x.raw(), value_type(x), x.shape().rows(), x.shape().last(), stream_);
}

void CudnnBackend::sum_last_backward(Tensor& dx, const Tensor& dy) {
  ablate::contract::sum_last_backward(*this, dx, dy);
  kernels::sum_last_backward(dx.raw(), dy.raw(), value_type(dx), dx.shape().rows(), dx.shape().last(), stream_);
}

void CudnnBackend::pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) {
  ablate::contract::pointwise_forward(*this, y, x);
  kernels::pointwise_forward(y.raw(), x.raw(), value_type(x), x.numel(), f == ablate::Pointwise::sigmoid, stream_);
}

void CudnnBackend::pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) {
  ablate::contract::pointwise_backward(*this, dx, dy, y);
  kernels::pointwise_backward(dx.raw(), dy.raw(), y.raw(), value_type(y), y.numel(), f == ablate::Pointwise::sigmoid, stream_);
}

}  // namespace backend_cudnn
