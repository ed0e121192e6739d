// backend/cudnn: the small CUDA kernels (kernels.hpp) for the ops that neither cuBLASLt nor cuDNN
// covers. Each computes what the reference backend's op computes (plugins/backend_reference), in
// f32, rounding BF16 results to nearest even.
//
// Reductions are deterministic: fixed block sizes, fixed grids (functions of the shape only),
// per-thread sums in index order, warp butterflies and block trees of fixed shape, and two-stage
// sums through the caller's scratch whose partials are added in a fixed order.
#include "kernels.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ablate/activation_math.hpp"
#include "ablate/bf16.hpp"
#include "ablate/error.hpp"
#include "ablate/rope.hpp"

namespace backend_cudnn::kernels {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;                // elementwise and row kernels
constexpr int kFinalThreads = 1024;          // single-block final reductions
constexpr std::int64_t kMaxGrid = 4096;      // elementwise grids; grid-stride beyond
constexpr std::int64_t kMaxRowGrid = 65535;  // one block per row; blocks loop over rows beyond

// ---------------------------------------------------------------------------- host helpers

void check_launch(const char* name) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw ablate::Error(std::string("backend/cudnn: kernel ") + name + " failed to launch: " + cudaGetErrorString(err));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
unsigned grid_for(std::int64_t n) { return static_cast<unsigned>(std::min(ceil_div(n, kThreads), kMaxGrid)); }
unsigned row_grid(std::int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxRowGrid)); }

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

// ---------------------------------------------------------------------------- device helpers

__device__ __forceinline__ float ld(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const bf16* p, std::int64_t i) { return __bfloat162float(p[i]); }  // exact
__device__ __forceinline__ void st(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(bf16* p, std::int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

struct Sum {
  template <class V>
  __device__ V operator()(V a, V b) const { return a + b; }
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

__device__ float act_fwd(Act a, float x) {
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

__device__ float act_grad(Act a, float x) {
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

// ---------------------------------------------------------------------------- memory-shaped kernels

// y[i] = v (v already in y's storage type).
template <class T>
__global__ void fill_kernel(T* y, std::int64_t n, T v) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = v;
}

// y[i] = x[i] converted (through f32).
template <class Y, class X>
__global__ void cast_kernel(Y* y, const X* x, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, ld(x, i));
}

// y[i] += alpha * x[i].
template <class Y, class X>
__global__ void axpy_kernel(Y* y, const X* x, std::int64_t n, float alpha) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, ld(y, i) + alpha * ld(x, i));
}

// ---------------------------------------------------------------------------- elementwise kernels

// y[i] = alpha * a[i] + beta * b[i % nb].
template <class T>
__global__ void add_kernel(T* y, const T* a, const T* b, std::int64_t n, std::int64_t nb, float alpha, float beta) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    st(y, i, alpha * ld(a, i) + beta * ld(b, nb == n ? i : i % nb));  // no 64-bit modulo without broadcast
}

// y[i] = a[i] * b[i % nb].
template <class T>
__global__ void mul_kernel(T* y, const T* a, const T* b, std::int64_t n, std::int64_t nb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, ld(a, i) * ld(b, i % nb));
}

// da[i] += dy[i] * b[i % nb]; db[i] += dy[i] * a[i] only when nb == n (a null gradient is
// skipped; a repeated b's db is a column sum of ProductTerm).
template <class T>
__global__ void mul_backward_kernel(T* da, T* db, const T* dy, const T* a, const T* b, std::int64_t n, std::int64_t nb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float g = ld(dy, i);
    if (da) st(da, i, ld(da, i) + g * ld(b, i % nb));
    if (db) st(db, i, ld(db, i) + g * ld(a, i));
  }
}

// One thread per (row, pair i < rotary/2) and per copied dim: rope's rotation (or its transpose,
// accumulated, for backward).
template <class T>
__global__ void rope_kernel(T* y, const T* x, const std::int32_t* positions, std::int64_t rows, std::int64_t T_len,
                            std::int64_t Dh, int rotary, float base, bool backward) {
  const std::int64_t half = rotary / 2, width = half + (Dh - rotary), n = rows * width;
  for (std::int64_t k = first_index(); k < n; k += grid_stride()) {
    const std::int64_t r = k / width, j = k % width;
    const T* xr = x + r * Dh;
    T* yr = y + r * Dh;
    if (j >= half) {  // a copied dim
      const std::int64_t d = rotary + (j - half);
      st(yr, d, (backward ? ld(yr, d) : 0.0f) + ld(xr, d));
      continue;
    }
    const double angle = ablate::rope_angle(positions[r % T_len], j, rotary, base);
    const float c = static_cast<float>(cos(angle)), sn = static_cast<float>(backward ? -sin(angle) : sin(angle));
    const float a = ld(xr, j), b = ld(xr, j + half);
    st(yr, j, (backward ? ld(yr, j) : 0.0f) + a * c - b * sn);
    st(yr, j + half, (backward ? ld(yr, j + half) : 0.0f) + b * c + a * sn);
  }
}

// One thread per element of part[N, W]: copied out of whole[N, C] (forward) or added into it.
template <class T>
__global__ void slice_last_kernel(T* part, T* whole, std::int64_t N, std::int64_t C, std::int64_t W, std::int64_t offset,
                                  bool backward) {
  for (std::int64_t k = first_index(); k < N * W; k += grid_stride()) {
    const std::int64_t w = (k / W) * C + offset + k % W;
    if (backward)
      st(whole, w, ld(whole, w) + ld(part, k));
    else
      st(part, k, ld(whole, w));
  }
}

