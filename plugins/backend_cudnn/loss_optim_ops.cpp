// backend/cudnn: fused cross entropy, the sum of squares of the grad norm, Adam/AdamW and casts
// (loss_optim_kernels.cu).
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

// ---------------------------------------------------------------------------- loss, optimizer
void CudnnBackend::do_cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                            const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  const VT t = value_type(logits);
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  kernels::cross_entropy(loss.data<float>(), dlogits.raw(), stats.data<float>(), logits.raw(), targets.data<std::int32_t>(), t, N,
                         V, ignore_index, label_smoothing, flags_device_ + 1,
                         scratch(kReduce, kernels::cross_entropy_scratch_bytes(N)), stream_);
}

void CudnnBackend::do_sum_squares(Tensor& total, const Tensor& x) {
  const VT t = value_type(x);
  kernels::sum_squares(total.data<float>(), x.raw(), t, x.numel(),
                       scratch(kReduce, kernels::sum_squares_scratch_bytes(x.numel())), stream_);
}

void CudnnBackend::do_adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                                  const ablate::AdamParams& p) {
  kernels::adam_update(w.data<float>(), m.data<float>(), v.data<float>(), w_low ? w_low->raw() : nullptr, grad.data<float>(),
                       w.numel(), p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.decoupled, p.step, p.grad_scale, stream_);
}

void CudnnBackend::do_cast(Tensor& y, const Tensor& x) {
  const VT yt = value_type(y), xt = value_type(x);
  kernels::cast(y.raw(), yt, x.raw(), xt, y.numel(), stream_);
}

}  // namespace backend_cudnn
