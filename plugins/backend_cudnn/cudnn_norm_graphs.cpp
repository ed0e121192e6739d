// backend/cudnn: the layer-norm graphs (cudnn_graph.hpp's layer_norm_*), one cuDNN norm
// operation each, built from cudnn_descriptors.hpp's Builder.
#include <cstdint>

#include "cudnn_descriptors.hpp"

namespace backend_cudnn {

namespace {

// Layer norm over the rows of x [rows, D] (as [rows, D, 1, 1], D innermost), gamma/beta [1, D, 1, 1]
// and the per-row statistics [rows, 1, 1, 1].
struct NormShape {
  Dims x, x_strides, w, w_strides, stat, stat_strides;
  NormShape(std::int64_t rows, std::int64_t D)
      : x{rows, D, 1, 1},
        x_strides{D, 1, D, D},
        w{1, D, 1, 1},
        w_strides{D, 1, D, D},
        stat{rows, 1, 1, 1},
        stat_strides{1, 1, 1, 1} {}
};

}  // namespace

void layer_norm_forward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D) {
  const NormShape sh(rows, D);
  const GraphTensor x = g.arg(kX, type, sh.x, sh.x_strides);
  const GraphTensor gamma = g.arg(kGamma, type, sh.w, sh.w_strides);
  const GraphTensor beta = g.arg(kBeta, type, sh.w, sh.w_strides);
  const GraphTensor eps = g.host_scalar(kEps);
  const GraphTensor y = g.arg(kY, type, sh.x, sh.x_strides);
  const GraphTensor mean = g.arg(kMean, kF32, sh.stat, sh.stat_strides);
  const GraphTensor rstd = g.arg(kRstd, kF32, sh.stat, sh.stat_strides);
  g.norm_forward(x, gamma, beta, eps, y, mean, rstd);
}

void layer_norm_backward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D) {
  const NormShape sh(rows, D);
  const GraphTensor x = g.arg(kX, type, sh.x, sh.x_strides);
  const GraphTensor dy = g.arg(kDY, type, sh.x, sh.x_strides);
  const GraphTensor gamma = g.arg(kGamma, type, sh.w, sh.w_strides);
  const GraphTensor mean = g.arg(kMean, kF32, sh.stat, sh.stat_strides);
  const GraphTensor rstd = g.arg(kRstd, kF32, sh.stat, sh.stat_strides);
  const GraphTensor dx = g.arg(kDX, type, sh.x, sh.x_strides);
  const GraphTensor dgamma = g.arg(kDGamma, kF32, sh.w, sh.w_strides);
  const GraphTensor dbeta = g.arg(kDBeta, kF32, sh.w, sh.w_strides);
  g.norm_backward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta);
}

}  // namespace backend_cudnn
