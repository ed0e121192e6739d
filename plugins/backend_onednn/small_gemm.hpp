// backend/onednn: a register-blocked AVX-512 GEMM for the small blocks of one attention tile
// (a few dozen rows, N and K up to a few hundred, everything in L1/L2), where a oneDNN call per
// block costs more than its arithmetic. Chosen at run time (cpu_has_avx512); callers fall back.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace backend_onednn {

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 inside its own AVX-512 intrinsics (their
#pragma GCC diagnostic ignored "-Wuninitialized"        // undefined __Y temporaries), as in kernels.hpp
#endif
#if defined(__clang__)
#define ABLATE_UNROLL _Pragma("unroll")
#else
#define ABLATE_UNROLL _Pragma("GCC unroll 8")
#endif

// The first n lanes of 16 (all 16 for n >= 16).
inline __mmask16 first_lanes(std::int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1); }

// One block: C[M, 16 V] (=, or += when acc) alpha * sum_{k < K} A(i, k) * B[k, 0:16 V] with
// A(i, k) = a[i * ai + k * ak] (any layout: each element is broadcast), B's row k at b + k * ldb,
// C's row i at c + i * ldc; the last 16-wide column group reads and writes only the lanes of `tail`.
template <int M, int V>
__attribute__((target("avx512f"))) inline void small_gemm_block(std::int64_t K, const float* a, std::int64_t ai, std::int64_t ak,
                                                                const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                                                                float alpha, bool acc, __mmask16 tail) {
  __m512 s[M][V];
  ABLATE_UNROLL
  for (int r = 0; r < M; ++r) {
    ABLATE_UNROLL
    for (int v = 0; v < V; ++v) s[r][v] = _mm512_setzero_ps();
  }
  for (std::int64_t k = 0; k < K; ++k) {
    const float* br = b + k * ldb;
    __m512 bv[V];
    ABLATE_UNROLL
    for (int v = 0; v < V; ++v) bv[v] = _mm512_maskz_loadu_ps(v == V - 1 ? tail : __mmask16(0xFFFF), br + 16 * v);
    const float* ar = a + k * ak;
    ABLATE_UNROLL
    for (int r = 0; r < M; ++r) {
      const __m512 x = _mm512_set1_ps(ar[r * ai]);
      ABLATE_UNROLL
      for (int v = 0; v < V; ++v) s[r][v] = _mm512_fmadd_ps(x, bv[v], s[r][v]);
    }
  }
  const __m512 al = _mm512_set1_ps(alpha);
  ABLATE_UNROLL
  for (int r = 0; r < M; ++r) {
    ABLATE_UNROLL
    for (int v = 0; v < V; ++v) {
      float* cp = c + r * ldc + 16 * v;
      const __mmask16 m = v == V - 1 ? tail : __mmask16(0xFFFF);
      __m512 y = _mm512_mul_ps(s[r][v], al);
      if (acc) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, cp));
      _mm512_mask_storeu_ps(cp, m, y);
    }
  }
}

using SmallGemmBlock = void (*)(std::int64_t, const float*, std::int64_t, std::int64_t, const float*, std::int64_t, float*,
                                std::int64_t, float, bool, __mmask16);

// The block for m rows and V column groups (1..4): m up to 8 for 1-2 groups, up to 4 for 3-4.
inline SmallGemmBlock small_gemm_block_for(int m, int V) {
  static constexpr SmallGemmBlock narrow[8][2] = {
      {small_gemm_block<1, 1>, small_gemm_block<1, 2>}, {small_gemm_block<2, 1>, small_gemm_block<2, 2>},
      {small_gemm_block<3, 1>, small_gemm_block<3, 2>}, {small_gemm_block<4, 1>, small_gemm_block<4, 2>},
      {small_gemm_block<5, 1>, small_gemm_block<5, 2>}, {small_gemm_block<6, 1>, small_gemm_block<6, 2>},
      {small_gemm_block<7, 1>, small_gemm_block<7, 2>}, {small_gemm_block<8, 1>, small_gemm_block<8, 2>}};
  static constexpr SmallGemmBlock wide[4][2] = {{small_gemm_block<1, 3>, small_gemm_block<1, 4>},
                                                {small_gemm_block<2, 3>, small_gemm_block<2, 4>},
                                                {small_gemm_block<3, 3>, small_gemm_block<3, 4>},
                                                {small_gemm_block<4, 3>, small_gemm_block<4, 4>}};
  return V <= 2 ? narrow[m - 1][V - 1] : wide[m - 1][V - 3];
}

