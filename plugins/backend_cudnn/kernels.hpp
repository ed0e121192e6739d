// Internal header of backend/cudnn: the small CUDA kernels for the ops that neither cuBLASLt nor
// cuDNN's graph API covers (the *_kernels.cu files by op family, sharing kernels_common.cuh).
// Plain C++ declarations, callable from g++-compiled code.
//
// Conventions (those of ablate/backend.hpp, restated for raw pointers):
//  - Every launcher enqueues on `s` and returns at once; a launch error throws ablate::Error
//    naming the kernel. Pointers are device pointers.
//  - Value buffers are F32 or BF16 (`VT`, the same numbering as ablate::DType); all math is f32,
//    BF16 results are rounded to nearest even. "+=" launchers accumulate into their output.
//  - Reductions are deterministic: fixed grids, fixed summation order, no float atomics (except
//    embedding_backward_atomic, used only outside deterministic mode).
//  - Semantics are exactly those of the reference backend (plugins/backend_reference), which the
//    parity tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "ablate/index_math.hpp"
#include "ablate/philox.hpp"

namespace backend_cudnn::kernels {

enum class VT : int { F32 = 0, BF16 = 1 };                                         // = ablate::DType F32/BF16
enum class Act : int { None = 0, ReLU = 1, GeluErf = 2, GeluTanh = 3, SiLU = 4 };  // = ablate::Activation

// Bytes of f32 scratch the reductions below need (column_sum, norm backward, cross entropy,
// sum_squares); the caller passes a buffer of at least this many bytes.
std::size_t column_sum_scratch_bytes(std::int64_t rows, std::int64_t cols);
std::size_t cross_entropy_scratch_bytes(std::int64_t rows);
std::size_t sum_squares_scratch_bytes(std::int64_t n);

// --- memory-shaped
void fill(void* y, int dtype /* 0 F32, 1 BF16, 2 I32 */, std::int64_t n, float value, cudaStream_t s);
void cast(void* y, VT yt, const void* x, VT xt, std::int64_t n, cudaStream_t s);
// y += alpha * x (y and x may differ in dtype).
void axpy(void* y, VT yt, const void* x, VT xt, std::int64_t n, float alpha, cudaStream_t s);

// --- elementwise
// y[i] = alpha * a[i] + beta * b[i % nb] (nb divides n; nb == n: same shape).
void add_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, float alpha, float beta,
                 cudaStream_t s);
// out[c] += alpha * sum_r x[r, c] for x [rows, cols]; out may be F32 or BF16. Deterministic.
void column_sum(void* out, VT out_t, const void* x, VT xt, std::int64_t rows, std::int64_t cols, float alpha, void* scratch,
                cudaStream_t s);
// y[i] = a[i] * b[i % nb] (nb divides n; nb == n: same shape; a gate per channel or scalar).
void mul_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, cudaStream_t s);
// da[i] += dy[i] * b[i % nb]; db[j] += sum over the repeats of dy * a (either may be null). nb < n
// needs `scratch` of column_sum_scratch_bytes(n / nb, nb) bytes.
void mul_backward(void* da, void* db, const void* dy, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb,
                  void* scratch, cudaStream_t s);
// Rotary positions on x[rows = B*H*T, Dh] (row r at positions[r % T], I32 on the device): the
// first `rotary` dims turn by ablate::rope_angle (freqs null), or by ablate::rope_frequency_angle
// with pair i's frequency freqs[i] (F32 [rotary/2] on the device), the rest are copied. backward:
// dx += R(-angle) dy (y = dx, x = dy). Positions and frequencies are not checked on the host (that
// would synchronise).
void rope(void* y, const void* x, const std::int32_t* positions, const float* freqs, VT t, std::int64_t rows, std::int64_t T,
          std::int64_t Dh, int rotary, float base, bool backward, cudaStream_t s);
// part[N, W] and whole[N, C] at column `offset`: forward part = whole[:, offset:offset+W];
// backward whole[:, offset:offset+W] += part.
void slice_last(void* part, void* whole, VT t, std::int64_t N, std::int64_t C, std::int64_t W, std::int64_t offset, bool backward,
                cudaStream_t s);
// --- index and layout (index_kernels.cu)
// y[i] = (a[i] c b[i % nb]) ? 1 : 0 (ablate::compare_holds).
void compare(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, ablate::Compare c, cudaStream_t s);
// forward: y[j] = x[w.offset(j)] over y's n elements; backward: x[w.offset(j)] += y[j] (x = dx, y = dy).
void permute(void* y, void* x, VT t, const ablate::PermutedStrides& w, std::int64_t n, bool backward, cudaStream_t s);

