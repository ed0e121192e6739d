// backend/cudnn: cross entropy (loss, dlogits, accuracy counts in one op), the sum of squares of
// gradient clipping, and Adam/AdamW; declared in kernels.hpp.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// ---------------------------------------------------------------------------- cross entropy
// Scratch: row_loss f32 [N] | row_lse f32 [N] | status i32 [N] | count i32 [1].

// Row n (a block): status 0 = ignored (ignore_index, or a target outside [0, V), which also sets
// the flag), 1 = counted, 2 = counted and the argmax (first max) is the target; row_lse =
// logsumexp of the row; row_loss = lse - sum_c q_c z_c with q = (1 - ls) onehot + ls / V (0 when
// ignored).
template <class T>
__global__ void ce_rows_kernel(float* row_loss, float* row_lse, std::int32_t* status, const T* logits,
                               const std::int32_t* targets, std::int64_t N, std::int64_t V, std::int32_t ignore_index, float ls,
                               std::int32_t* bad_target_flag) {
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
                               const std::int32_t* status, const std::int32_t* count, std::int64_t N, std::int64_t V, float ls) {
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

// The reference's Adam / AdamW step for one element (bc1, bc2 = 1 - beta^step): w, m, v updated
// in place, the new w returned.
struct AdamStep {
  float lr, beta1, beta2, eps, wd, bc1, bc2, grad_scale;
  bool decoupled;
  __device__ float operator()(float& w, float& m, float& v, float grad) const {
    float g = grad * grad_scale;
    if (!decoupled) g += wd * w;
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    const float update = (m / bc1) / (sqrtf(v / bc2) + eps);
    w = w - (lr * update + (decoupled ? lr * wd * w : 0.0f));
    return w;
  }
};

// Adam over n elements, then w_low = bf16(w); kPacked (n % 4 == 0, every pointer aligned to 4
// elements): a thread moves four elements of each array with one vector load and store.
template <bool kPacked>
__global__ void adam_kernel(float* w, float* m, float* v, bf16* w_low, const float* grad, std::int64_t n, AdamStep step) {
  if constexpr (kPacked) {
    for (std::int64_t q = first_index(); 4 * q < n; q += grid_stride()) {
      Pack<float, 4> wq = reinterpret_cast<Pack<float, 4>*>(w)[q], mq = reinterpret_cast<Pack<float, 4>*>(m)[q],
                     vq = reinterpret_cast<Pack<float, 4>*>(v)[q];
      const Pack<float, 4> gq = reinterpret_cast<const Pack<float, 4>*>(grad)[q];
      Pack<bf16, 4> lq;
      for (int j = 0; j < 4; ++j) lq.v[j] = __float2bfloat16_rn(step(wq.v[j], mq.v[j], vq.v[j], gq.v[j]));
      reinterpret_cast<Pack<float, 4>*>(w)[q] = wq;
      reinterpret_cast<Pack<float, 4>*>(m)[q] = mq;
      reinterpret_cast<Pack<float, 4>*>(v)[q] = vq;
      if (w_low) reinterpret_cast<Pack<bf16, 4>*>(w_low)[q] = lq;
    }
  } else {
    for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
      const float wn = step(w[i], m[i], v[i], grad[i]);
      if (w_low) w_low[i] = __float2bfloat16_rn(wn);
    }
  }
}

}  // namespace

// row_loss f32 [N], row_lse f32 [N], status i32 [N], count i32 [1].
std::size_t cross_entropy_scratch_bytes(std::int64_t rows) {
  return static_cast<std::size_t>(3 * std::max<std::int64_t>(rows, 0) + 1) * 4;
}

// One f32 partial per block of the first stage.
std::size_t sum_squares_scratch_bytes(std::int64_t n) { return static_cast<std::size_t>(sum_squares_blocks(n)) * sizeof(float); }

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
      ce_rows_kernel<<<row_grid(N), kThreads, 0, s>>>(row_loss, row_lse, status, static_cast<const T*>(logits), targets, N, V,
                                                      ignore_index, label_smoothing, bad_target_flag);
    });
    check_launch("cross_entropy (rows)");
  }
  ce_total_kernel<<<1, kFinalThreads, 0, s>>>(loss, stats, count, row_loss, status, N);  // N = 0: loss 0, stats 0
  check_launch("cross_entropy (total)");
  if (N > 0 && V > 0) {
    with_type(t, [&](auto k) {
      using T = type_of<decltype(k)>;
      ce_grad_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(dlogits), static_cast<const T*>(logits), targets, row_lse,
                                                      status, count, N, V, label_smoothing);
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

void adam_update(float* w, float* m, float* v, void* w_low, const float* grad, std::int64_t n, float lr, float beta1, float beta2,
                 float eps, float weight_decay, bool decoupled, std::int64_t step, float grad_scale, cudaStream_t s) {
  if (n == 0) return;
  const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step)));
  const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step)));
  const AdamStep adam{lr, beta1, beta2, eps, weight_decay, bc1, bc2, grad_scale, decoupled};
  auto* low = static_cast<bf16*>(w_low);
  if (n % 4 == 0 && aligned_to(16, w, m, v, grad) && aligned_to(8, low))
    adam_kernel<true><<<grid_for(n / 4), kThreads, 0, s>>>(w, m, v, low, grad, n, adam);
  else
    adam_kernel<false><<<grid_for(n), kThreads, 0, s>>>(w, m, v, low, grad, n, adam);
  check_launch("adam_update");
}

}  // namespace backend_cudnn::kernels
