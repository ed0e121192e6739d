// backend/cudnn: layer norm and RMS norm kernels (a block per row; parameter gradients through the
// column sums of kernels_common.cuh), for what cuDNN's norm graphs do not run; declared in kernels.hpp.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// ---------------------------------------------------------------------------- norm kernels (a block per row)

// Layer norm of row r: mean, rstd = 1 / sqrt(biased variance + eps) (two passes), y.
template <class T>
__global__ void layer_norm_forward_kernel(T* y, float* mean, float* rstd, const T* x, const T* gamma, const T* beta,
                                          std::int64_t rows, std::int64_t D, float eps) {
  __shared__ float sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r * D;
    float s = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) s += ld(x, o + j);
    const float mu = block_reduce(s, sh, Sum{}, 0.0f) / static_cast<float>(D);
    float v = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float d = ld(x, o + j) - mu;
      v += d * d;
    }
    const float rs = 1.0f / sqrtf(block_reduce(v, sh, Sum{}, 0.0f) / static_cast<float>(D) + eps);
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x)
      st(y, o + j, (ld(x, o + j) - mu) * rs * ld(gamma, j) + ld(beta, j));
  }
}

// Layer norm dx of row r: with xhat = (x - mean) * rstd and g = dy * gamma,
// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)).
template <class T>
__global__ void layer_norm_backward_dx_kernel(T* dx, const T* dy, const T* x, const float* mean, const float* rstd,
                                              const T* gamma, std::int64_t rows, std::int64_t D) {
  __shared__ float sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r * D;
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float xh = (ld(x, o + j) - mu) * rs, g = ld(dy, o + j) * ld(gamma, j);
      sg += g;
      sgx += g * xh;
    }
    const float mean_g = block_reduce(sg, sh, Sum{}, 0.0f) / static_cast<float>(D);
    const float mean_gx = block_reduce(sgx, sh, Sum{}, 0.0f) / static_cast<float>(D);
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float xh = (ld(x, o + j) - mu) * rs, g = ld(dy, o + j) * ld(gamma, j);
      st(dx, o + j, ld(dx, o + j) + rs * (g - mean_g - xh * mean_gx));
    }
  }
}

// RMS norm of row r: rstd = 1 / sqrt(mean(x^2) + eps), y = x * rstd * gamma.
template <class T>
__global__ void rms_norm_forward_kernel(T* y, float* rstd, const T* x, const T* gamma, std::int64_t rows, std::int64_t D,
                                        float eps) {
  __shared__ float sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r * D;
    float s = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float v = ld(x, o + j);
      s += v * v;
    }
    const float rs = 1.0f / sqrtf(block_reduce(s, sh, Sum{}, 0.0f) / static_cast<float>(D) + eps);
    if (threadIdx.x == 0) rstd[r] = rs;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) st(y, o + j, ld(x, o + j) * rs * ld(gamma, j));
  }
}

// RMS norm dx of row r: with xhat = x * rstd and g = dy * gamma, dx += rstd * (g - xhat * mean(g * xhat)).
template <class T>
__global__ void rms_norm_backward_dx_kernel(T* dx, const T* dy, const T* x, const float* rstd, const T* gamma, std::int64_t rows,
                                            std::int64_t D) {
  __shared__ float sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r * D;
    const float rs = rstd[r];
    float sgx = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) sgx += ld(dy, o + j) * ld(gamma, j) * (ld(x, o + j) * rs);
    const float mean_gx = block_reduce(sgx, sh, Sum{}, 0.0f) / static_cast<float>(D);
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float g = ld(dy, o + j) * ld(gamma, j);
      st(dx, o + j, ld(dx, o + j) + rs * (g - ld(x, o + j) * rs * mean_gx));
    }
  }
}

}  // namespace

// ============================================================================ norms

void layer_norm_forward(void* y, float* mean, float* rstd, const void* x, const void* gamma, const void* beta, VT t,
                        std::int64_t rows, std::int64_t D, float eps, cudaStream_t s) {
  if (rows == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    layer_norm_forward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(y), mean, rstd, static_cast<const T*>(x),
                                                                  static_cast<const T*>(gamma), static_cast<const T*>(beta), rows,
                                                                  D, eps);
  });
  check_launch("layer_norm_forward");
}

// dx row-wise; dgamma (sum dy * xhat) and dbeta (sum dy) in one two-stage column pass whose
// partials take both halves of the scratch (see column_sum_scratch_bytes).
void layer_norm_backward(void* dx, void* dgamma, void* dbeta, VT g_t, const void* dy, const void* x, const float* mean,
                         const float* rstd, const void* gamma, VT t, std::int64_t rows, std::int64_t D, void* scratch,
                         cudaStream_t s) {
  if (rows == 0) return;
  auto* partial = static_cast<float*>(scratch);
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    if (dx) {
      layer_norm_backward_dx_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                        static_cast<const T*>(x), mean, rstd,
                                                                        static_cast<const T*>(gamma), rows, D);
      check_launch("layer_norm_backward (dx)");
    }
    if ((dgamma || dbeta) && D > 0)
      column_partials<2>(partial, rows, D,
                         LayerNormParamTerms<T>{static_cast<const T*>(dy), static_cast<const T*>(x), mean, rstd, D}, s,
                         "layer_norm_backward (parameter partials)");
  });
  if (D == 0) return;
  if (dgamma) column_finish(dgamma, g_t, partial, 0, rows, D, 1.0f, s, "layer_norm_backward (dgamma)");
  if (dbeta) column_finish(dbeta, g_t, partial, 1, rows, D, 1.0f, s, "layer_norm_backward (dbeta)");
}

void rms_norm_forward(void* y, float* rstd, const void* x, const void* gamma, VT t, std::int64_t rows, std::int64_t D, float eps,
                      cudaStream_t s) {
  if (rows == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    rms_norm_forward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(y), rstd, static_cast<const T*>(x),
                                                                static_cast<const T*>(gamma), rows, D, eps);
  });
  check_launch("rms_norm_forward");
}

void rms_norm_backward(void* dx, void* dgamma, VT g_t, const void* dy, const void* x, const float* rstd, const void* gamma, VT t,
                       std::int64_t rows, std::int64_t D, void* scratch, cudaStream_t s) {
  if (rows == 0) return;
  auto* partial = static_cast<float*>(scratch);
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    if (dx) {
      rms_norm_backward_dx_kernel<<<row_grid(rows), kThreads, 0, s>>>(
          static_cast<T*>(dx), static_cast<const T*>(dy), static_cast<const T*>(x), rstd, static_cast<const T*>(gamma), rows, D);
      check_launch("rms_norm_backward (dx)");
    }
    if (dgamma && D > 0)
      column_partials<1>(partial, rows, D, RmsNormParamTerms<T>{static_cast<const T*>(dy), static_cast<const T*>(x), rstd, D}, s,
                         "rms_norm_backward (dgamma partials)");
  });
  if (dgamma && D > 0) column_finish(dgamma, g_t, partial, 0, rows, D, 1.0f, s, "rms_norm_backward (dgamma)");
}

}  // namespace backend_cudnn::kernels