// y[i] = act(x[i]).
template <class T>
__global__ void activation_forward_kernel(T* y, const T* x, std::int64_t n, Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, act_fwd(act, ld(x, i)));
}

// dx[i] += dy[i] * act'(x[i]).
template <class T>
__global__ void activation_backward_kernel(T* dx, const T* dy, const T* x, std::int64_t n, Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    st(dx, i, ld(dx, i) + ld(dy, i) * act_grad(act, ld(x, i)));
}

// g[i] = dy[i] * act'(src[i]) (written).
template <class G, class T>
__global__ void activation_grad_kernel(G* g, const T* dy, const T* src, std::int64_t n, Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(g, i, ld(dy, i) * act_grad(act, ld(src, i)));
}

// v = z[r, c] + bias[c]; pre = v (if given); y = act(v) from the unrounded v. Each element is read
// before it is written, so y and pre may alias z.
template <class T>
__global__ void bias_activation_kernel(T* y, T* pre, const T* z, const T* bias, std::int64_t n, std::int64_t cols,
                                       Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = ld(z, i) + (bias ? ld(bias, i % cols) : 0.0f);
    if (pre) st(pre, i, v);
    st(y, i, act_fwd(act, v));
  }
}

// y[i] = x[i] * keep(i) * scale (p > 0), or x[i] (p = 0); accumulate: y[i] += that. A thread
// takes the four elements of one Philox draw (grid: dropout_grid).
template <class T, bool kAccumulate>
__global__ void dropout_kernel(T* y, const T* x, std::int64_t n, float p, float scale, ablate::RngKey key) {
  for (std::int64_t g = first_index(); 4 * g < n; g += grid_stride()) {
    bool keep[4] = {true, true, true, true};
    if (p > 0.0f) ablate::dropout_keep4(key, static_cast<std::uint64_t>(g), p, keep);
    for (std::int64_t j = 0; j < 4 && 4 * g + j < n; ++j) {
      const std::int64_t i = 4 * g + j;
      const float v = p > 0.0f ? (keep[j] ? ld(x, i) * scale : 0.0f) : ld(x, i);
      st(y, i, kAccumulate ? ld(y, i) + v : v);
    }
  }
}
unsigned dropout_grid(std::int64_t n) { return grid_for(ceil_div(n, std::int64_t{4})); }

// ---------------------------------------------------------------------------- column sums
// Two stages: partial[k][ch][c] = the sum, over the rows of chunk ch in order, of column c of
// sum k (K sums computed in one pass over the rows); then out[c] += alpha * the chunks' partials
// added in chunk order.

// Row chunks of a column sum: a function of the shape only (so is the summation order). At most
// 64 chunks, at least ~32 rows per chunk, and no more chunks than ~2048 blocks need.
std::int64_t column_chunks(std::int64_t rows, std::int64_t cols) {
  const std::int64_t col_blocks = std::max<std::int64_t>(1, ceil_div(cols, kThreads));
  return std::max<std::int64_t>(1, std::min({std::int64_t{64}, ceil_div(rows, 32), ceil_div(2048, col_blocks)}));
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

// Stage 2: out[c] += alpha * sum over ch (in order) of partial[ch][c].
template <class O>
__global__ void column_finish_kernel(O* out, const float* partial, std::int64_t chunks, std::int64_t cols, float alpha) {
  for (std::int64_t c = first_index(); c < cols; c += grid_stride()) {
    float s = partial[c];
    for (std::int64_t ch = 1; ch < chunks; ++ch) s += partial[ch * cols + c];
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
void column_finish(void* out, VT out_t, const float* partial, int k, std::int64_t rows, std::int64_t cols, float alpha,
                   cudaStream_t s, const char* name) {
  const std::int64_t chunks = column_chunks(rows, cols);
  with_type(out_t, [&](auto o) {
    using O = type_of<decltype(o)>;
    column_finish_kernel<<<grid_for(cols), kThreads, 0, s>>>(static_cast<O*>(out), partial + k * chunks * cols, chunks,
                                                             cols, alpha);
  });
  check_launch(name);
}

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
__global__ void rms_norm_forward_kernel(T* y, float* rstd, const T* x, const T* gamma, std::int64_t rows,
                                        std::int64_t D, float eps) {
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
__global__ void rms_norm_backward_dx_kernel(T* dx, const T* dy, const T* x, const float* rstd, const T* gamma,
                                            std::int64_t rows, std::int64_t D) {
  __shared__ float sh[32];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t o = r * D;
    const float rs = rstd[r];
    float sgx = 0.0f;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x)
      sgx += ld(dy, o + j) * ld(gamma, j) * (ld(x, o + j) * rs);
    const float mean_gx = block_reduce(sgx, sh, Sum{}, 0.0f) / static_cast<float>(D);
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      const float g = ld(dy, o + j) * ld(gamma, j);
      st(dx, o + j, ld(dx, o + j) + rs * (g - ld(x, o + j) * rs * mean_gx));
    }
  }
}

// ---------------------------------------------------------------------------- embedding kernels

// Row n of y = table[ids[n]], or zeros (and the flag set to 1 + n) for an id outside [0, V).
template <class T>
__global__ void embedding_forward_kernel(T* y, const std::int32_t* ids, const T* table, std::int64_t N, std::int64_t D,
                                         std::int64_t V, std::int32_t* bad_id_flag) {
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const std::int64_t id = ids[n];
    const bool ok = id >= 0 && id < V;
    if (!ok && threadIdx.x == 0) *bad_id_flag = static_cast<std::int32_t>(1 + n);
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) st(y, n * D + j, ok ? ld(table, id * D + j) : 0.0f);
  }
}

