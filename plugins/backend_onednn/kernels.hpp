// Scalar building blocks of backend/onednn's own kernels, written so that `#pragma omp simd`
// loops vectorise: f32/bf16 load/store, a branch-free exp, the activations and their
// derivatives, dtype dispatch and argument checks that name the op and the tensors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <tuple>

#if defined(__x86_64__)
#include <immintrin.h>  // the Philox paths pick AVX-512 or AVX2 at run time (target attributes)
#endif

#include "ablate/backend.hpp"
#include "ablate/activation_math.hpp"
#include "ablate/bf16.hpp"
#include "ablate/error.hpp"
#include "ablate/philox.hpp"

namespace backend_onednn {

using bf16_t = std::uint16_t;  // storage of one bfloat16 value

// --- team size: how many threads a parallel region may use for `work` elements.
// libgomp threads spin-wait at a region's barriers. When two processes share this machine's
// cores (ctest -j2, two runs of a sweep), a team of 2 whose partner is descheduled spins for
// a whole time slice, once per region: a gradcheck of tiny attention shapes took 0.03 s alone
// but 11 s with a second copy running. So a region only forks when its work (elements touched,
// or rows x row length) is large enough to repay a fork and a barrier; below the grain it runs
// on the calling thread alone. Only the team size changes, never the chunking of a reduction,
// so results stay bit-identical for any team size. Grain tuned with bench/op_bench.
inline constexpr std::int64_t kParallelGrain = 32768;
inline int team_size(std::int64_t work, int threads) { return work >= kParallelGrain ? threads : 1; }
// The same for work given as its factors (rows, row length, ...): inside `#pragma omp` a braced
// list, which clang-format leaves alone (it takes `a * b` there for a pointer declaration).
inline int team_size(std::initializer_list<std::int64_t> factors, int threads) {
  std::int64_t work = 1;
  for (std::int64_t f : factors) work *= f;
  return team_size(work, threads);
}

// --- loads and stores: compute is always f32; bf16 rounds to nearest even on store.
#pragma omp declare simd
inline float ld(const float* p, std::int64_t i) { return p[i]; }
#pragma omp declare simd
inline float ld(const bf16_t* p, std::int64_t i) {
  const std::uint32_t u = static_cast<std::uint32_t>(p[i]) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
#pragma omp declare simd
inline void st(float* p, std::int64_t i, float v) { p[i] = v; }
#pragma omp declare simd
inline void st(bf16_t* p, std::int64_t i, float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  p[i] = static_cast<bf16_t>(nan ? ((u >> 16) | 0x40u) : r);
}

// A gradient row o[0 : n] += f(j) (add), or = f(j) (a Write store: the old values never read).
// In such a loop, in a lambda that OpenMP outlines, read pointers from locals, not from variables
// the lambda captured by reference: GCC may then load them lane by lane with 64-bit gathers
// (`-fopt-info-vec-all` reports gatherdiv8di; layer_norm_backward ran 3x slower so).
template <class T, class F>
inline void put_row(T* o, std::int64_t n, bool add, F&& f) {
  if (add) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) st(o, j, ld(o, j) + f(j));
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) st(o, j, f(j));
  }
}

// v as a store into T's array would leave it: f32 itself, bf16 rounded (a fused op that must equal
// the composition of two ops, the first of which stored its result).
#pragma omp declare simd
inline float stored_as(const float*, float v) { return v; }
#pragma omp declare simd
inline float stored_as(const bf16_t*, float v) {
  bf16_t b;
  st(&b, 0, v);
  return ld(&b, 0);
}

// Calls f(T*) with the tensor's data typed by its dtype (F32 or BF16; anything else throws).
template <class F>
inline void with_float(const char* op, const ablate::Tensor& t, F&& f) {
  if (t.dtype() == ablate::DType::F32) return f(t.data<float>());
  if (t.dtype() == ablate::DType::BF16) return f(t.data<bf16_t>());
  throw ablate::Error(std::string("onednn ") + op + ": " + t.str() + " must be f32 or bf16");
}

