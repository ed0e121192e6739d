// backend/cudnn: slices along the last dim (forward copies, backward adds into the slice).
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

void CudnnBackend::do_slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  const VT t = value_type(x);
  kernels::slice_last(y.raw(), x.raw(), t, x.shape().rows(), x.shape().last(), y.shape().last(), offset, false, stream_);
}

void CudnnBackend::do_slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  const VT t = value_type(dx);
  kernels::slice_last(dy.raw(), dx.raw(), t, dx.shape().rows(), dx.shape().last(), dy.shape().last(), offset, true, stream_);
}

}  // namespace backend_cudnn