// dtable[ids[n], j] += dy[n, j] with float atomics (ids outside [0, V) are skipped).
template <class T>
__global__ void embedding_backward_atomic_kernel(float* dtable, const T* dy, const std::int32_t* ids, std::int64_t N,
                                                 std::int64_t D, std::int64_t V) {
  const std::int64_t n_total = N * D;
  for (std::int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const std::int64_t id = ids[i / D];
    if (id >= 0 && id < V) atomicAdd(dtable + id * D + i % D, ld(dy, i));
  }
}

// Group u (a block): dtable[uniq_ids[u], j] += sum over k in [starts[u], starts[u+1]) of
// dy[rows[k], j], the sum taken in k order and then added (as the reference adds its sum).
template <class G, class T>
__global__ void embedding_backward_grouped_kernel(G* dtable, const T* dy, const std::int32_t* uniq_ids,
                                                  const std::int32_t* starts, const std::int32_t* rows, std::int64_t U,
                                                  std::int64_t D) {
  for (std::int64_t u = blockIdx.x; u < U; u += gridDim.x) {
    const std::int64_t base = static_cast<std::int64_t>(uniq_ids[u]) * D;
    const std::int32_t k0 = starts[u], k1 = starts[u + 1];
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      float s = 0.0f;
      for (std::int32_t k = k0; k < k1; ++k) s += ld(dy, static_cast<std::int64_t>(rows[k]) * D + j);
      st(dtable, base + j, ld(dtable, base + j) + s);
    }
  }
}

// ---------------------------------------------------------------------------- heads

// Element i of heads [B, H, T, Dh] <-> element of merged [B, T, parts*H*Dh] (part `part`):
// kToHeads: heads[i] (+)= merged[m]; else merged[m] (+)= heads[i]. Each destination element has
// exactly one source, so accumulation needs no atomics.
// A thread moves kVec consecutive elements of a head row (Dh % kVec == 0; kVec * sizeof(T) = 16
// bytes where Dh allows): one index computation and one aligned vector load and store for them.
template <class T, int kVec>
struct alignas(kVec * sizeof(T)) Pack {
  T v[kVec];
};
template <class T, int kVec, bool kToHeads, bool kAccumulate>
__global__ void heads_kernel(T* dst, const T* src, std::int64_t B, std::int64_t T_, std::int64_t H, std::int64_t Dh,
                             std::int64_t parts, std::int64_t part) {
  const std::int64_t chunks = Dh / kVec, n = B * H * T_ * chunks, W = parts * H * Dh;
  for (std::int64_t c = first_index(); c < n; c += grid_stride()) {
    const std::int64_t e = (c % chunks) * kVec, row = c / chunks;  // row = (b, h, t) of heads
    const std::int64_t t = row % T_, h = (row / T_) % H, b = row / (T_ * H);
    const std::int64_t i = row * Dh + e, m = (b * T_ + t) * W + part * H * Dh + h * Dh + e;
    const std::int64_t di = kToHeads ? i : m, si = kToHeads ? m : i;
    const Pack<T, kVec> v = *reinterpret_cast<const Pack<T, kVec>*>(src + si);
    Pack<T, kVec>* out = reinterpret_cast<Pack<T, kVec>*>(dst + di);
    if constexpr (kAccumulate) {
      Pack<T, kVec> d = *out;
      for (int j = 0; j < kVec; ++j) st(d.v, j, ld(d.v, j) + ld(v.v, j));
      *out = d;
    } else {
      *out = v;
    }
  }
}