// C[M, N] (=, or += when acc) alpha * A(M x K) · B[K, N] (layouts as small_gemm_block's), in
// blocks of up to 8 (or 4) rows and 64 columns; K = 0 gives C = 0 (or leaves C). Needs AVX-512.
inline void small_gemm(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t ai, std::int64_t ak,
                       const float* b, std::int64_t ldb, float* c, std::int64_t ldc, float alpha, bool acc) {
  for (std::int64_t n0 = 0; n0 < N; n0 += 64) {
    const std::int64_t w = std::min<std::int64_t>(64, N - n0);
    const int V = static_cast<int>((w + 15) / 16);
    const __mmask16 tail = first_lanes(w - 16 * (V - 1));
    const int rows = V <= 2 ? 8 : 4;
    for (std::int64_t i0 = 0; i0 < M; i0 += rows) {
      const int m = static_cast<int>(std::min<std::int64_t>(rows, M - i0));
      small_gemm_block_for(m, V)(K, a + i0 * ai, ai, ak, b + n0, ldb, c + i0 * ldc + n0, ldc, alpha, acc, tail);
    }
  }
}

// The low / high 64-bit pairs of a and b interleaved, per 128-bit lane.
__attribute__((target("avx512f"))) inline __m512 unpack_lo64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
__attribute__((target("avx512f"))) inline __m512 unpack_hi64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// The 16 x 16 block in r transposed in registers: r[j] becomes column j (4 rounds of shuffles).
__attribute__((target("avx512f"))) inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // u[g + k]: 128-bit lane L holds column 4 L + k of rows g .. g + 3
    u[g] = unpack_lo64(t[g], t[g + 2]);
    u[g + 1] = unpack_hi64(t[g], t[g + 2]);
    u[g + 2] = unpack_lo64(t[g + 1], t[g + 3]);
    u[g + 3] = unpack_hi64(t[g + 1], t[g + 3]);
  }
  for (int k = 0; k < 4; ++k) {  // t[k]: columns k, 8 + k of rows 0-7 (lanes 0-1 | 2-3); t[4 + k]: 4 + k, 12 + k
    t[k] = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
    t[8 + k] = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xdd);
  }
}

// dst[C, R] = src[R, C]^T, row-major (src's rows `lds` apart, at least C; 0: C), in 16 x 16 blocks
// (edges masked).
__attribute__((target("avx512f"))) inline void transpose_small(float* dst, const float* src, std::int64_t R, std::int64_t C,
                                                               std::int64_t lds = 0) {
  if (lds == 0) lds = C;
  for (std::int64_t r0 = 0; r0 < R; r0 += 16) {
    const __mmask16 rows = first_lanes(R - r0);
    for (std::int64_t c0 = 0; c0 < C; c0 += 16) {
      const __mmask16 cols = first_lanes(C - c0);
      __m512 r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = r0 + i < R ? _mm512_maskz_loadu_ps(cols, src + (r0 + i) * lds + c0) : _mm512_setzero_ps();
      transpose16(r);
      for (int j = 0; j < 16 && c0 + j < C; ++j) _mm512_mask_storeu_ps(dst + (c0 + j) * R + r0, rows, r[j]);
    }
  }
}
#undef ABLATE_UNROLL
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace backend_onednn
