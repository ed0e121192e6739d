// backend/cudnn: rotary positions (RoPE, "rotate half" pairing), with base's frequencies or given
// ones, as one kernel launch each way (contracts in ablate/backend.hpp).
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

namespace {

// x: [B, H, T, Dh]; y = R(angle) x, or dx += R(-angle) dy when `backward` (y = dx, x = dy).
// freqs: F32 [rotary/2] on the device, or null for base's.
void launch_rope(Tensor& y, const Tensor& x, const Tensor& positions, const float* freqs, int rotary, float base, bool backward,
                 cudaStream_t s) {
  const std::int64_t Dh = x.shape()[3];
  kernels::rope(y.raw(), x.raw(), positions.data<std::int32_t>(), freqs, value_type(x), x.numel() / Dh, x.shape()[2], Dh, rotary,
                base, backward, s);
}

}  // namespace

void CudnnBackend::do_rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  launch_rope(y, x, positions, nullptr, rotary, base, false, stream_);
}

void CudnnBackend::do_rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  launch_rope(dx, dy, positions, nullptr, rotary, base, true, stream_);
}

void CudnnBackend::do_rope_frequencies_forward(Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& freqs) {
  launch_rope(y, x, positions, freqs.data<float>(), static_cast<int>(2 * freqs.numel()), 0.0f, false, stream_);
}

void CudnnBackend::do_rope_frequencies_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, const Tensor& freqs) {
  launch_rope(dx, dy, positions, freqs.data<float>(), static_cast<int>(2 * freqs.numel()), 0.0f, true, stream_);
}

}  // namespace backend_cudnn