template <bool kToHeads, bool kAccumulate>
void heads(void* dst, const void* src, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
           int parts, int part, cudaStream_t s, const char* name) {
  const std::int64_t n = B * H * T * Dh;
  if (n == 0) return;
  with_type(t, [&](auto tag) {
    using V = type_of<decltype(tag)>;
    constexpr int kWide = 16 / sizeof(V);  // element offsets are multiples of Dh; views may not be aligned
    const bool aligned = (reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % 16 == 0;
    const auto launch = [&](auto vec) {
      constexpr int kVec = decltype(vec)::value;
      heads_kernel<V, kVec, kToHeads, kAccumulate><<<grid_for(n / kVec), kThreads, 0, s>>>(
          static_cast<V*>(dst), static_cast<const V*>(src), B, T, H, Dh, parts, part);
    };
    if (aligned && Dh % kWide == 0)
      launch(std::integral_constant<int, kWide>{});
    else
      launch(std::integral_constant<int, 1>{});
  });
  check_launch(name);
}

// ---------------------------------------------------------------------------- cross entropy
// Scratch: row_loss f32 [N] | row_lse f32 [N] | status i32 [N] | count i32 [1].

// Row n (a block): status 0 = ignored (ignore_index, or a target outside [0, V), which also sets
// the flag), 1 = counted, 2 = counted and the argmax (first max) is the target; row_lse =
// logsumexp of the row; row_loss = lse - sum_c q_c z_c with q = (1 - ls) onehot + ls / V (0 when
// ignored).
template <class T>
__global__ void ce_rows_kernel(float* row_loss, float* row_lse, std::int32_t* status, const T* logits,
                               const std::int32_t* targets, std::int64_t N, std::int64_t V, std::int32_t ignore_index,
                               float ls, std::int32_t* bad_target_flag) {
  __shared__ float sh[32];
  __shared__ float best_v[32];
  __shared__ std::int64_t best_i[32];
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const std::int32_t t = targets[n];
    if (t == ignore_index || t < 0 || t >= V) {
      if (threadIdx.x == 0) {
        if (t != ignore_index) *bad_target_flag = static_cast<std::int32_t>(1 + n);
        status[n] = 0;
        row_loss[n] = 0.0f;
        row_lse[n] = 0.0f;
      }
      continue;
    }
    const T* z = logits + n * V;
    // Pass 1: each thread's first max over its indices, and the sum of the logits.
    float bv = -INFINITY, sz = 0.0f;
    std::int64_t bi = V;  // V: no element yet
    for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float v = ld(z, j);
      if (bi == V || v > bv) {
        bv = v;
        bi = j;
      }
      sz += v;
    }
    // The first max of the row: warp trees (shuffle down), then warp 0's results in warp order;
    // a larger value wins, the smaller index on ties. Broadcast through shared memory.
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_down_sync(0xffffffffu, bv, o);
      const std::int64_t oi = __shfl_down_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) {
        bv = ov;
        bi = oi;
      }
    }
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    if (lane == 0) {
      best_v[warp] = bv;
      best_i[warp] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
        if (best_v[w] > bv || (best_v[w] == bv && best_i[w] < bi)) {
          bv = best_v[w];
          bi = best_i[w];
        }
      best_v[0] = bv;
      best_i[0] = bi;
    }
    __syncthreads();
    const float zmax = best_v[0];
    const std::int64_t arg = best_i[0];
    const float sum_z = block_reduce(sz, sh, Sum{}, 0.0f);  // its barriers also order the reads above
    // Pass 2: sum exp(z - zmax).
    float se = 0.0f;
    for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) se += expf(ld(z, j) - zmax);
    se = block_reduce(se, sh, Sum{}, 0.0f);
    if (threadIdx.x == 0) {
      const float lse = zmax + logf(se);
      status[n] = arg == t ? 2 : 1;
      row_lse[n] = lse;
      row_loss[n] = lse - (1.0f - ls) * ld(z, t) - (ls / static_cast<float>(V)) * sum_z;
    }
  }
}

// One block: count = rows with status > 0, correct = rows with status 2, loss[0] = sum of
// row_loss / count (0 without counted rows), stats = {count, correct}; *count_out = count.
__global__ void ce_total_kernel(float* loss, float* stats, std::int32_t* count_out, const float* row_loss,
                                const std::int32_t* status, std::int64_t N) {
  __shared__ float shf[32];
  __shared__ std::int32_t shi[32];
  float s = 0.0f;
  std::int32_t count = 0, correct = 0;
  for (std::int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    s += row_loss[n];
    count += status[n] > 0 ? 1 : 0;
    correct += status[n] == 2 ? 1 : 0;
  }
  s = block_reduce(s, shf, Sum{}, 0.0f);
  count = block_reduce(count, shi, Sum{}, 0);
  correct = block_reduce(correct, shi, Sum{}, 0);
  if (threadIdx.x == 0) {
    loss[0] = count > 0 ? s / static_cast<float>(count) : 0.0f;
    stats[0] = static_cast<float>(count);
    stats[1] = static_cast<float>(correct);
    *count_out = count;
  }
}

// Row n (a block): dlogits = (softmax - q) / count for a counted row, 0 for an ignored one.
template <class T>
__global__ void ce_grad_kernel(T* dlogits, const T* logits, const std::int32_t* targets, const float* row_lse,
                               const std::int32_t* status, const std::int32_t* count, std::int64_t N, std::int64_t V,
                               float ls) {
  const float cnt = static_cast<float>(*count);
  const float smooth = ls / static_cast<float>(V);
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const std::int64_t o = n * V;
    if (status[n] == 0) {
      for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) st(dlogits, o + j, 0.0f);
      continue;
    }
    const float lse = row_lse[n];
    const std::int64_t t = targets[n];
    for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float q = (j == t ? 1.0f - ls : 0.0f) + smooth;
      st(dlogits, o + j, (expf(ld(logits, o + j) - lse) - q) / cnt);
    }
  }
}

// ---------------------------------------------------------------------------- sum of squares

// Partial blocks of sum_squares: a function of n only.
std::int64_t sum_squares_blocks(std::int64_t n) {
  return std::clamp<std::int64_t>(ceil_div(n, std::int64_t{kThreads} * 16), 1, kFinalThreads);
}

// partial[block] = sum of x^2 over the block's grid-stride elements.
template <class T>
__global__ void sum_squares_partial_kernel(float* partial, const T* x, std::int64_t n) {
  __shared__ float sh[32];
  float s = 0.0f;
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = ld(x, i);
    s += v * v;
  }
  s = block_reduce(s, sh, Sum{}, 0.0f);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// One block: total[0] += the sum of partial[0 .. np) (np <= blockDim.x).
__global__ void sum_squares_final_kernel(float* total, const float* partial, std::int64_t np) {
  __shared__ float sh[32];
  const float s = block_reduce(static_cast<std::int64_t>(threadIdx.x) < np ? partial[threadIdx.x] : 0.0f, sh, Sum{}, 0.0f);
  if (threadIdx.x == 0) total[0] += s;
}

// ---------------------------------------------------------------------------- Adam