// with_float over several tensors at once: f(T0*, T1*, ...) with each one's data typed by its
// dtype; with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) { ... }).
template <std::size_t I = 0, class Tensors, class F, class... P>
inline void with_floats(const char* op, const Tensors& tensors, F&& f, P*... typed) {
  if constexpr (I == std::tuple_size_v<Tensors>)
    f(typed...);
  else
    with_float(op, std::get<I>(tensors), [&](auto* p) { with_floats<I + 1>(op, tensors, f, typed..., p); });
}

// with_floats over `tensors`, then row(i, p...) for each i in [0, count) with their typed data
// pointers p, on a team of threads when `work` elements make one worth it: the loop of every
// rowwise and elementwise kernel.
template <class Tensors, class Row>
inline void each_row(const char* op, const Tensors& tensors, std::int64_t count, std::int64_t work, int threads, Row&& row) {
  with_floats(op, tensors, [&](auto*... p) {
#pragma omp parallel for num_threads(team_size(work, threads)) schedule(static)
    for (std::int64_t i = 0; i < count; ++i) row(i, p...);
  });
}

// exp(x) for f32, branch-free (Cody-Waite reduction + degree-6 polynomial, ~1 ulp), so that
// softmax rows vectorise. exp(-inf) = 0; results flush to 0 below x ~ -87.5 (no denormals) and
// become +inf above x ~ 88.03 (slightly before FLT_MAX; never reached by softmax, where x <= 0).
// Its constants, shared with the 16-lane form (tile_rows.hpp, exp16).
namespace exp_c {
constexpr float kMin = -88.0f, kMax = 88.7f;  // the clamp
constexpr float kRound = 12582912.0f;         // 1.5 * 2^23: adding it rounds to the nearest integer
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 in two parts (Cody-Waite)
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                         4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};  // the polynomial, highest first
}  // namespace exp_c
#pragma omp declare simd
inline float fast_exp(float x) {
  using namespace exp_c;
  x = std::min(std::max(x, kMin), kMax);
  const float n = (x * kLog2e + kRound) - kRound;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kP[0];
  p = p * r + kP[1];
  p = p * r + kP[2];
  p = p * r + kP[3];
  p = p * r + kP[4];
  p = p * r + kP[5];
  p = p * r * r + r + 1.0f;
  const std::int32_t e = static_cast<std::int32_t>(n) + 127;
  const std::uint32_t bits = static_cast<std::uint32_t>(e) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// max_j x[j] over j < n (-inf for n = 0), in 8 independent lanes so it vectorises (max is
// exact and order-free, so this is deterministic).
template <class T>
inline float row_max(const T* x, std::int64_t n) {
  float m[8];
  for (float& v : m) v = -__builtin_inff();
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) m[l] = std::max(m[l], ld(x, j + l));
  float r = -__builtin_inff();
  for (; j < n; ++j) r = std::max(r, ld(x, j));
  for (const float v : m) r = std::max(r, v);
  return r;
}

