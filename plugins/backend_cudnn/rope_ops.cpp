// backend/cudnn: rotary positions (RoPE, "rotate half" pairing) as one kernel launch each way.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

void CudnnBackend::do_rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  const VT t = value_type(x);
  const std::int64_t Dh = x.shape()[3];
  kernels::rope(y.raw(), x.raw(), positions.data<std::int32_t>(), t, x.numel() / Dh, x.shape()[2], Dh, rotary, base, false,
                stream_);
}

void CudnnBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  const VT t = value_type(dy);
  const std::int64_t Dh = dy.shape()[3];
  kernels::rope(dx.raw(), dy.raw(), positions.data<std::int32_t>(), t, dy.numel() / Dh, dy.shape()[2], Dh, rotary, base, true,
                stream_);
}

}  // namespace backend_cudnn