// The reference's Adam / AdamW step per element (bc1, bc2 = 1 - beta^step), then w_low = bf16(w).
__global__ void adam_kernel(float* w, float* m, float* v, bf16* w_low, const float* grad, std::int64_t n, float lr,
                            float beta1, float beta2, float eps, float wd, bool decoupled, float bc1, float bc2,
                            float grad_scale) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float wi = w[i];
    float g = grad[i] * grad_scale;
    if (!decoupled) g += wd * wi;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float update = (mi / bc1) / (sqrtf(vi / bc2) + eps);
    const float wn = wi - (lr * update + (decoupled ? lr * wd * wi : 0.0f));
    w[i] = wn;
    m[i] = mi;
    v[i] = vi;
    if (w_low) w_low[i] = __float2bfloat16_rn(wn);
  }
}

// ---------------------------------------------------------------------------- attention softmax

// The visible keys of query i of batch item b are the prefix [0, limit): causal keeps
// j <= i + query_offset, key padding keeps j < key_lengths[b].
__device__ std::int64_t visible_keys(const AttentionShape& a, std::int64_t b, std::int64_t i) {
  std::int64_t limit = a.S;
  if (a.causal && i + a.query_offset + 1 < limit) limit = i + a.query_offset + 1;
  if (a.key_lengths && a.key_lengths[b] < limit) limit = a.key_lengths[b];
  return limit > 0 ? limit : 0;
}

// The dropout factor of element `index` of [B, H, T, S]: keep / (1 - p) (keep_scale = 1 / (1 - p)),
// or 1 without dropout.
__device__ float attention_dropout_factor(const AttentionShape& a, std::int64_t index, float keep_scale) {
  if (a.dropout <= 0.0f) return 1.0f;
  return ablate::dropout_keep(a.rng, static_cast<std::uint64_t>(index), a.dropout) ? keep_scale : 0.0f;
}

// Logit j of row (bh, i): the scaled q·k from the GEMM plus the bias and ALiBi terms, if any.
__device__ float logit_at(const AttentionShape& a, const float* l, std::int64_t row, std::int64_t j) {
  float v = l[j];
  if (a.bias || a.slopes) {
    const std::int64_t h = (row / a.T) % a.H, i = row % a.T;
    if (a.bias) v += a.bias[((a.bias_heads == 1 ? 0 : h) * a.T + i) * a.S + j];
    if (a.slopes) v -= a.slopes[h] * fabsf(static_cast<float>(i + a.query_offset - j));
  }
  return v;
}

// Row (bh, i) (a block): lse = logsumexp of the visible logits (-inf if their max is -inf: no
// visible key); P = exp(logit - lse) where visible, else 0; probs = P; pd = P * dropout factor.
template <class T>
__global__ void attention_softmax_forward_kernel(float* lse, float* probs, T* pd, const float* logits,
                                                 const AttentionShape a, float keep_scale) {
  __shared__ float sh[32];
  const std::int64_t rows = a.B * a.H * a.T;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t limit = visible_keys(a, row / (a.T * a.H), row % a.T);
    const float* l = logits + row * a.S;
    float mx = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) mx = fmaxf(mx, logit_at(a, l, row, j));
    mx = block_reduce(mx, sh, Max{}, -INFINITY);
    float row_lse = -INFINITY;
    if (mx != -INFINITY) {
      float se = 0.0f;
      for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x) se += expf(logit_at(a, l, row, j) - mx);
      row_lse = mx + logf(block_reduce(se, sh, Sum{}, 0.0f));
    }
    if (threadIdx.x == 0) lse[row] = row_lse;
    const std::int64_t seen = row_lse == -INFINITY ? 0 : limit;
    for (std::int64_t j = threadIdx.x; j < a.S; j += blockDim.x) {
      const std::int64_t idx = row * a.S + j;
      const float p = j < seen ? expf(logit_at(a, l, row, j) - row_lse) : 0.0f;
      if (probs) probs[idx] = p;
      st(pd, idx, j < seen ? p * attention_dropout_factor(a, idx, keep_scale) : 0.0f);
    }
  }
}

// Row (bh, i) (a block): P = exp(logit - lse) where visible (0 everywhere for lse = -inf),
// f = dropout factor, dP = dpd * f; pd = P * f, ds = P * (dP - sum_j P dP).
template <class T>
__global__ void attention_softmax_backward_kernel(T* ds, T* pd, const float* logits, const float* lse, const float* dpd,
                                                  const AttentionShape a, float keep_scale) {
  __shared__ float sh[32];
  const std::int64_t rows = a.B * a.H * a.T;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float row_lse = lse[row];
    const std::int64_t limit = row_lse == -INFINITY ? 0 : visible_keys(a, row / (a.T * a.H), row % a.T);
    const float* l = logits + row * a.S;
    const float* g = dpd + row * a.S;
    float pdp = 0.0f;
    for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x)
      pdp += expf(logit_at(a, l, row, j) - row_lse) * (g[j] * attention_dropout_factor(a, row * a.S + j, keep_scale));
    pdp = block_reduce(pdp, sh, Sum{}, 0.0f);
    for (std::int64_t j = threadIdx.x; j < a.S; j += blockDim.x) {
      const std::int64_t idx = row * a.S + j;
      float p = 0.0f, f = 0.0f, dp = 0.0f;
      if (j < limit) {
        p = expf(logit_at(a, l, row, j) - row_lse);
        f = attention_dropout_factor(a, idx, keep_scale);
        dp = g[j] * f;
      }
      st(ds, idx, p * (dp - pdp));
      st(pd, idx, p * f);
    }
  }
}

