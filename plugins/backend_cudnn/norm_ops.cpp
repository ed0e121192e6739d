// backend/cudnn: layer norm (cuDNN's norm graphs, or the kernels where cuDNN has no engine) and
// RMS norm (kernels), forward and backward side by side.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

// ------------------------------------------------------------------------------------------
// layer norm: cuDNN's norm graphs, or the kernels where cuDNN has no engine

void CudnnBackend::do_layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                         const Tensor& beta, float eps) {
  const auto [t, rows, D] = norm_dims(x);
  if (rows == 0) return;
  if (graphs_->layer_norm_forward(t == VT::BF16, rows, D, eps, y.raw(), mean.data<float>(), rstd.data<float>(), x.raw(),
                                  gamma.raw(), beta.raw(), stream_))
    return;
  kernels::layer_norm_forward(y.raw(), mean.data<float>(), rstd.data<float>(), x.raw(), gamma.raw(), beta.raw(), t, rows, D, eps,
                              stream_);
}

void CudnnBackend::do_layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                          const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                          ablate::GradStore dx_store) {
  const char* op = "layer_norm_backward";
  const auto [t, rows, D] = norm_dims(x);
  const VT gt = dgamma ? value_type(*dgamma) : VT::F32;
  const VT bt = dbeta ? value_type(*dbeta) : VT::F32;
  if (rows == 0) return;
  zero_if_written(dx, dx_store);
  // cuDNN writes dx, dgamma and dbeta (F32); they are then added to the caller's gradients.
  void* gx = scratch(kGradA, x.bytes());
  auto* gg = static_cast<float*>(scratch(kGradB, static_cast<std::size_t>(D) * sizeof(float)));
  auto* gb = static_cast<float*>(scratch(kGradC, static_cast<std::size_t>(D) * sizeof(float)));
  if (graphs_->layer_norm_backward(t == VT::BF16, rows, D, gx, gg, gb, dy.raw(), x.raw(), mean.data<float>(), rstd.data<float>(),
                                   gamma.raw(), stream_)) {
    if (dx) kernels::axpy(dx->raw(), t, gx, t, x.numel(), 1.0f, stream_);
    if (dgamma) kernels::axpy(dgamma->raw(), gt, gg, VT::F32, D, 1.0f, stream_);
    if (dbeta) kernels::axpy(dbeta->raw(), bt, gb, VT::F32, D, 1.0f, stream_);
    return;
  }
  if (dgamma && dbeta && gt != bt) fail(op, "dgamma and dbeta must share a dtype");
  kernels::layer_norm_backward(dx ? dx->raw() : nullptr, dgamma ? dgamma->raw() : nullptr, dbeta ? dbeta->raw() : nullptr,
                               dgamma ? gt : bt, dy.raw(), x.raw(), mean.data<float>(), rstd.data<float>(), gamma.raw(), t, rows,
                               D, scratch(kReduce, kernels::column_sum_scratch_bytes(rows, D)), stream_);
}

// ---------------------------------------------------------------------------- RMS norm
void CudnnBackend::do_rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  const auto [t, rows, D] = norm_dims(x);
  kernels::rms_norm_forward(y.raw(), rstd.data<float>(), x.raw(), gamma.raw(), t, rows, D, eps, stream_);
}

void CudnnBackend::do_rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                        const Tensor& gamma, ablate::GradStore dx_store) {
  const auto [t, rows, D] = norm_dims(x);
  zero_if_written(dx, dx_store);
  const VT gt = dgamma ? value_type(*dgamma) : VT::F32;
  kernels::rms_norm_backward(dx ? dx->raw() : nullptr, dgamma ? dgamma->raw() : nullptr, gt, dy.raw(), x.raw(),
                             rstd.data<float>(), gamma.raw(), t, rows, D,
                             scratch(kReduce, kernels::column_sum_scratch_bytes(rows, D)), stream_);
}

}  // namespace backend_cudnn