// --- Philox, many blocks at once: u[4*i + j] = philox_uniform4(key, blk0 + i)[j] for i < nblk,
// bit-identical to ablate::philox_uniform4 (tests check). The vector paths are chosen at run time
// by what the CPU has (cpu_has_avx512 / cpu_has_avx2), so a portable build runs them too: 16
// blocks per step with AVX-512, then 8 with AVX2 (a row of 32 keys is 8 blocks), the rest one at a time.
#if defined(__x86_64__)
inline bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}
inline bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// The first 16*k blocks (k as many as fit) by AVX-512; returns how many it did. (GCC 12 warns that
// its own _mm512_undefined_* placeholders "may be used uninitialized" when a function's target
// attribute, not the command line, enables AVX-512: a false positive, silenced here.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
// G independent groups of 16 blocks (blocks b .. b + 16 G - 1) into out[64 G], block-major with 4
// words each: the groups' rounds interleave, so the multiplies' latency overlaps (one group alone
// waits on its chain of 10 rounds).
template <int G>
__attribute__((target("avx512f"))) inline void philox_groups_avx512(float* out, const ablate::RngKey& key, std::uint64_t b) {
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m512i w0 = _mm512_set1_epi32(static_cast<int>(0x9E3779B9u)), w1 = _mm512_set1_epi32(static_cast<int>(0xBB67AE85u));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 scale = _mm512_set1_ps(1.0f / 16777216.0f);
  constexpr __mmask16 kOdd = 0xAAAA;
  __m512i c0[G], c1[G], c2[G], c3[G];
  for (int g = 0; g < G; ++g) {
    // Counter words 0 and 1: the block number's low and high halves (a carry where the low wraps).
    const std::uint64_t bg = b + 16 * static_cast<std::uint64_t>(g);
    const __m512i lo = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(bg)));
    const __m512i hi = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(bg >> 32)));
    c0[g] = _mm512_add_epi32(lo, iota);
    c1[g] = _mm512_mask_add_epi32(hi, _mm512_cmplt_epu32_mask(c0[g], lo), hi, _mm512_set1_epi32(1));
    c2[g] = _mm512_set1_epi32(static_cast<int>(key.op_id));
    c3[g] = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.step)));
  }
  __m512i k0 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.seed)));  // the key: the same for every block
  __m512i k1 = _mm512_set1_epi32(
      static_cast<int>(static_cast<std::uint32_t>(key.seed >> 32) ^ static_cast<std::uint32_t>(key.step >> 32)));
  for (int round = 0; round < 10; ++round) {
    for (int g = 0; g < G; ++g) {
      // 32x32 -> 64-bit products of the even and the odd lanes, split into lo/hi halves.
      const __m512i pe0 = _mm512_mul_epu32(c0[g], m0), po0 = _mm512_mul_epu32(_mm512_srli_epi64(c0[g], 32), m0);
      const __m512i pe1 = _mm512_mul_epu32(c2[g], m1), po1 = _mm512_mul_epu32(_mm512_srli_epi64(c2[g], 32), m1);
      const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, pe0, _mm512_slli_epi64(po0, 32));
      const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(pe0, 32), po0);
      const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, pe1, _mm512_slli_epi64(po1, 32));
      const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(pe1, 32), po1);
      c0[g] = _mm512_xor_si512(_mm512_xor_si512(hi1, c1[g]), k0);
      c2[g] = _mm512_xor_si512(_mm512_xor_si512(hi0, c3[g]), k1);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 = _mm512_add_epi32(k0, w0);
    k1 = _mm512_add_epi32(k1, w1);
  }
  for (int g = 0; g < G; ++g) {
    // f_j[l] = word j of block l as a uniform; transpose to u's order (block-major, 4 words each):
    // within each 128-bit lane first (blocks 4q .. 4q+3), then the lanes.
    const __m512 f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c0[g], 8)), scale);
    const __m512 f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c1[g], 8)), scale);
    const __m512 f2 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c2[g], 8)), scale);
    const __m512 f3 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c3[g], 8)), scale);
    const __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(f0, f1)), t1 = _mm512_castps_pd(_mm512_unpackhi_ps(f0, f1));
    const __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(f2, f3)), t3 = _mm512_castps_pd(_mm512_unpackhi_ps(f2, f3));
    const __m512 r0 = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));  // blocks 0, 4, 8, 12
    const __m512 r1 = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));  // blocks 1, 5, 9, 13
    const __m512 r2 = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));  // blocks 2, 6, 10, 14
    const __m512 r3 = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));  // blocks 3, 7, 11, 15
    const __m512 v0 = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(2, 0, 2, 0)),
                 v1 = _mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 v2 = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(3, 1, 3, 1)),
                 v3 = _mm512_shuffle_f32x4(r2, r3, _MM_SHUFFLE(3, 1, 3, 1));
    float* o = out + 64 * g;
    _mm512_storeu_ps(o, _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)));       // blocks 0-3
    _mm512_storeu_ps(o + 16, _mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(2, 0, 2, 0)));  // blocks 4-7
    _mm512_storeu_ps(o + 32, _mm512_shuffle_f32x4(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));  // blocks 8-11
    _mm512_storeu_ps(o + 48, _mm512_shuffle_f32x4(v2, v3, _MM_SHUFFLE(3, 1, 3, 1)));  // blocks 12-15
  }
}