// One thread per dbias element (hb, i, j): the sum over b (and over h for a shared bias) of ds, in order.
template <class T>
__global__ void attention_bias_backward_kernel(float* dbias, const T* ds, const AttentionShape a) {
  const std::int64_t n = a.bias_heads * a.T * a.S;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t hb = e / (a.T * a.S), ij = e % (a.T * a.S);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < a.B; ++b)
      for (std::int64_t h = a.bias_heads == 1 ? 0 : hb; h < (a.bias_heads == 1 ? a.H : hb + 1); ++h)
        sum += ld(ds, ((b * a.H + h) * a.T) * a.S + ij);
    dbias[e] += sum;
  }
}

// 1 / (1 - p) in double, rounded once: the dropout scale of the f32 kernels.
float keep_scale_of(float p) { return static_cast<float>(1.0 / (1.0 - static_cast<double>(p))); }

}  // namespace

// ============================================================================ scratch sizes

// column_sum uses one [chunks, cols] f32 partial; layer_norm_backward sums dgamma and dbeta in
// one pass and needs two, so the size covers two (the norm backward launchers get this size).
std::size_t column_sum_scratch_bytes(std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>(2 * column_chunks(rows, cols) * cols) * sizeof(float);
}

// row_loss f32 [N], row_lse f32 [N], status i32 [N], count i32 [1].
std::size_t cross_entropy_scratch_bytes(std::int64_t rows) {
  return static_cast<std::size_t>(3 * std::max<std::int64_t>(rows, 0) + 1) * 4;
}

// One f32 partial per block of the first stage.
std::size_t sum_squares_scratch_bytes(std::int64_t n) {
  return static_cast<std::size_t>(sum_squares_blocks(n)) * sizeof(float);
}

// ============================================================================ memory-shaped

void fill(void* y, int dtype, std::int64_t n, float value, cudaStream_t s) {
  if (n == 0) return;
  switch (dtype) {
    case 0:
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<float*>(y), n, value);
      break;
    case 1:  // the host's rounding, bit for bit
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<std::uint16_t*>(y), n, ablate::float_to_bf16(value));
      break;
    case 2:
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<std::int32_t*>(y), n, static_cast<std::int32_t>(value));
      break;
    default:
      throw ablate::Error("backend/cudnn: fill: unknown dtype " + std::to_string(dtype));
  }
  check_launch("fill");
}

void cast(void* y, VT yt, const void* x, VT xt, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_type(yt, [&](auto yk) {
    with_type(xt, [&](auto xk) {
      using Y = type_of<decltype(yk)>;
      using X = type_of<decltype(xk)>;
      cast_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<Y*>(y), static_cast<const X*>(x), n);
    });
  });
  check_launch("cast");
}

void axpy(void* y, VT yt, const void* x, VT xt, std::int64_t n, float alpha, cudaStream_t s) {
  if (n == 0) return;
  with_type(yt, [&](auto yk) {
    with_type(xt, [&](auto xk) {
      using Y = type_of<decltype(yk)>;
      using X = type_of<decltype(xk)>;
      axpy_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<Y*>(y), static_cast<const X*>(x), n, alpha);
    });
  });
  check_launch("axpy");
}

// ============================================================================ elementwise

void add_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, float alpha, float beta,
                 cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    add_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(a), static_cast<const T*>(b),
                                                n, nb, alpha, beta);
  });
  check_launch("add_forward");
}

void column_sum(void* out, VT out_t, const void* x, VT xt, std::int64_t rows, std::int64_t cols, float alpha,
                void* scratch, cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  auto* partial = static_cast<float*>(scratch);
  with_type(xt, [&](auto k) {
    using T = type_of<decltype(k)>;
    column_partials<1>(partial, rows, cols, ColumnTerm<T>{static_cast<const T*>(x), cols}, s, "column_sum (partials)");
  });
  column_finish(out, out_t, partial, 0, rows, cols, alpha, s, "column_sum (finish)");
}

void mul_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    mul_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(a), static_cast<const T*>(b),
                                                n, nb);
  });
  check_launch("mul_forward");
}

void mul_backward(void* da, void* db, const void* dy, const void* a, const void* b, VT t, std::int64_t n,
                  std::int64_t nb, void* scratch, cudaStream_t s) {
  if (n == 0 || (da == nullptr && db == nullptr)) return;
  void* db_here = nb == n ? db : nullptr;  // a repeated b: its gradient is a column sum below
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    if (da || db_here) {
      mul_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(da), static_cast<T*>(db_here),
                                                           static_cast<const T*>(dy), static_cast<const T*>(a),
                                                           static_cast<const T*>(b), n, nb);
      check_launch("mul_backward");
    }
    if (db && nb != n) {
      auto* partial = static_cast<float*>(scratch);
      column_partials<1>(partial, n / nb, nb, ProductTerm<T>{static_cast<const T*>(dy), static_cast<const T*>(a), nb}, s,
                         "mul_backward (partials)");
      column_finish(db, t, partial, 0, n / nb, nb, 1.0f, s, "mul_backward (finish)");
    }
  });
}

void rope(void* y, const void* x, const std::int32_t* positions, VT t, std::int64_t rows, std::int64_t T,
          std::int64_t Dh, int rotary, float base, bool backward, cudaStream_t s) {
  const std::int64_t n = rows * (rotary / 2 + (Dh - rotary));
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    rope_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<V*>(y), static_cast<const V*>(x), positions, rows, T, Dh,
                                                 rotary, base, backward);
  });
  check_launch(backward ? "rope_backward" : "rope_forward");
}

