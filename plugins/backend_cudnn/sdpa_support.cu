// backend/cudnn: the kernels around cuDNN's fused attention (sdpa_support.hpp).
#include "sdpa_support.hpp"

#include <cuda_bf16.h>

#include <cmath>
#include <string>

#include "ablate/error.hpp"

namespace backend_cudnn::kernels {

namespace {

void check_launch(const char* name) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw ablate::Error(std::string("backend/cudnn: kernel ") + name + " failed to launch: " + cudaGetErrorString(e));
}

unsigned blocks_for(std::int64_t n, int threads) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 4096 ? b : 4096);  // grid-stride beyond
}

template <class T>
__device__ void store(T* p, std::int64_t i, float v);
template <>
__device__ void store<float>(float* p, std::int64_t i, float v) {
  p[i] = v;
}
template <>
__device__ void store<__nv_bfloat16>(__nv_bfloat16* p, std::int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

template <class T>
__global__ void dropout_factors_kernel(T* y, std::int64_t n, float p, ablate::RngKey key) {
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t g = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; 4 * g < n;
       g += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {  // one Philox draw per 4 elements
    bool keep[4];
    ablate::dropout_keep4(key, static_cast<std::uint64_t>(g), p, keep);
    for (std::int64_t j = 0; j < 4 && 4 * g + j < n; ++j) store(y, 4 * g + j, keep[j] ? scale : 0.0f);
  }
}

// Zero `per_item` elements of item b of up to three [B, ...] tensors where lengths[b] == 0
// (grid: y = b); write -inf into `lse` [B, per_lse] likewise when given.
template <class T>
__global__ void zero_keyless_kernel(T* a, T* b, T* c, std::int64_t per_item_a, std::int64_t per_item_bc, float* lse,
                                    std::int64_t per_lse, const std::int32_t* lengths) {
  const std::int64_t item = blockIdx.y;
  if (lengths[item] != 0) return;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  for (std::int64_t i = first; i < per_item_a; i += stride) store(a, item * per_item_a + i, 0.0f);
  for (std::int64_t i = first; i < per_item_bc; i += stride) {
    if (b) store(b, item * per_item_bc + i, 0.0f);
    if (c) store(c, item * per_item_bc + i, 0.0f);
  }
  if (lse)
    for (std::int64_t i = first; i < per_lse; i += stride) lse[item * per_lse + i] = -INFINITY;
}

template <class T>
void zero_keyless(void* a, void* b, void* c, float* lse, const AttentionShape& s, std::int64_t Dh, cudaStream_t st) {
  const std::int64_t per_a = s.H * s.T * Dh, per_bc = s.H * s.S * Dh;
  const unsigned per_item_blocks = blocks_for(per_a > per_bc ? per_a : per_bc, 256);
  const dim3 grid(per_item_blocks < 64 ? per_item_blocks : 64, static_cast<unsigned>(s.B));
  zero_keyless_kernel<T><<<grid, 256, 0, st>>>(static_cast<T*>(a), static_cast<T*>(b), static_cast<T*>(c), per_a, per_bc, lse,
                                               s.H * s.T, s.key_lengths);
}

}  // namespace

void dropout_factors(void* y, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s) {
  if (n == 0) return;
  if (t == VT::BF16)
    dropout_factors_kernel<<<blocks_for((n + 3) / 4, 256), 256, 0, s>>>(static_cast<__nv_bfloat16*>(y), n, p, key);
  else
    dropout_factors_kernel<<<blocks_for((n + 3) / 4, 256), 256, 0, s>>>(static_cast<float*>(y), n, p, key);
  check_launch("dropout_factors");
}

void attention_clear_keyless(void* out, float* lse, VT t, const AttentionShape& a, std::int64_t Dh, cudaStream_t s) {
  if (a.B == 0 || a.key_lengths == nullptr) return;
  if (t == VT::BF16)
    zero_keyless<__nv_bfloat16>(out, nullptr, nullptr, lse, a, Dh, s);
  else
    zero_keyless<float>(out, nullptr, nullptr, lse, a, Dh, s);
  check_launch("attention_clear_keyless");
}

void attention_zero_keyless_grads(void* dq, void* dk, void* dv, VT t, const AttentionShape& a, std::int64_t Dh, cudaStream_t s) {
  if (a.B == 0 || a.key_lengths == nullptr) return;
  if (t == VT::BF16)
    zero_keyless<__nv_bfloat16>(dq, dk, dv, nullptr, a, Dh, s);
  else
    zero_keyless<float>(dq, dk, dv, nullptr, a, Dh, s);
  check_launch("attention_zero_keyless_grads");
}

}  // namespace backend_cudnn::kernels
