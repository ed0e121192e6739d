// Internal header of backend/cudnn: the kernels around cuDNN's fused attention (sdpa_support.cu):
// the dropout factors it multiplies the probabilities by, and the fix-up of batch items whose
// key length is 0, for which the backend interface wants out = 0, lse = -inf and no gradient.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels.hpp"

namespace backend_cudnn::kernels {

// y[i] = keep(i) / (1 - p) or 0, with keep = ablate::dropout_keep(key, i, p): the factors that the
// CPU backends and the unfused path multiply element i of [B, H, T, S] by.
void dropout_factors(void* y, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s);
// For every b with key_lengths[b] == 0: out[b] = 0 and lse[b] = -inf.
void attention_clear_keyless(void* out, float* lse, VT t, const AttentionShape& a, std::int64_t Dh, cudaStream_t s);
// For every b with key_lengths[b] == 0: dq[b] = dk[b] = dv[b] = 0.
void attention_zero_keyless_grads(void* dq, void* dk, void* dv, VT t, const AttentionShape& a, std::int64_t Dh, cudaStream_t s);

}  // namespace backend_cudnn::kernels
