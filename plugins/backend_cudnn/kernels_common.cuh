// backend/cudnn: what the kernel files (*_kernels.cu) share: launch constants and host helpers,
// device loads and stores, block reductions, the activation formulas, and the two-stage column
// sums (used by add's broadcast gradient and the norms' parameter gradients).
//
// Reductions are deterministic: fixed block sizes, fixed grids (functions of the shape only),
// per-thread sums in index order, warp butterflies and block trees of fixed shape, and two-stage
// sums through the caller's scratch whose partials are added in a fixed order. Every kernel
// computes what the reference backend's op computes (plugins/backend_reference), in f32, rounding
// BF16 results to nearest even.
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ablate/activation_math.hpp"
#include "ablate/bf16.hpp"
#include "ablate/error.hpp"
#include "kernels.hpp"

namespace backend_cudnn::kernels {
namespace {
using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;                // elementwise and row kernels
constexpr int kFinalThreads = 1024;          // single-block final reductions
constexpr std::int64_t kMaxGrid = 4096;      // elementwise grids; grid-stride beyond
constexpr std::int64_t kMaxRowGrid = 65535;  // one block per row; blocks loop over rows beyond

// ---------------------------------------------------------------------------- host helpers

inline void check_launch(const char* name) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw ablate::Error(std::string("backend/cudnn: kernel ") + name + " failed to launch: " + cudaGetErrorString(err));
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline unsigned grid_for(std::int64_t n) { return static_cast<unsigned>(std::min(ceil_div(n, kThreads), kMaxGrid)); }
inline unsigned row_grid(std::int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxRowGrid)); }

// Calls f(Tag<float>{}) or f(Tag<bf16>{}) for a value type: the launchers' dtype dispatch.
template <class T>
struct Tag {
  using type = T;
};
template <class TagT>
using type_of = typename TagT::type;
template <class F>
void with_type(VT t, F&& f) {
  if (t == VT::BF16)
    f(Tag<bf16>{});
  else
    f(Tag<float>{});
}

// Whether every pointer is a multiple of `bytes` (the vector loads of Pack).
template <class... P>
bool aligned_to(std::size_t bytes, const P*... p) {
  return ((reinterpret_cast<std::uintptr_t>(p) % bytes == 0) && ...);
}

// ---------------------------------------------------------------------------- device helpers

// kVec consecutive elements, moved with one aligned vector load or store (kVec * sizeof(T) <= 16).
template <class T, int kVec>
struct alignas(kVec * sizeof(T)) Pack {
  T v[kVec];
};