__attribute__((target("avx512f"))) inline std::int64_t philox_uniforms_avx512(float* u, const ablate::RngKey& key,
                                                                              std::uint64_t blk0, std::int64_t nblk) {
  constexpr int kGroups = 8;  // 1.6x the throughput of 1 group on Zen 5 (bench/README.md); 16 adds little
  std::int64_t i = 0;
  for (; i + 16 * kGroups <= nblk; i += 16 * kGroups)
    philox_groups_avx512<kGroups>(u + 4 * i, key, blk0 + static_cast<std::uint64_t>(i));
  for (; i + 16 <= nblk; i += 16) philox_groups_avx512<1>(u + 4 * i, key, blk0 + static_cast<std::uint64_t>(i));
  return i;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// G independent groups of 8 blocks (blocks b .. b + 8 G - 1) into out[32 G], as
// philox_groups_avx512 with AVX2's 8 lanes.
template <int G>
__attribute__((target("avx2"))) inline void philox_groups_avx2(float* out, const ablate::RngKey& key, std::uint64_t b) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256i w0 = _mm256_set1_epi32(static_cast<int>(0x9E3779B9u)), w1 = _mm256_set1_epi32(static_cast<int>(0xBB67AE85u));
  const __m256 scale = _mm256_set1_ps(1.0f / 16777216.0f);
  __m256i c0[G], c1[G], c2[G], c3[G];
  for (int g = 0; g < G; ++g) {
    alignas(32) std::uint32_t lo[8], hi[8];
    for (int l = 0; l < 8; ++l) {
      const std::uint64_t blk = b + static_cast<std::uint64_t>(8 * g + l);
      lo[l] = static_cast<std::uint32_t>(blk);
      hi[l] = static_cast<std::uint32_t>(blk >> 32);
    }
    c0[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    c1[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
    c2[g] = _mm256_set1_epi32(static_cast<int>(key.op_id));
    c3[g] = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.step)));
  }
  __m256i k0 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.seed)));
  __m256i k1 = _mm256_set1_epi32(
      static_cast<int>(static_cast<std::uint32_t>(key.seed >> 32) ^ static_cast<std::uint32_t>(key.step >> 32)));
  for (int round = 0; round < 10; ++round) {
    for (int g = 0; g < G; ++g) {
      // 32x32 -> 64-bit products of the even and the odd lanes, split into lo/hi halves.
      const __m256i pe0 = _mm256_mul_epu32(c0[g], m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0[g], 32), m0);
      const __m256i pe1 = _mm256_mul_epu32(c2[g], m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2[g], 32), m1);
      const __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
      const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
      const __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
      const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
      c0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[g]), k0);
      c2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[g]), k1);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 = _mm256_add_epi32(k0, w0);
    k1 = _mm256_add_epi32(k1, w1);
  }
  for (int g = 0; g < G; ++g) {
    alignas(32) float f[4][8];
    _mm256_store_ps(f[0], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c0[g], 8)), scale));
    _mm256_store_ps(f[1], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c1[g], 8)), scale));
    _mm256_store_ps(f[2], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c2[g], 8)), scale));
    _mm256_store_ps(f[3], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c3[g], 8)), scale));
    for (int l = 0; l < 8; ++l)
      for (int j = 0; j < 4; ++j) out[32 * g + 4 * l + j] = f[j][l];
  }
}

// The first 8*k blocks by AVX2; returns how many it did.
__attribute__((target("avx2"))) inline std::int64_t philox_uniforms_avx2(float* u, const ablate::RngKey& key, std::uint64_t blk0,
                                                                         std::int64_t nblk) {
  constexpr int kGroups = 8;  // 1.5x the throughput of 1 group (measured on Zen 5; bench/README.md)
  std::int64_t i = 0;
  for (; i + 8 * kGroups <= nblk; i += 8 * kGroups)
    philox_groups_avx2<kGroups>(u + 4 * i, key, blk0 + static_cast<std::uint64_t>(i));
  for (; i + 8 <= nblk; i += 8) philox_groups_avx2<1>(u + 4 * i, key, blk0 + static_cast<std::uint64_t>(i));
  return i;
}
#endif

