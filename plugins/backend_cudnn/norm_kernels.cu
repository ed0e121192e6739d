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

// The same dx with a warp per row, for rows of D = 32 * kPacks * kW elements (kW of T in 16
// bytes): each lane holds its kPacks packs of x and dy in registers (one vector load each), and
// the two row sums are warp butterflies (the same value in every lane; no shared memory).
template <class T, int kPacks>
__global__ void layer_norm_backward_dx_warp_kernel(T* dx, const T* dy, const T* x, const float* mean, const float* rstd,
                                                   const T* gamma, std::int64_t rows, std::int64_t D) {
  constexpr int kW = 16 / sizeof(T);
  using P = Pack<T, kW>;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    const std::int64_t o = r * D;
    const float mu = mean[r], rs = rstd[r];
    float xh[kPacks][kW], g[kPacks][kW];
    float sg = 0.0f, sgx = 0.0f;
    for (int p = 0; p < kPacks; ++p) {
      const std::int64_t j = static_cast<std::int64_t>(p * 32 + lane) * kW;
      const P xv = *reinterpret_cast<const P*>(x + o + j), dv = *reinterpret_cast<const P*>(dy + o + j),
              gv = *reinterpret_cast<const P*>(gamma + j);
      for (int k = 0; k < kW; ++k) {
        xh[p][k] = (ld(xv.v, k) - mu) * rs;
        g[p][k] = ld(dv.v, k) * ld(gv.v, k);
        sg += g[p][k];
        sgx += g[p][k] * xh[p][k];
      }
    }
    for (int w = 16; w > 0; w >>= 1) {
      sg += __shfl_xor_sync(0xffffffffu, sg, w);
      sgx += __shfl_xor_sync(0xffffffffu, sgx, w);
    }
    const float mean_g = sg / static_cast<float>(D), mean_gx = sgx / static_cast<float>(D);
    for (int p = 0; p < kPacks; ++p) {
      const std::int64_t j = static_cast<std::int64_t>(p * 32 + lane) * kW;
      P* out = reinterpret_cast<P*>(dx + o + j);
      P d = *out;
      for (int k = 0; k < kW; ++k) st(d.v, k, ld(d.v, k) + rs * (g[p][k] - mean_g - xh[p][k] * mean_gx));
      *out = d;
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
      auto* dxt = static_cast<T*>(dx);
      const auto *dyt = static_cast<const T*>(dy), *xt = static_cast<const T*>(x), *gt = static_cast<const T*>(gamma);
      // The warp-per-row kernel where a row is 1 to 4 packs per lane and every row starts aligned.
      constexpr std::int64_t kRowPack = 32 * (16 / sizeof(T));
      const std::int64_t packs = D % kRowPack == 0 ? D / kRowPack : 0;
      const unsigned warp_grid = static_cast<unsigned>(std::min(ceil_div(rows, kThreads / 32), kMaxRowGrid));
      const auto warp = [&](auto kp) {
        layer_norm_backward_dx_warp_kernel<T, decltype(kp)::value>
            <<<warp_grid, kThreads, 0, s>>>(dxt, dyt, xt, mean, rstd, gt, rows, D);
      };
      if (packs >= 1 && packs <= 4 && aligned_to(16, dxt, dyt, xt, gt)) {
        if (packs == 1) warp(std::integral_constant<int, 1>{});
        if (packs == 2) warp(std::integral_constant<int, 2>{});
        if (packs == 3) warp(std::integral_constant<int, 3>{});
        if (packs == 4) warp(std::integral_constant<int, 4>{});
      } else {
        layer_norm_backward_dx_kernel<<<row_grid(rows), kThreads, 0, s>>>(dxt, dyt, xt, mean, rstd, gt, rows, D);
      }
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