void activation_forward(void* y, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s);
// dx += dy * act'(x).
void activation_backward(void* dx, const void* dy, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s);
// g = dy * act'(src) (written, not accumulated). src is the pre-activation, except for ReLU and
// None where src may be the output (src_is_output: ReLU' = y > 0). g may be of another dtype.
void activation_grad(void* g, VT gt, const void* dy, const void* src, VT t, std::int64_t n, Act act, bool src_is_output,
                     cudaStream_t s);
// For z [rows, cols]: v = z + bias[c] (bias may be null); pre = v if pre != null; y = act(v).
// y and pre may alias z.
void bias_activation(void* y, void* pre, const void* z, const void* bias, VT t, std::int64_t rows, std::int64_t cols, Act act,
                     cudaStream_t s);
// y = x * keep / (1 - p) with keep = ablate::dropout_keep(key, i, p) for flat index i.
void dropout_forward(void* y, const void* x, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s);
void dropout_backward(void* dx, const void* dy, VT t, std::int64_t n, float p, ablate::RngKey key,
                      cudaStream_t s);  // dx +=

// --- the small general optional ops over the last dim C of [N, C] (see Backend::softmax_last_*,
// sum_last_*, pointwise_*): one block per row, f32 arithmetic. The backward launchers accumulate.
// y = softmax(x) per row; dx += y * (dy - sum_c dy * y).
void softmax_last_forward(void* y, const void* x, VT t, std::int64_t N, std::int64_t C, cudaStream_t s);
// y = x + dropout(h) as dropout_forward stores it (the residual add of a block, one pass).
void dropout_add_forward(void* y, const void* x, const void* h, VT t, std::int64_t n, float p, ablate::RngKey key,
                         cudaStream_t s);
void softmax_last_backward(void* dx, const void* dy, const void* y, VT t, std::int64_t N, std::int64_t C, cudaStream_t s);
// y[N] = sum_c x[n, c]; dx[n, c] += dy[n].
void sum_last_forward(void* y, const void* x, VT t, std::int64_t N, std::int64_t C, cudaStream_t s);
void sum_last_backward(void* dx, const void* dy, VT t, std::int64_t N, std::int64_t C, cudaStream_t s);
// y = exp(x) or sigmoid(x) elementwise; dx += dy * f'(as a function of y: y, or y (1 - y)).
void pointwise_forward(void* y, const void* x, VT t, std::int64_t n, bool sigmoid, cudaStream_t s);
void pointwise_backward(void* dx, const void* dy, const void* y, VT t, std::int64_t n, bool sigmoid, cudaStream_t s);

// --- norms over the last dim D of [rows, D]. x, y, dy, dx, gamma, beta share `t`; mean and
// rstd are F32; dgamma / dbeta are F32 or `t` (g_t) and accumulated; any gradient may be null.
void layer_norm_forward(void* y, float* mean, float* rstd, const void* x, const void* gamma, const void* beta, VT t,
                        std::int64_t rows, std::int64_t D, float eps, cudaStream_t s);
void layer_norm_backward(void* dx, void* dgamma, void* dbeta, VT g_t, const void* dy, const void* x, const float* mean,
                         const float* rstd, const void* gamma, VT t, std::int64_t rows, std::int64_t D, void* scratch,
                         cudaStream_t s);
void rms_norm_forward(void* y, float* rstd, const void* x, const void* gamma, VT t, std::int64_t rows, std::int64_t D, float eps,
                      cudaStream_t s);
void rms_norm_backward(void* dx, void* dgamma, VT g_t, const void* dy, const void* x, const float* rstd, const void* gamma, VT t,
                       std::int64_t rows, std::int64_t D, void* scratch, cudaStream_t s);

// --- embedding: y[N, D] = table[ids[n], :]. An id outside [0, V) writes a zero row and sets
// *bad_id_flag to 1 + n (the first such n wins is not guaranteed; any offending n).
void embedding_forward(void* y, const std::int32_t* ids, const void* table, VT t, std::int64_t N, std::int64_t D, std::int64_t V,
                       std::int32_t* bad_id_flag, cudaStream_t s);
// dtable[ids[n], :] += dy[n, :] with float atomics (dtable F32): fast, order not fixed.
void embedding_backward_atomic(float* dtable, const void* dy, VT t, const std::int32_t* ids, std::int64_t N, std::int64_t D,
                               std::int64_t V, cudaStream_t s);