void slice_last(void* part, void* whole, VT t, std::int64_t N, std::int64_t C, std::int64_t W, std::int64_t offset,
                bool backward, cudaStream_t s) {
  if (N * W == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    slice_last_kernel<<<grid_for(N * W), kThreads, 0, s>>>(static_cast<V*>(part), static_cast<V*>(whole), N, C, W, offset,
                                                           backward);
  });
  check_launch(backward ? "slice_last_backward" : "slice_last_forward");
}

void activation_forward(void* y, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    activation_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), n, act);
  });
  check_launch("activation_forward");
}

void activation_backward(void* dx, const void* dy, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    activation_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                static_cast<const T*>(x), n, act);
  });
  check_launch("activation_backward");
}

// ReLU' from the output equals ReLU' from the input (y > 0 iff x > 0) and None' is 1, so the
// kernel is the same either way; other activations need the pre-activation.
void activation_grad(void* g, VT gt, const void* dy, const void* src, VT t, std::int64_t n, Act act, bool src_is_output,
                     cudaStream_t s) {
  if (src_is_output && act != Act::ReLU && act != Act::None)
    throw ablate::Error("backend/cudnn: activation_grad: activation " + std::to_string(static_cast<int>(act)) +
                        " needs the pre-activation, not the output");
  if (n == 0) return;
  with_type(gt, [&](auto gk) {
    with_type(t, [&](auto k) {
      using G = type_of<decltype(gk)>;
      using T = type_of<decltype(k)>;
      activation_grad_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<G*>(g), static_cast<const T*>(dy),
                                                              static_cast<const T*>(src), n, act);
    });
  });
  check_launch("activation_grad");
}

void bias_activation(void* y, void* pre, const void* z, const void* bias, VT t, std::int64_t rows, std::int64_t cols,
                     Act act, cudaStream_t s) {
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    bias_activation_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<T*>(pre),
                                                            static_cast<const T*>(z), static_cast<const T*>(bias), n,
                                                            cols, act);
  });
  check_launch("bias_activation");
}

void dropout_forward(void* y, const void* x, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    dropout_kernel<T, false><<<dropout_grid(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), n, p,
                                                                keep_scale_of(p), key);
  });
  check_launch("dropout_forward");
}

void dropout_backward(void* dx, const void* dy, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    dropout_kernel<T, true><<<dropout_grid(n), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy), n, p,
                                                               keep_scale_of(p), key);
  });
  check_launch("dropout_backward");
}

// ============================================================================ norms

void layer_norm_forward(void* y, float* mean, float* rstd, const void* x, const void* gamma, const void* beta, VT t,
                        std::int64_t rows, std::int64_t D, float eps, cudaStream_t s) {
  if (rows == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    layer_norm_forward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(y), mean, rstd,
                                                                  static_cast<const T*>(x), static_cast<const T*>(gamma),
                                                                  static_cast<const T*>(beta), rows, D, eps);
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
      layer_norm_backward_dx_kernel<<<row_grid(rows), kThreads, 0, s>>>(
          static_cast<T*>(dx), static_cast<const T*>(dy), static_cast<const T*>(x), mean, rstd,
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

void rms_norm_forward(void* y, float* rstd, const void* x, const void* gamma, VT t, std::int64_t rows, std::int64_t D,
                      float eps, cudaStream_t s) {
  if (rows == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    rms_norm_forward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(y), rstd, static_cast<const T*>(x),
                                                                static_cast<const T*>(gamma), rows, D, eps);
  });
  check_launch("rms_norm_forward");
}

void rms_norm_backward(void* dx, void* dgamma, VT g_t, const void* dy, const void* x, const float* rstd,
                       const void* gamma, VT t, std::int64_t rows, std::int64_t D, void* scratch, cudaStream_t s) {
  if (rows == 0) return;
  auto* partial = static_cast<float*>(scratch);
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    if (dx) {
      rms_norm_backward_dx_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                      static_cast<const T*>(x), rstd,
                                                                      static_cast<const T*>(gamma), rows, D);
      check_launch("rms_norm_backward (dx)");
    }
    if (dgamma && D > 0)
      column_partials<1>(partial, rows, D, RmsNormParamTerms<T>{static_cast<const T*>(dy), static_cast<const T*>(x), rstd, D},
                         s, "rms_norm_backward (dgamma partials)");
  });
  if (dgamma && D > 0) column_finish(dgamma, g_t, partial, 0, rows, D, 1.0f, s, "rms_norm_backward (dgamma)");
}

// ============================================================================ embedding

void embedding_forward(void* y, const std::int32_t* ids, const void* table, VT t, std::int64_t N, std::int64_t D,
                       std::int64_t V, std::int32_t* bad_id_flag, cudaStream_t s) {
  if (N == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    embedding_forward_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(y), ids, static_cast<const T*>(table), N,
                                                              D, V, bad_id_flag);
  });
  check_launch("embedding_forward");
}

void embedding_backward_atomic(float* dtable, const void* dy, VT t, const std::int32_t* ids, std::int64_t N,
                               std::int64_t D, std::int64_t V, cudaStream_t s) {
  if (N * D == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    embedding_backward_atomic_kernel<<<grid_for(N * D), kThreads, 0, s>>>(dtable, static_cast<const T*>(dy), ids, N, D,
                                                                          V);
  });
  check_launch("embedding_backward_atomic");
}

