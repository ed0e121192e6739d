// backend/cudnn: the unfused attention's softmax forward and backward (masks, softcap, ALiBi slopes,
// logit bias, dropout, lse), the logit bias gradient and the softcap's; declared in kernels.hpp.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

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

// Logit j of row (bh, i): the scaled q·k from the GEMM, capped (softcap), plus the bias and ALiBi
// terms, if any.
__device__ float logit_at(const AttentionShape& a, const float* l, std::int64_t row, std::int64_t j) {
  float v = l[j];
  if (a.softcap > 0.0f) v = a.softcap * tanhf(v / a.softcap);
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
__global__ void attention_softmax_forward_kernel(float* lse, float* probs, T* pd, const float* logits, const AttentionShape a,
                                                 float keep_scale) {
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

// ds *= 1 - tanh(x / c)^2 at the scaled products x: the softcap's slope (ds is 0 where masked).
template <class T>
__global__ void attention_softcap_backward_kernel(T* ds, const float* logits, std::int64_t n, float softcap) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float u = tanhf(logits[i] / softcap);
    st(ds, i, ld(ds, i) * (1.0f - u * u));
  }
}

}  // namespace

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
    attention_softmax_backward_kernel<<<row_grid(rows), kThreads, 0, s>>>(static_cast<T*>(ds), static_cast<T*>(pd), logits, lse,
                                                                          dpd, shape, keep_scale_of(a.dropout));
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

void attention_softcap_backward(void* ds, VT t, const float* logits, const AttentionShape& a, cudaStream_t s) {
  const std::int64_t n = a.B * a.H * a.T * a.S;
  if (n == 0 || a.softcap <= 0.0f) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    attention_softcap_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(ds), logits, n, a.softcap);
  });
  check_launch("attention_softcap_backward");
}

}  // namespace backend_cudnn::kernels