inline void philox_uniforms(float* u, const ablate::RngKey& key, std::uint64_t blk0, std::int64_t nblk) {
  std::int64_t i = 0;
#if defined(__x86_64__)
  if (cpu_has_avx512()) i = philox_uniforms_avx512(u, key, blk0, nblk);
  if (cpu_has_avx2()) i += philox_uniforms_avx2(u + 4 * i, key, blk0 + static_cast<std::uint64_t>(i), nblk - i);  // 8 at a time
#endif
  for (; i < nblk; ++i) ablate::philox_uniform4(key, blk0 + static_cast<std::uint64_t>(i), u + 4 * i);
}

// The scale of a kept element, 1 / (1 - p) (0 when p = 1: nothing is kept).
inline float keep_inv(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }

// m[j] = keep(base + j) ? keep_inv(p) : 0 for j < n, keep = dropout_keep(key, base + j, p). `u`
// is scratch of at least n + 8 floats.
inline void keep_scales(float* m, float* u, std::uint64_t base, std::int64_t n, float p, const ablate::RngKey& key) {
  if (n <= 0) return;
  const float inv = keep_inv(p);
  const std::uint64_t blk0 = base / 4, blk1 = (base + static_cast<std::uint64_t>(n) - 1) / 4;
  philox_uniforms(u, key, blk0, static_cast<std::int64_t>(blk1 - blk0 + 1));
  const float* uu = u + (base - 4 * blk0);
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) m[j] = uu[j] >= p ? inv : 0.0f;
}

// Calls f(i0, len, m) over fixed chunks [i0, i0 + len) of [0, n), 1024 elements each, split
// across threads, with m[j] = dropout_keep(key, i0 + j, p) ? keep_inv(p) : 0 (keep_scales).
template <class F>
inline void for_each_keep(std::int64_t n, float p, const ablate::RngKey& key, int threads, F&& f) {
  constexpr std::int64_t kChunk = 1024;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel num_threads(team_size(n, threads))
  {
    alignas(64) float m[kChunk], u[kChunk + 16];
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t i0 = c * kChunk, len = std::min(kChunk, n - i0);
      keep_scales(m, u, static_cast<std::uint64_t>(i0), len, p, key);
      f(i0, len, m);
    }
  }
}

// --- activations: y = f(x) and f'(x), branch-free so `omp simd` loops vectorise.
constexpr float kInvSqrt2 = 0.7071067811865476f;

// erfc(z) for z >= 0 with relative error < 1.2e-7 (Numerical Recipes' erfcc, a Chebyshev fit),
// so 1 + erf(x) = erfc(-x) keeps its relative accuracy in the far negative tail of GELU.
#pragma omp declare simd
inline float erfc_pos(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * fast_exp(-z * z + p);
}
// Phi(x) = 0.5 * erfc(-x / sqrt(2)): the standard normal CDF.
#pragma omp declare simd
inline float normal_cdf(float x) {
  const float z = x * kInvSqrt2;
  const float e = erfc_pos(std::fabs(z));
  return z >= 0.0f ? 1.0f - 0.5f * e : 0.5f * e;
}
#pragma omp declare simd
inline float fast_tanh(float u) {
  const float t = fast_exp(-2.0f * std::fabs(u));
  const float r = (1.0f - t) / (1.0f + t);
  return u < 0.0f ? -r : r;
}
// The primitives of the activation formulas (ablate/activation_math.hpp): the fast versions above.
struct FastMath {
  static float cdf(float x) { return normal_cdf(x); }
  static float exp(float x) { return fast_exp(x); }
  static float tanh(float u) { return fast_tanh(u); }
};
#pragma omp declare simd
inline float sigmoid(float x) { return ablate::activation_math::sigmoid<FastMath>(x); }