void embedding_backward_grouped(void* dtable, VT dtable_t, const void* dy, VT t, const std::int32_t* uniq_ids,
                                const std::int32_t* starts, const std::int32_t* rows, std::int64_t U, std::int64_t D,
                                cudaStream_t s) {
  if (U == 0 || D == 0) return;
  with_type(dtable_t, [&](auto gk) {
    with_type(t, [&](auto k) {
      using G = type_of<decltype(gk)>;
      using T = type_of<decltype(k)>;
      embedding_backward_grouped_kernel<<<row_grid(U), kThreads, 0, s>>>(static_cast<G*>(dtable),
                                                                         static_cast<const T*>(dy), uniq_ids, starts,
                                                                         rows, U, D);
    });
  });
  check_launch("embedding_backward_grouped");
}

// ============================================================================ heads

void split_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                         int parts, int part, cudaStream_t s) {
  heads<true, false>(y, x, t, B, T, H, Dh, parts, part, s, "split_heads_forward");
}

void split_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H,
                          std::int64_t Dh, int parts, int part, cudaStream_t s) {
  heads<false, true>(dx, dy, t, B, T, H, Dh, parts, part, s, "split_heads_backward");
}

void merge_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                         cudaStream_t s) {
  heads<false, false>(y, x, t, B, T, H, Dh, 1, 0, s, "merge_heads_forward");
}

void merge_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H,
                          std::int64_t Dh, cudaStream_t s) {
  heads<true, true>(dx, dy, t, B, T, H, Dh, 1, 0, s, "merge_heads_backward");
}

// ============================================================================ cross entropy

// Three launches in stream order: per-row losses and statuses; the totals (a single block, so
// the count exists before any gradient is written); the gradients.
void cross_entropy(float* loss, void* dlogits, float* stats, const void* logits, const std::int32_t* targets, VT t,
                   std::int64_t N, std::int64_t V, std::int32_t ignore_index, float label_smoothing,
                   std::int32_t* bad_target_flag, void* scratch, cudaStream_t s) {
  auto* row_loss = static_cast<float*>(scratch);
  float* row_lse = row_loss + N;
  auto* status = reinterpret_cast<std::int32_t*>(row_lse + N);
  std::int32_t* count = status + N;
  if (N > 0) {
    with_type(t, [&](auto k) {
      using T = type_of<decltype(k)>;
      ce_rows_kernel<<<row_grid(N), kThreads, 0, s>>>(row_loss, row_lse, status, static_cast<const T*>(logits), targets,
                                                      N, V, ignore_index, label_smoothing, bad_target_flag);
    });
    check_launch("cross_entropy (rows)");
  }
  ce_total_kernel<<<1, kFinalThreads, 0, s>>>(loss, stats, count, row_loss, status, N);  // N = 0: loss 0, stats 0
  check_launch("cross_entropy (total)");
  if (N > 0 && V > 0) {
    with_type(t, [&](auto k) {
      using T = type_of<decltype(k)>;
      ce_grad_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(dlogits), static_cast<const T*>(logits), targets,
                                                      row_lse, status, count, N, V, label_smoothing);
    });
    check_launch("cross_entropy (gradient)");
  }
}

// ============================================================================ optimizer utilities

void sum_squares(float* total, const void* x, VT t, std::int64_t n, void* scratch, cudaStream_t s) {
  if (n == 0) return;
  auto* partial = static_cast<float*>(scratch);
  const std::int64_t blocks = sum_squares_blocks(n);
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    sum_squares_partial_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(partial, static_cast<const T*>(x), n);
  });
  check_launch("sum_squares (partials)");
  sum_squares_final_kernel<<<1, kFinalThreads, 0, s>>>(total, partial, blocks);
  check_launch("sum_squares (total)");
}

void adam_update(float* w, float* m, float* v, void* w_low, const float* grad, std::int64_t n, float lr, float beta1,
                 float beta2, float eps, float weight_decay, bool decoupled, std::int64_t step, float grad_scale,
                 cudaStream_t s) {
  if (n == 0) return;
  const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step)));
  const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step)));
  adam_kernel<<<grid_for(n), kThreads, 0, s>>>(w, m, v, static_cast<bf16*>(w_low), grad, n, lr, beta1, beta2, eps,
                                               weight_decay, decoupled, bc1, bc2, grad_scale);
  check_launch("adam_update");
}

// ============================================================================ attention

void attention_softmax_forward(float* lse, float* probs, void* pd, VT t, const float* logits, const AttentionShape& a,
                               cudaStream_t s) {
  const std::int64_t rows = a.B * a.H * a.T;
  if (rows == 0) return;
  const AttentionShape shape = a;  // by value into the kernel
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    attention_softmax_forward_kernel<<<row_grid(rows), kThreads, 0, s>>>(lse, probs, static_cast<T*>(pd), logits, shape,
                                                                         keep_scale_of(a.dropout));
  });
  check_launch("attention_softmax_forward");
}

void attention_softmax_backward(void* ds, void* pd, VT t, const float* logits, const float* lse, const float* dpd,
                                const AttentionShape& a, cudaStream_t s) {
  const std::int64_t rows = a.B * a.H * a.T;
  if (rows == 0) return;
  const AttentionShape shape = a;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    attention_softmax_backward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(ds), static_cast<T*>(pd),
                                                                          logits, lse, dpd, shape,
                                                                          keep_scale_of(a.dropout));
  });
  check_launch("attention_softmax_backward");
}

void attention_bias_backward(float* dbias, const void* ds, VT t, const AttentionShape& a, cudaStream_t s) {
  const std::int64_t n = a.bias_heads * a.T * a.S;
  if (n == 0 || a.B * a.H == 0) return;
  const AttentionShape shape = a;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    attention_bias_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(dbias, static_cast<const T*>(ds), shape);
  });
  check_launch("attention_bias_backward");
}

}  // namespace backend_cudnn::kernels
