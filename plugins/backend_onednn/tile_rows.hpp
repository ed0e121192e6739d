// backend/onednn: the rows of one fused attention tile with AVX-512 (attention_ops.cpp): a head's
// rows copied into the tile's scratch, and the score rows (softmax, P recomputed, P', dS) in chunks
// of 16 keys with the last one masked, so a short row (T = 32, a causal row's first keys) runs no
// scalar remainder loop. Chosen at run time with the tiles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels.hpp"     // ld, bf16_t, fast_exp's constants
#include "small_gemm.hpp"  // first_lanes

namespace backend_onednn {

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 inside its own AVX-512 intrinsics, as in small_gemm.hpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// 16 elements from s as f32 (f32, or bf16).
__attribute__((target("avx512f"))) inline __m512 load16_f32(const float* s) { return _mm512_loadu_ps(s); }
__attribute__((target("avx512f"))) inline __m512 load16_f32(const bf16_t* s) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// d[0, n) = s[0, n) as f32 (a tile's row into its scratch), each block of 64 loaded whole before
// it is stored. Element by element (a load, a store, the next load) A's attention forward took
// 8-13% longer (bench/README.md): a load whose address agrees with the store before it in the low
// 12 bits waits for that store (4K aliasing), and strided rows against the scratch meet that often.
template <class S>
__attribute__((target("avx512f"))) inline void widen_row(float* d, const S* s, std::int64_t n) {
  std::int64_t e = 0;
  for (; e + 64 <= n; e += 64) {
    const __m512 a = load16_f32(s + e), b = load16_f32(s + e + 16), c = load16_f32(s + e + 32), x = load16_f32(s + e + 48);
    _mm512_storeu_ps(d + e, a);
    _mm512_storeu_ps(d + e + 16, b);
    _mm512_storeu_ps(d + e + 32, c);
    _mm512_storeu_ps(d + e + 48, x);
  }
  for (; e + 16 <= n; e += 16) _mm512_storeu_ps(d + e, load16_f32(s + e));
  for (; e < n; ++e) d[e] = ld(s, e);
}

// fast_exp (kernels.hpp) on 16 lanes: the same clamp, reduction and polynomial, from its constants
// (where GCC fuses the scalar form's multiply-adds differently, a last-bit difference).
__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
  using namespace exp_c;
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kMin)), _mm512_set1_ps(kMax));
  const __m512 round = _mm512_set1_ps(kRound);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), round), round);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP[i]));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(e, 23)));
}

// The forward row [S] of scores in place, n >= 1 visible keys, nothing but the softmax to apply
// (no cap, bias or ALiBi): row[j] = exp(row[j] - max) / sum for j < n, a copy into `probs` (if
// any), then times keep[j] (if any); zeros on [n, S) in both; lse = max + log(sum).
__attribute__((target("avx512f"))) inline void softmax_row16(float* row, float& lse, float* probs, std::int64_t n, std::int64_t S,
                                                             const float* keep) {
  __m512 m = _mm512_set1_ps(-__builtin_inff());
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, row + j));
  }
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(m));
  __m512 s = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    const __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), mx)));
    s = _mm512_add_ps(s, e);
    _mm512_mask_storeu_ps(row + j, k, e);
  }
  const float sum = _mm512_reduce_add_ps(s);
  lse = _mm512_cvtss_f32(mx) + std::log(sum);
  const __m512 rs = _mm512_set1_ps(1.0f / sum);
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), rs);
    if (probs) _mm512_mask_storeu_ps(probs + j, k, p);
    if (keep) p = _mm512_mul_ps(p, _mm512_maskz_loadu_ps(k, keep + j));
    _mm512_mask_storeu_ps(row + j, k, p);
  }
  std::fill(row + n, row + S, 0.0f);
  if (probs) std::fill(probs + n, probs + S, 0.0f);
}

// The backward's P row [S] in place from its scores, n keys (0: all zeros), lse `l`, nothing but
// the softmax applied: exp(row[j] - l) for j < n, zeros after.
__attribute__((target("avx512f"))) inline void probs_row16(float* row, std::int64_t n, std::int64_t S, float l) {
  const __m512 vl = _mm512_set1_ps(l);
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    _mm512_mask_storeu_ps(row + j, k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), vl)));
  }
  std::fill(row + n, row + S, 0.0f);
}

// out[j] = a[j] * b[j] for j < n, zeros on [n, S) (P' = P ⊙ keep).
__attribute__((target("avx512f"))) inline void product_row16(float* out, const float* a, const float* b, std::int64_t n,
                                                             std::int64_t S) {
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    _mm512_mask_storeu_ps(out + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + j), _mm512_maskz_loadu_ps(k, b + j)));
  }
  std::fill(out + n, out + S, 0.0f);
}

// dS's row [S] in place from dP' (g), P, n keys, no cap: dP = dP' ⊙ keep (when `keep`),
// dS = P ⊙ (dP - sum_j P_j dP_j); zeros from n on.
__attribute__((target("avx512f"))) inline void dscores_row16(float* g, const float* P, const float* keep, std::int64_t n,
                                                             std::int64_t S) {
  __m512 dot = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    __m512 v = _mm512_maskz_loadu_ps(k, g + j);
    if (keep) {
      v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, keep + j));
      _mm512_mask_storeu_ps(g + j, k, v);
    }
    dot = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, P + j), v, dot);
  }
  const __m512 d = _mm512_set1_ps(_mm512_reduce_add_ps(dot));
  for (std::int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = first_lanes(n - j);
    _mm512_mask_storeu_ps(g + j, k,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(k, P + j), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, g + j), d)));
  }
  std::fill(g + n, g + S, 0.0f);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace backend_onednn