__device__ __forceinline__ float ld(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const bf16* p, std::int64_t i) { return __bfloat162float(p[i]); }  // exact
__device__ __forceinline__ void st(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(bf16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ std::int64_t first_index() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

struct Sum {
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// op over v of all threads of the block, returned to every thread: a warp butterfly, the warp
// results in warp order, another butterfly. Fixed order; the butterflies combine a and b in both
// orders, which for + and max gives bit-identical results in every lane. blockDim.x is a multiple
// of 32; sh holds 32 values; every thread of the block must call it.
template <class V, class Op>
__device__ V block_reduce(V v, V* sh, Op op, V identity) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? sh[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // sh may be reused
  return v;
}

// ---------------------------------------------------------------------------- activations
// The formulas of ablate/activation_math.hpp on CUDA's primitives (GELU-erf as x Phi(x), with the
// CDF from normcdff, which stays accurate in the negative tail).
struct DeviceMath {
  __device__ static float cdf(float x) { return normcdff(x); }
  __device__ static float exp(float x) { return expf(x); }
  __device__ static float tanh(float u) { return tanhf(u); }
};

__device__ inline float act_fwd(Act a, float x) {
  namespace am = ablate::activation_math;
  switch (a) {
    case Act::None: break;
    case Act::ReLU: return x > 0.0f ? x : 0.0f;
    case Act::GeluErf: return am::gelu_erf<DeviceMath>(x);
    case Act::GeluTanh: return am::gelu_tanh<DeviceMath>(x);
    case Act::SiLU: return am::silu<DeviceMath>(x);
  }
  return x;
}

__device__ inline float act_grad(Act a, float x) {
  namespace am = ablate::activation_math;
  switch (a) {
    case Act::None: break;
    case Act::ReLU: return x > 0.0f ? 1.0f : 0.0f;
    case Act::GeluErf: return am::gelu_erf_grad<DeviceMath>(x);
    case Act::GeluTanh: return am::gelu_tanh_grad<DeviceMath>(x);
    case Act::SiLU: return am::silu_grad<DeviceMath>(x);
  }
  return 1.0f;
}

// ---------------------------------------------------------------------------- column sums
// Two stages: partial[k][ch][c] = the sum, over the rows of chunk ch in order, of column c of
// sum k (K sums computed in one pass over the rows); then out[c] += alpha * the chunks' partials
// added in chunk order.

// Row chunks of a column sum: a function of the shape only (so is the summation order). At most
// 128 chunks, at least ~32 rows per chunk, and no more chunks than ~4096 blocks need (a model's
// [B*T, D] sums get enough blocks to fill a GPU; stage 2 then adds up to 128 partials a column).
inline std::int64_t column_chunks(std::int64_t rows, std::int64_t cols) {
  const std::int64_t col_blocks = std::max<std::int64_t>(1, ceil_div(cols, kThreads));
  return std::max<std::int64_t>(1, std::min({std::int64_t{128}, ceil_div(rows, 32), ceil_div(4096, col_blocks)}));
}

// Stage 1, grid (column blocks, chunks): fn(r, c, acc) adds row r's column-c terms into acc[0..K).
template <int K, class Fn>
__global__ void column_partials_kernel(float* partial, std::int64_t rows, std::int64_t cols, Fn fn) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const std::int64_t chunks = gridDim.y, ch = blockIdx.y;
  const std::int64_t r0 = rows * ch / chunks, r1 = rows * (ch + 1) / chunks;
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  for (std::int64_t r = r0; r < r1; ++r) fn(r, c, acc);
  for (int k = 0; k < K; ++k) partial[(k * chunks + ch) * cols + c] = acc[k];
}

// Stage 2: out[c] += alpha * sum over ch (in order) of partial[ch][c]. The additions stay in
// chunk order; the loads are issued 32 at a time (they do not depend on the sum), so a
// column's up to 128 partials cost a few memory round trips instead of one each.
template <class O>
__global__ void column_finish_kernel(O* out, const float* partial, std::int64_t chunks, std::int64_t cols, float alpha) {
  constexpr int kBatch = 32;
  for (std::int64_t c = first_index(); c < cols; c += grid_stride()) {
    float s = partial[c];
    for (std::int64_t ch0 = 1; ch0 < chunks; ch0 += kBatch) {
      float v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) v[j] = ch0 + j < chunks ? partial[(ch0 + j) * cols + c] : 0.0f;
#pragma unroll
      for (int j = 0; j < kBatch; ++j)
        if (ch0 + j < chunks) s += v[j];
    }
    st(out, c, ld(out, c) + alpha * s);
  }
}

// The terms of column_sum: x[r, c].
template <class T>
struct ColumnTerm {
  const T* x;
  std::int64_t cols;
  __device__ void operator()(std::int64_t r, std::int64_t c, float* acc) const { acc[0] += ld(x, r * cols + c); }
};

// The terms of a repeated b's gradient in mul_backward: dy[r, c] * a[r, c].
template <class T>
struct ProductTerm {
  const T* dy;
  const T* a;
  std::int64_t cols;
  __device__ void operator()(std::int64_t r, std::int64_t c, float* acc) const {
    acc[0] += ld(dy, r * cols + c) * ld(a, r * cols + c);
  }
};

// The terms of layer norm's dgamma (dy * xhat) and dbeta (dy).
template <class T>
struct LayerNormParamTerms {
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  std::int64_t D;
  __device__ void operator()(std::int64_t r, std::int64_t c, float* acc) const {
    const std::int64_t i = r * D + c;
    const float g = ld(dy, i);
    acc[0] += g * ((ld(x, i) - mean[r]) * rstd[r]);
    acc[1] += g;
  }
};

// The terms of RMS norm's dgamma (dy * xhat).
template <class T>
struct RmsNormParamTerms {
  const T* dy;
  const T* x;
  const float* rstd;
  std::int64_t D;
  __device__ void operator()(std::int64_t r, std::int64_t c, float* acc) const {
    const std::int64_t i = r * D + c;
    acc[0] += ld(dy, i) * (ld(x, i) * rstd[r]);
  }
};

// Stage 1 launcher (rows, cols > 0): partial is [K, column_chunks(rows, cols), cols] f32.
template <int K, class Fn>
void column_partials(float* partial, std::int64_t rows, std::int64_t cols, Fn fn, cudaStream_t s, const char* name) {
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, kThreads)), static_cast<unsigned>(column_chunks(rows, cols)));
  column_partials_kernel<K><<<grid, kThreads, 0, s>>>(partial, rows, cols, fn);
  check_launch(name);
}

// Stage 2 launcher for sum k of a column_partials result.
inline void column_finish(void* out, VT out_t, const float* partial, int k, std::int64_t rows, std::int64_t cols, float alpha,
                          cudaStream_t s, const char* name) {
  const std::int64_t chunks = column_chunks(rows, cols);
  with_type(out_t, [&](auto o) {
    using O = type_of<decltype(o)>;
    column_finish_kernel<<<grid_for(cols), kThreads, 0, s>>>(static_cast<O*>(out), partial + k * chunks * cols, chunks, cols,
                                                             alpha);
  });
  check_launch(name);
}

// 1 / (1 - p) in double, rounded once: the dropout scale of the f32 kernels.
inline float keep_scale_of(float p) { return static_cast<float>(1.0 / (1.0 - static_cast<double>(p))); }

}  // namespace
}  // namespace backend_cudnn::kernels