// Deterministic: the rows stable-sorted by id on the device (CUB's radix sort), then for each run
// of equal ids dtable[id, :] += the sum of its dy rows in row order. An id outside [0, V) is
// skipped and sets *bad_id_flag to 1 + its row. dtable F32 or `t`; `scratch` of
// embedding_sort_scratch_bytes(N) bytes.
std::size_t embedding_sort_scratch_bytes(std::int64_t N);
void embedding_backward_sorted(void* dtable, VT dtable_t, const void* dy, VT t, const std::int32_t* ids, std::int64_t N,
                               std::int64_t D, std::int64_t V, std::int32_t* bad_id_flag, void* scratch, cudaStream_t s);

// --- heads. split: x [B, T, parts*H*Dh] -> y [B, H, T, Dh] (part `part`); merge: x [B, H, T, Dh]
// -> y [B, T, H*Dh]. The backward launchers accumulate (dx +=).
void split_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh, int parts,
                         int part, cudaStream_t s);
void split_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                          int parts, int part, cudaStream_t s);
void merge_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                         cudaStream_t s);
void merge_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                          cudaStream_t s);

// --- cross entropy over logits [N, V] (see Backend::cross_entropy_forward): loss[1], stats[2]
// F32 written; dlogits written in `t`. A target outside [0, V) that is not ignore_index sets
// *bad_target_flag to 1 + n and counts as ignored.
void cross_entropy(float* loss, void* dlogits, float* stats, const void* logits, const std::int32_t* targets, VT t,
                   std::int64_t N, std::int64_t V, std::int32_t ignore_index, float label_smoothing,
                   std::int32_t* bad_target_flag, void* scratch, cudaStream_t s);

// --- optimizer utilities
void sum_squares(float* total, const void* x, VT t, std::int64_t n, void* scratch, cudaStream_t s);  // total[0] +=
// Adam / AdamW on F32 w, m, v with F32 grad (see ablate::AdamParams); w_low (BF16) may be null.
void adam_update(float* w, float* m, float* v, void* w_low, const float* grad, std::int64_t n, float lr, float beta1, float beta2,
                 float eps, float weight_decay, bool decoupled, std::int64_t step, float grad_scale, cudaStream_t s);

// --- attention, unfused path, for BH = B*H independent [T, S] score matrices.
struct AttentionShape {
  std::int64_t B = 0, H = 0, T = 0, S = 0;
  std::int64_t Hkv = 0;  // k/v heads (dividing H)
  bool causal = false;
  std::int64_t query_offset = 0;
  const std::int32_t* key_lengths = nullptr;  // device I32 [B], or null
  float dropout = 0.0f;
  ablate::RngKey rng;
  // Added to the logits (ablate::AttentionParams): bias F32 [bias_heads (1 or H), T, S], ALiBi slopes F32 [H];
  // device pointers, or null.
  const float* bias = nullptr;
  std::int64_t bias_heads = 0;
  const float* slopes = nullptr;
  // > 0: the scaled product x is capped first, softcap * tanh(x / softcap) (before bias and slopes).
  float softcap = 0.0f;
};
// In: logits [B*H, T, S] F32 (already scaled, not yet capped). Out: lse [B*H, T] F32 (-inf for a row with no
// visible key); probs [B*H, T, S] F32 (optional, before dropout; 0 where masked); pd [B*H, T, S]
// in `t` = probabilities times the dropout factor (keep / (1 - p), index ((b*H + h)*T + i)*S + j
// into [B, H, T, S] as in the reference backend).
void attention_softmax_forward(float* lse, float* probs, void* pd, VT t, const float* logits, const AttentionShape& a,
                               cudaStream_t s);
// In: logits [B*H, T, S] F32 (recomputed, scaled), lse, dpd = dout·v^T [B*H, T, S] F32.
// Out: pd (in `t`) as in forward; ds (in `t`) = P ⊙ (dP - rowsum(P ⊙ dP)) with dP = dpd ⊙ factor.
void attention_softmax_backward(void* ds, void* pd, VT t, const float* logits, const float* lse, const float* dpd,
                                const AttentionShape& a, cudaStream_t s);
// dbias [a.bias_heads, T, S] F32 += ds [B*H, T, S] (in `t`) summed over B (and H for one bias head),
// in a fixed order (deterministic).
void attention_bias_backward(float* dbias, const void* ds, VT t, const AttentionShape& a, cudaStream_t s);
// Through a softcap (a.softcap > 0): ds [B*H, T, S] (in `t`) *= 1 - tanh(logits / softcap)^2, the
// cap's slope at the scaled products `logits` (F32, as given to attention_softmax_backward). After
// attention_bias_backward: the bias is added after the cap, so its gradient is ds before this.
void attention_softcap_backward(void* ds, VT t, const float* logits, const AttentionShape& a, cudaStream_t s);

}  // namespace backend_cudnn::kernels