template <ablate::Activation A>
inline float act_fwd(float x) {
  using ablate::Activation;
  namespace am = ablate::activation_math;
  if constexpr (A == Activation::ReLU) return x > 0.0f ? x : 0.0f;
  if constexpr (A == Activation::GeluErf) return am::gelu_erf<FastMath>(x);
  if constexpr (A == Activation::GeluTanh) return am::gelu_tanh<FastMath>(x);
  if constexpr (A == Activation::SiLU) return am::silu<FastMath>(x);
  return x;
}
template <ablate::Activation A>
inline float act_bwd(float x) {  // f'(x)
  using ablate::Activation;
  namespace am = ablate::activation_math;
  if constexpr (A == Activation::ReLU) return x > 0.0f ? 1.0f : 0.0f;
  if constexpr (A == Activation::GeluErf) return am::gelu_erf_grad<FastMath>(x);
  if constexpr (A == Activation::GeluTanh) return am::gelu_tanh_grad<FastMath>(x);
  if constexpr (A == Activation::SiLU) return am::silu_grad<FastMath>(x);
  return 1.0f;
}

template <ablate::Activation A>
struct ActTag {
  static constexpr ablate::Activation value = A;
};
// Calls f(ActTag<act>{}): hoists the activation switch out of the element loops.
template <class F>
inline void with_act(ablate::Activation a, F&& f) {
  using ablate::Activation;
  switch (a) {
    case Activation::None: return f(ActTag<Activation::None>{});
    case Activation::ReLU: return f(ActTag<Activation::ReLU>{});
    case Activation::GeluErf: return f(ActTag<Activation::GeluErf>{});
    case Activation::GeluTanh: return f(ActTag<Activation::GeluTanh>{});
    case Activation::SiLU: return f(ActTag<Activation::SiLU>{});
  }
  throw ablate::Error("onednn: unknown activation " + std::to_string(static_cast<int>(a)));
}

inline float act_f(ablate::Activation a, float x) {
  float y = x;
  with_act(a, [&](auto tag) { y = act_fwd<decltype(tag)::value>(x); });
  return y;
}

// out[cols] = sum over rows of each row's contribution, in a fixed order independent of the
// thread count: rows are cut into at most 64 fixed chunks, each chunk adds its rows in order
// into its own partial[cols], and the partials are added in chunk order.
// fn(r, acc) adds row r into acc[0..width) (width = cols, or more for fused sums).
template <class Fn>
inline void chunked_column_sum(float* out, float* partial, std::int64_t rows, std::int64_t width, int threads, Fn&& fn) {
  const std::int64_t nch = std::min<std::int64_t>(rows, 64);
  if (nch == 0) {
    std::fill(out, out + width, 0.0f);
    return;
  }
#pragma omp parallel for num_threads(team_size({rows, width}, threads)) schedule(static)
  for (std::int64_t ch = 0; ch < nch; ++ch) {
    float* acc = partial + ch * width;
    std::fill(acc, acc + width, 0.0f);
    const std::int64_t r0 = rows * ch / nch, r1 = rows * (ch + 1) / nch;
    for (std::int64_t r = r0; r < r1; ++r) fn(r, acc);
  }
  constexpr std::int64_t kCols = 256;  // column blocks; each column still sums chunks 0, 1, 2, ...
  const std::int64_t blocks = (width + kCols - 1) / kCols;
#pragma omp parallel for num_threads(team_size({nch, width}, threads)) schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t c0 = blk * kCols, c1 = std::min(width, c0 + kCols);
    std::copy(partial + c0, partial + c1, out + c0);
    for (std::int64_t ch = 1; ch < nch; ++ch) {
      const float* p = partial + ch * width;
#pragma omp simd
      for (std::int64_t c = c0; c < c1; ++c) out[c] += p[c];
    }
  }
}

// --- failures inside the backend (a oneDNN error, a value out of range): the argument contract
// itself is ablate::contract's (ablate/backend_contract.hpp), which every op calls first.
[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw ablate::Error(std::string("onednn ") + op + ": " + what);
}

}  // namespace backend_onednn
