// backend/onednn: scaled dot-product attention (with AVX-512, tiles that fit in cache fused per
// (batch, k/v head) on small_gemm.hpp; otherwise QK^T and PV as oneDNN GEMM batches; both with masks,
// bias, ALiBi slopes, soft-capping, softmax and dropout per row here; heads split, or packed in the
// projections' rows, from which a fused tile gathers its head into cache and the batched-GEMM path
// copies them to split heads), the head split/merge copies and the KV-cache time-slice write.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels.hpp"
#include "onednn_backend.hpp"
#include "small_gemm.hpp"
#include "tile_rows.hpp"

namespace backend_onednn {

using ablate::Activation;

// ------------------------------------------------------------------------------------------
// heads: split x[B, T, P*H*Dh] part -> y[B, H, T, Dh]; merge x[B, H, T, Dh] -> y[B, T, H*Dh]

namespace {
// Copies (or adds, when `acc`) rows of Dh between packed rows [B, T, W] (H heads from column
// `col`) and [B, H, T, Dh]. to_heads: heads[b, h, t, :] (op)= packed[b, t, col + h Dh :]; else the reverse.
template <class Src, class Dst>
void heads_copy(Dst* dst, const Src* src, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh, std::int64_t W,
                std::int64_t col, bool to_heads, bool acc, int threads) {
#pragma omp parallel for num_threads(team_size({B, H, T, Dh}, threads)) schedule(static) collapse(3)
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t hoff = ((b * H + h) * T + t) * Dh, poff = (b * T + t) * W + col + h * Dh;
        const Src* s = src + (to_heads ? poff : hoff);
        Dst* d = dst + (to_heads ? hoff : poff);
        if (acc) {
#pragma omp simd
          for (std::int64_t e = 0; e < Dh; ++e) st(d, e, ld(d, e) + ld(s, e));
        } else {
#pragma omp simd
          for (std::int64_t e = 0; e < Dh; ++e) st(d, e, ld(s, e));
        }
      }
}

// heads_copy between tensors: rows [B, L, W] (heads from column `col`) and heads of shape `hs` [B,
// n, L, Dh]; to_heads: src is the rows, dst the heads; else the reverse.
void copy_heads(const char* op, const Tensor& src, Tensor& dst, const ablate::Shape& hs, std::int64_t W, std::int64_t col,
                bool to_heads, bool acc, int threads) {
  with_floats(op, std::tie(src, dst),
              [&](const auto* s, auto* d) { heads_copy(d, s, hs[0], hs[2], hs[1], hs[3], W, col, to_heads, acc, threads); });
}

}  // namespace

// ------------------------------------------------------------------------------------------
// attention: out[B, H, T, Dh] = dropout(softmax(mask(scale q·k^T + bias))) · v — forward and backward
// (k/v [B, Hkv, S, Dh]: grouped-query attention batches each group of query heads against its k/v head)

namespace {

struct AttDims {
  std::int64_t B, H, T, S, Dh;
  std::int64_t Hkv;  // k/v heads: the G = H / Hkv query heads of a group are adjacent in q, so each
                     // group is one [G*T, Dh] block against one k/v head (no repeated k/v)
};

// The sizes of q [B, H, T, Dh] and k [B, Hkv, S, Dh], or packed (checked by ablate::contract).
AttDims attention_dims(const Tensor& q, const Tensor& k, const ablate::AttentionParams& prm) {
  const ablate::AttentionShape a = ablate::attention_shape(q, k, prm);
  return AttDims{a.B, a.H, a.T, a.S, a.Dh, a.Hkv};
}

// Where one tensor's heads lie: row t of head h of batch item b starts at element base(b, h) + t ld.
struct HeadRows {
  std::int64_t batch, head, ld, col;
  std::int64_t base(std::int64_t b, std::int64_t h) const { return b * batch + h * head + col; }
};
// n heads of L rows in the split layout [B, n, L, Dh].
HeadRows split_rows(std::int64_t n, std::int64_t L, std::int64_t Dh) { return {n * L * Dh, L * Dh, Dh, 0}; }
// Heads of Dh at column `col` of x's rows [B, L, W] (AttentionParams::packed).
HeadRows packed_rows(const Tensor& x, std::int64_t col, std::int64_t Dh) {
  return {x.shape()[1] * x.shape()[2], Dh, x.shape()[2], col};
}

// The rows of q (and dq), k (dk), v (dv) and out (dout), split or packed.
struct AttLayout {
  HeadRows q, k, v, o;
  AttLayout(const Tensor& q_, const Tensor& k_, const Tensor& v_, const AttDims& d, const ablate::AttentionParams& prm) {
    const ablate::PackedHeads& l = prm.packed;
    if (l.packed()) {
      q = packed_rows(q_, l.q_col, d.Dh), k = packed_rows(k_, l.k_col, d.Dh), v = packed_rows(v_, l.v_col, d.Dh);
      o = {d.T * d.H * d.Dh, d.Dh, d.H * d.Dh, 0};  // [B, T, H Dh]
    } else {
      q = o = split_rows(d.H, d.T, d.Dh), k = v = split_rows(d.Hkv, d.S, d.Dh);
    }
  }
};

// Split copies of packed q, k, v (AttentionParams::packed), for the paths that take split heads,
// and the way back for their results.
struct PackedCopies {
  Tensor q, k, v;                  // [B, H, T, Dh], [B, Hkv, S, Dh] x 2
  ablate::AttentionParams params;  // the call's, split
  int threads;
  PackedCopies(OnednnBackend& be, const Tensor& q_, const Tensor& k_, const Tensor& v_, const AttDims& d,
               const ablate::AttentionParams& prm, int threads_)
      : q(be.empty({d.B, d.H, d.T, d.Dh}, q_.dtype())),
        k(be.empty({d.B, d.Hkv, d.S, d.Dh}, k_.dtype())),
        v(be.empty({d.B, d.Hkv, d.S, d.Dh}, v_.dtype())),
        params(prm),
        threads(threads_) {
    params.packed = {};
    split(q, q_, prm.packed.q_col);
    split(k, k_, prm.packed.k_col);
    split(v, v_, prm.packed.v_col);
  }
  // heads [B, n, L, Dh] = the heads of rows [B, L, W] from column `col`
  void split(Tensor& heads, const Tensor& rows, std::int64_t col) const {
    copy_heads("attention", rows, heads, heads.shape(), rows.shape()[2], col, true, false, threads);
  }
  // rows [B, L, W] from column `col` (GradStore) heads [B, n, L, Dh]; the other columns untouched
  void merge(Tensor& rows, const Tensor& heads, std::int64_t col, GradStore store) const {
    copy_heads("attention", heads, rows, heads.shape(), rows.shape()[2], col, false, store == GradStore::Add, threads);
  }
};

// Caps the n visible scaled logits of a row at softcap: x -> c tanh(x / c); `slope` (if not null)
// receives the derivative 1 - tanh(x / c)^2 of each.
inline void cap_logits(float* row, float* slope, std::int64_t n, float c) {
  const float inv = 1.0f / c;
  for (std::int64_t j = 0; j < n; ++j) {
    const float t = std::tanh(row[j] * inv);
    row[j] = c * t;
    if (slope) slope[j] = 1.0f - t * t;
  }
}

// Adds AttentionParams' bias and ALiBi slopes to the n visible logits of row r = (b, h, i).
inline void add_logit_bias(float* row, const AttDims& d, const ablate::AttentionParams& prm, std::int64_t r, std::int64_t n) {
  const std::int64_t h = (r / d.T) % d.H, i = r % d.T;
  if (prm.bias) {
    const float* bias = prm.bias->data<float>() + ((prm.bias->shape()[0] == 1 ? 0 : h) * d.T + i) * d.S;
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
  if (prm.slopes) {
    const float slope = prm.slopes->data<float>()[h];
    const std::int64_t pos = i + prm.query_offset;
    for (std::int64_t j = 0; j < n; ++j) row[j] -= slope * static_cast<float>(pos > j ? pos - j : j - pos);
  }
}

// Number of keys query i of batch item b may see: keys [0, visible) (masks are prefixes).
inline std::int64_t visible_keys(const AttDims& d, const ablate::AttentionParams& prm, const std::int32_t* lens, std::int64_t b,
                                 std::int64_t i) {
  std::int64_t n = d.S;
  if (lens) n = std::min<std::int64_t>(n, std::max<std::int32_t>(lens[b], 0));
  if (prm.causal) n = std::min<std::int64_t>(n, std::max<std::int64_t>(i + prm.query_offset + 1, 0));
  return n;
}

// The keys backward row r (of BH * T) attends to: 0 for a row the forward pass masked entirely
// (its lse is -inf).
inline std::int64_t backward_keys(const AttDims& d, const ablate::AttentionParams& prm, const std::int32_t* lens,
                                  const float* lse, std::int64_t r) {
  const std::int64_t b = r / (d.H * d.T), i = r % d.T;
  return lse[r] == -std::numeric_limits<float>::infinity() ? 0 : visible_keys(d, prm, lens, b, i);
}

// dbias[1 or H, T, S] += dS[BH, T, S] summed over B (and H): serial, since the rows of one bias row
// come from several threads.
void accumulate_bias_grad(Tensor& dbias, const float* dS, const AttDims& d) {
  float* db = dbias.data<float>();
  const bool shared = dbias.shape()[0] == 1;
  const std::int64_t T = d.T, S = d.S;
  for (std::int64_t r = 0; r < d.B * d.H * T; ++r) {
    const std::int64_t h = (r / T) % d.H, i = r % T;
    float* out_row = db + ((shared ? 0 : h) * T + i) * S;
    const float* g = dS + r * S;
#pragma omp simd
    for (std::int64_t j = 0; j < S; ++j) out_row[j] += g[j];
  }
}

// Forward row r of the scores [S], in place, n visible keys: cap, bias, softmax over j < n (zeros
// after; a row with no key is all zeros, lse -inf), a copy to `probs` (if any), then times the
// dropout scales `keep` (if any; keep_scales of the row's counters r S + j, j < n).
inline void softmax_row(float* row, float& lse, float* probs, std::int64_t r, std::int64_t n, const AttDims& d,
                        const ablate::AttentionParams& prm, const float* keep) {
  const std::int64_t S = d.S;
  if (n <= 0) {
    lse = -std::numeric_limits<float>::infinity();
    std::fill(row, row + S, 0.0f);
    if (probs) std::fill(probs, probs + S, 0.0f);
    return;
  }
  if (prm.softcap > 0.0f) cap_logits(row, nullptr, n, prm.softcap);
  add_logit_bias(row, d, prm, r, n);
  const float mx = row_max(row, n);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < n; ++j) {
    const float e = fast_exp(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  const float rs = 1.0f / sum;
  lse = mx + std::log(sum);
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) row[j] *= rs;
  std::fill(row + n, row + S, 0.0f);
  if (probs) std::memcpy(probs, row, static_cast<std::size_t>(S) * sizeof(float));
  if (keep) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) row[j] *= keep[j];
  }
}

// Backward: P's row r [S] recomputed in place from its scores and lse `l`, n keys (0 for a row the
// forward pass masked entirely): cap (its slopes into `slope` when not null), bias, exp(x - l) for
// j < n, zeros after.
inline void probs_row(float* row, float* slope, std::int64_t r, std::int64_t n, float l, const AttDims& d,
                      const ablate::AttentionParams& prm) {
  if (slope) cap_logits(row, slope, n, prm.softcap);
  add_logit_bias(row, d, prm, r, n);
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) row[j] = fast_exp(row[j] - l);
  std::fill(row + n, row + d.S, 0.0f);
}

// Backward: dS's row [S] in place from dP' (g), P, n keys: dP = dP' ⊙ keep (when `keep`), dS = P ⊙
// (dP - sum_j P_j dP_j), times the cap's slopes (when `slope`); zeros from n on.
inline void dscores_row(float* g, const float* P, const float* keep, const float* slope, std::int64_t n, std::int64_t S) {
  if (keep) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) g[j] *= keep[j];
  }
  float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
  for (std::int64_t j = 0; j < n; ++j) dot += P[j] * g[j];
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) g[j] = P[j] * (g[j] - dot);
  if (slope) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) g[j] *= slope[j];
  }
  std::fill(g + n, g + S, 0.0f);
}

// --- The fused path: one (batch, k/v head) tile at a time, each thread on its own tiles, with the
// tile's small GEMMs on small_gemm (AVX-512) so scores, P and dP stay in cache. For tiles of up to
// 128 x 128 scores (any T x S within it), rows of Dh <= 256, f32 or bf16 tensors, and no bias
// gradient (its rows are shared across the batch). Only on x86-64.
#if defined(__x86_64__)
bool fused_attention_fits(const AttDims& d, const ablate::AttentionParams& prm) {
  return cpu_has_avx512() && !prm.dbias && d.S <= 256 && d.T * d.S <= 128 * 128 && d.Dh <= 256;
}

// Whether the scores need nothing but the softmax (no cap, bias or ALiBi): tile_rows.hpp's rows.
inline bool plain_logits(const ablate::AttentionParams& prm) { return prm.softcap <= 0.0f && !prm.bias && !prm.slopes; }

// One thread's scratch for a tile, as offsets into its block of floats.
struct TileScratch {
  std::int64_t kT, vT, P, Pd, dP, slope, keep, u, q, k, v, dout, o, dk, dv, total;
  explicit TileScratch(const AttDims& d) {
    const std::int64_t TS = d.T * d.S, SD = d.S * d.Dh, TD = d.T * d.Dh;
    std::int64_t at = 0;
    const auto take = [&](std::int64_t n) {
      const std::int64_t o = at;
      at += (n + 15) / 16 * 16;  // 64-byte steps
      return o;
    };
    kT = take(SD), vT = take(SD), P = take(TS), Pd = take(TS), dP = take(TS), slope = take(TS), keep = take(TS),
    u = take(TS + 16);
    q = take(TD), k = take(SD), v = take(SD), dout = take(TD), o = take(TD), dk = take(SD), dv = take(SD);
    total = at;
  }
};

// A head's rows in f32: row i at p + i ld.
struct Rows {
  const float* p;
  std::int64_t ld;
};

// The n rows of Dh of one head of t from element `off`, `rs` apart, as f32: t's own memory, or
// widened into `buf` (rows Dh apart).
inline Rows tile_f32(const Tensor& t, std::int64_t off, std::int64_t rs, std::int64_t n, std::int64_t Dh, float* buf) {
  if (t.dtype() == DType::F32 && rs == Dh) return {t.data<float>() + off, rs};
  with_float("attention", t, [&](const auto* p) {
    for (std::int64_t i = 0; i < n; ++i) widen_row(buf + i * Dh, p + off + i * rs, Dh);
  });
  return {buf, Dh};
}

// The n rows of Dh of one head of t from element `off`, `rs` apart, (+)= src's rows (Dh apart), t
// f32 or bf16 (a tile computed in f32 scratch).
inline void tile_store(Tensor& t, std::int64_t off, std::int64_t rs, const float* src, std::int64_t n, std::int64_t Dh,
                       bool acc) {
  with_float("attention", t, [&](auto* p) {
    for (std::int64_t i = 0; i < n; ++i) {
      auto* dst = p + off + i * rs;
      const float* row = src + i * Dh;
      if (acc) {
#pragma omp simd
        for (std::int64_t e = 0; e < Dh; ++e) st(dst, e, ld(dst, e) + row[e]);
      } else {
#pragma omp simd
        for (std::int64_t e = 0; e < Dh; ++e) st(dst, e, row[e]);
      }
    }
  });
}

// The dropout scales of query head bh's whole [T, S] tile (row i's keys at keep + i S): its
// counters (bh T + i) S + j are one contiguous range, so one Philox call draws them all. `u`: T S + 16.
inline const float* tile_keep_scales(float* keep, float* u, std::int64_t bh, const AttDims& d,
                                     const ablate::AttentionParams& prm) {
  const std::int64_t TS = d.T * d.S;
  keep_scales(keep, u, static_cast<std::uint64_t>(bh * TS), TS, prm.dropout, prm.rng);
  return keep;
}

// Row blocks of the tile's T query rows: f(i0, m, n) for rows i0 .. i0 + m - 1, n = the keys the
// block's last row sees (masks are prefixes that never shrink down the rows, so no row of the
// block sees more).
template <class F>
inline void row_blocks(const AttDims& d, const ablate::AttentionParams& prm, const std::int32_t* lens, std::int64_t b, F&& f) {
  for (std::int64_t i0 = 0; i0 < d.T; i0 += 8) {
    const std::int64_t m = std::min<std::int64_t>(8, d.T - i0);
    f(i0, m, std::max<std::int64_t>(visible_keys(d, prm, lens, b, i0 + m - 1), 0));
  }
}

// The forward pass, tile by tile (same results as the unfused path up to the GEMMs' summation order),
// heads split or packed as `at` says.
void fused_attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k, const Tensor& v,
                             const ablate::AttentionParams& prm, const AttDims& d, const AttLayout& at, float* work,
                             int threads) {
  const std::int64_t T = d.T, S = d.S, Dh = d.Dh, G = d.H / d.Hkv;
  const TileScratch z(d);
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  float* lse_p = lse.data<float>();
  float* pr = probs ? probs->data<float>() : nullptr;
  const bool f32_out = out.dtype() == DType::F32, drop = prm.dropout > 0.0f, plain = plain_logits(prm);
#pragma omp parallel for num_threads(team_size({d.B * d.H, T, S, Dh}, threads)) schedule(static)
  for (std::int64_t bg = 0; bg < d.B * d.Hkv; ++bg) {
    float* w = work + static_cast<std::int64_t>(omp_get_thread_num()) * z.total;
    const std::int64_t b = bg / d.Hkv, j = bg % d.Hkv;
    const Rows kp = tile_f32(k, at.k.base(b, j), at.k.ld, S, Dh, w + z.k);
    const Rows vp = tile_f32(v, at.v.base(b, j), at.v.ld, S, Dh, w + z.v);
    transpose_small(w + z.kT, kp.p, S, Dh, kp.ld);
    for (std::int64_t hh = 0; hh < G; ++hh) {
      const std::int64_t h = j * G + hh, bh = b * d.H + h;  // query head of the group
      const Rows qp = tile_f32(q, at.q.base(b, h), at.q.ld, T, Dh, w + z.q);
      float* P = w + z.P;
      const std::int64_t off = at.o.base(b, h), ldo = f32_out ? at.o.ld : Dh;
      float* o = f32_out ? out.data<float>() + off : w + z.o;
      const float* keep = drop ? tile_keep_scales(w + z.keep, w + z.u, bh, d, prm) : nullptr;
      row_blocks(d, prm, lens, b, [&](std::int64_t i0, std::int64_t m, std::int64_t n) {
        // scores[i0 : i0 + m, :n] = scale q · k^T; then each row's softmax and dropout
        small_gemm(m, n, Dh, qp.p + i0 * qp.ld, qp.ld, 1, w + z.kT, S, P + i0 * S, S, prm.scale, false);
        for (std::int64_t i = i0; i < i0 + m; ++i) {
          const std::int64_t r = bh * T + i, nk = visible_keys(d, prm, lens, b, i);
          float* probs_r = pr ? pr + r * S : nullptr;
          const float* keep_r = keep ? keep + i * S : nullptr;
          if (plain && nk > 0)
            softmax_row16(P + i * S, lse_p[r], probs_r, nk, S, keep_r);
          else
            softmax_row(P + i * S, lse_p[r], probs_r, r, nk, d, prm, keep_r);
        }
        // out[i0 : i0 + m] = P'[rows, :n] · v[:n]  (P' is 0 past each row's keys)
        small_gemm(m, Dh, n, P + i0 * S, S, 1, vp.p, vp.ld, o + i0 * ldo, ldo, 1.0f, false);
      });
      if (!f32_out) tile_store(out, off, at.o.ld, o, T, Dh, false);
    }
  }
}

// The backward pass, tile by tile: P (and P') recomputed, dv, dP, dS, dq, dk; a group's heads
// summed into its k/v head's dk, dv in order (one thread owns the tile). The first product into a
// tile's gradient adds to it only where it is the tensor's own (f32) Add gradient: an f32 scratch
// tile or a Write gradient takes it as it is, the next heads add. dq, dk, dv have q's, k's, v's rows.
void fused_attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& lse, const Tensor& q,
                              const Tensor& k, const Tensor& v, const ablate::AttentionParams& prm, const AttDims& d,
                              const AttLayout& at, float* work, int threads) {
  const std::int64_t T = d.T, S = d.S, Dh = d.Dh, G = d.H / d.Hkv;
  const TileScratch z(d);
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  const float* lse_p = lse.data<float>();
  const bool drop = prm.dropout > 0.0f, grads = dq || dk, plain = plain_logits(prm);
  const bool add_dq = prm.dq_store == GradStore::Add, add_dk = prm.dk_store == GradStore::Add,
             add_dv = prm.dv_store == GradStore::Add;
  const auto f32 = [](const Tensor* t) { return t && t->dtype() == DType::F32; };
  // Whether a product adds to its destination: not the first into a scratch tile or a Write gradient.
  const auto adds = [&](bool first, bool add, const Tensor* t) { return !first || (add && f32(t)); };
#pragma omp parallel for num_threads(team_size({d.B * d.H, T, S, Dh}, threads)) schedule(static)
  for (std::int64_t bg = 0; bg < d.B * d.Hkv; ++bg) {
    float* w = work + static_cast<std::int64_t>(omp_get_thread_num()) * z.total;
    const std::int64_t b = bg / d.Hkv, j = bg % d.Hkv, koff = at.k.base(b, j), voff = at.v.base(b, j);
    const Rows kp = tile_f32(k, koff, at.k.ld, S, Dh, w + z.k);
    const Rows vp = tile_f32(v, voff, at.v.ld, S, Dh, w + z.v);
    transpose_small(w + z.kT, kp.p, S, Dh, kp.ld);
    if (grads) transpose_small(w + z.vT, vp.p, S, Dh, vp.ld);
    // dk, dv of the tile: the tensors' own rows (f32) or f32 sums stored once at the end
    float* dkp = f32(dk) ? dk->data<float>() + koff : w + z.dk;
    float* dvp = f32(dv) ? dv->data<float>() + voff : w + z.dv;
    const std::int64_t ldk = f32(dk) ? at.k.ld : Dh, ldv = f32(dv) ? at.v.ld : Dh;
    for (std::int64_t hh = 0; hh < G; ++hh) {
      const std::int64_t h = j * G + hh, bh = b * d.H + h, qoff = at.q.base(b, h);
      const Rows qp = tile_f32(q, qoff, at.q.ld, T, Dh, w + z.q);
      const Rows dop = tile_f32(dout, at.o.base(b, h), at.o.ld, T, Dh, w + z.dout);
      float *P = w + z.P, *Pd = drop ? w + z.Pd : P, *dP = w + z.dP, *slope = prm.softcap > 0.0f ? w + z.slope : nullptr;
      const float* keep = drop ? tile_keep_scales(w + z.keep, w + z.u, bh, d, prm) : nullptr;
      // P[T, S] = softmax rows from the scores and lse; P' = P ⊙ keep
      row_blocks(d, prm, lens, b, [&](std::int64_t i0, std::int64_t m, std::int64_t n) {
        small_gemm(m, n, Dh, qp.p + i0 * qp.ld, qp.ld, 1, w + z.kT, S, P + i0 * S, S, prm.scale, false);
        for (std::int64_t i = i0; i < i0 + m; ++i) {
          const std::int64_t r = bh * T + i, nk = backward_keys(d, prm, lens, lse_p, r);
          if (plain)
            probs_row16(P + i * S, nk, S, lse_p[r]);
          else
            probs_row(P + i * S, slope ? slope + i * S : nullptr, r, nk, lse_p[r], d, prm);
          if (drop) product_row16(Pd + i * S, keep + i * S, P + i * S, nk, S);
        }
      });
      // dv[S, Dh] += P'^T[S, T] · dout[T, Dh]
      const bool first = hh == 0;  // of the group
      if (dv) small_gemm(S, Dh, T, Pd, 1, S, dop.p, dop.ld, dvp, ldv, 1.0f, adds(first, add_dv, dv));
      if (!grads) continue;
      row_blocks(d, prm, lens, b, [&](std::int64_t i0, std::int64_t m, std::int64_t n) {
        // dP'[rows, :n] = dout · v^T; dS in place
        small_gemm(m, n, Dh, dop.p + i0 * dop.ld, dop.ld, 1, w + z.vT, S, dP + i0 * S, S, 1.0f, false);
        for (std::int64_t i = i0; i < i0 + m; ++i) {
          const std::int64_t nk = backward_keys(d, prm, lens, lse_p, bh * T + i);
          if (slope)
            dscores_row(dP + i * S, P + i * S, keep ? keep + i * S : nullptr, slope + i * S, nk, S);
          else
            dscores_row16(dP + i * S, P + i * S, keep ? keep + i * S : nullptr, nk, S);
        }
      });
      // dq[T, Dh] += scale dS · k;  dk[S, Dh] += scale dS^T · q
      if (dq) {
        float* dqp = f32(dq) ? dq->data<float>() + qoff : w + z.o;
        const std::int64_t ldq = f32(dq) ? at.q.ld : Dh;
        row_blocks(d, prm, lens, b, [&](std::int64_t i0, std::int64_t m, std::int64_t n) {
          small_gemm(m, Dh, n, dP + i0 * S, S, 1, kp.p, kp.ld, dqp + i0 * ldq, ldq, prm.scale, adds(true, add_dq, dq));
        });
        if (!f32(dq)) tile_store(*dq, qoff, at.q.ld, dqp, T, Dh, add_dq);
      }
      if (dk) small_gemm(S, Dh, T, dP, 1, S, qp.p, qp.ld, dkp, ldk, prm.scale, adds(first, add_dk, dk));
    }
    if (dk && !f32(dk)) tile_store(*dk, koff, at.k.ld, dkp, S, Dh, add_dk);
    if (dv && !f32(dv)) tile_store(*dv, voff, at.v.ld, dvp, S, Dh, add_dv);
  }
}
#endif

}  // namespace

void OnednnBackend::do_attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                         const Tensor& v, const ablate::AttentionParams& prm) {
  const char* op = "attention_forward";
  const AttDims d = attention_dims(q, k, prm);
  const std::int64_t BH = d.B * d.H, T = d.T, S = d.S, Dh = d.Dh;
  const std::int64_t BG = d.B * d.Hkv, GT = d.H / d.Hkv * T;  // groups, and a group's query rows
  if (BH * T == 0) return;
#if defined(__x86_64__)
  if (fused_attention_fits(d, prm)) {
    fused_attention_forward(out, lse, probs, q, k, v, prm, d, AttLayout(q, k, v, d, prm),
                            scratch_f32(kAttS, threads_ * TileScratch(d).total), threads_);
    return;
  }
#endif
  if (prm.packed.packed()) {  // the batched GEMMs take split heads: copied there, and the output back
    const PackedCopies c(*this, q, k, v, d, prm, threads_);
    Tensor o = empty({d.B, d.H, T, Dh}, out.dtype());
    do_attention_forward(o, lse, probs, c.q, c.k, c.v, c.params);
    c.merge(out, o, 0, GradStore::Write);
    return;
  }
  // scores[BG, G*T, S] (= [BH, T, S]) = scale q[BG, G*T, Dh] · k^T[BG, Dh, S]
  float* sc = scratch_f32(kAttS, BH * T * S);
  gemm(sc, DType::F32, view_of(q, BG, GT, Dh, false), view_of(k, BG, Dh, S, true), prm.scale, false, nullptr, Activation::None,
       op);
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  float* lse_p = lse.data<float>();
  float* pr = probs ? probs->data<float>() : nullptr;
  const std::int64_t per_thread = 2 * S + 16;  // keep scales [S] + Philox uniforms [S + 16]
  float* mask = prm.dropout > 0.0f ? scratch_f32(kAttP, static_cast<std::int64_t>(threads_) * per_thread) : nullptr;
  // One fused pass per row: mask, max, exp, sum, lse, probs, dropout (in place in sc).
#pragma omp parallel for num_threads(team_size({BH, T, S}, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    const std::int64_t n = visible_keys(d, prm, lens, r / (d.H * T), r % T);
    float* keep = mask ? mask + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread : nullptr;
    if (keep) keep_scales(keep, keep + S, static_cast<std::uint64_t>(r * S), n, prm.dropout, prm.rng);
    softmax_row(sc + r * S, lse_p[r], pr ? pr + r * S : nullptr, r, n, d, prm, keep);
  }
  // out[BG, G*T, Dh] = P'[BG, G*T, S] · v[BG, S, Dh]
  gemm(out.raw(), out.dtype(), MatView{sc, DType::F32, BG, GT, S, false}, view_of(v, BG, S, Dh, false), 1.0f, false, nullptr,
       Activation::None, op);
}

void OnednnBackend::do_attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout,
                                          const Tensor& /*out: unused, P comes from lse*/, const Tensor& lse, const Tensor& q,
                                          const Tensor& k, const Tensor& v, const ablate::AttentionParams& prm) {
  const char* op = "attention_backward";
  const AttDims d = attention_dims(q, k, prm);
  if (!dq && !dk && !dv && !prm.dbias) return;
  const std::int64_t BH = d.B * d.H, T = d.T, S = d.S, Dh = d.Dh;
  const std::int64_t BG = d.B * d.Hkv, GT = d.H / d.Hkv * T;  // groups, and a group's query rows
  if (BH * T * S == 0) return;
#if defined(__x86_64__)
  if (fused_attention_fits(d, prm)) {
    fused_attention_backward(dq, dk, dv, dout, lse, q, k, v, prm, d, AttLayout(q, k, v, d, prm),
                             scratch_f32(kAttS, threads_ * TileScratch(d).total), threads_);
    return;
  }
#endif
  if (prm.packed.packed()) {  // split copies in, split gradients written, then stored into the packed rows
    const PackedCopies c(*this, q, k, v, d, prm, threads_);
    Tensor g = empty({d.B, d.H, T, Dh}, dout.dtype());
    c.split(g, dout, 0);
    const auto grad = [&](const Tensor* x, const Tensor& like) { return x ? empty(like.shape(), x->dtype()) : Tensor(); };
    Tensor gq = grad(dq, c.q), gk = grad(dk, c.k), gv = grad(dv, c.v);
    ablate::AttentionParams sp = c.params;
    sp.dq_store = sp.dk_store = sp.dv_store = GradStore::Write;
    do_attention_backward(dq ? &gq : nullptr, dk ? &gk : nullptr, dv ? &gv : nullptr, g, g, lse, c.q, c.k, c.v, sp);
    const ablate::PackedHeads& l = prm.packed;
    if (dq) c.merge(*dq, gq, l.q_col, prm.dq_store);  // in turn: dq, dk, dv may be one tensor
    if (dk) c.merge(*dk, gk, l.k_col, prm.dk_store);
    if (dv) c.merge(*dv, gv, l.v_col, prm.dv_store);
    return;
  }
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  const float* lse_p = lse.data<float>();
  const float p = prm.dropout;
  const bool drop = p > 0.0f;

  // P[BH, T, S] recomputed from the scores and lse; P' = P ⊙ keep / (1 - p).
  float* P = scratch_f32(kAttS, BH * T * S);
  float* Pd = drop ? scratch_f32(kAttP, BH * T * S) : P;
  const std::int64_t per_thread = 2 * S + 16;  // keep scales [S] + Philox uniforms [S + 16]
  float* tbuf = drop ? scratch_f32(kPartial, static_cast<std::int64_t>(threads_) * per_thread) : nullptr;
  gemm(P, DType::F32, view_of(q, BG, GT, Dh, false), view_of(k, BG, Dh, S, true), prm.scale, false, nullptr, Activation::None,
       op);
  float* cap_slope = prm.softcap > 0.0f ? scratch_f32(kAttC, BH * T * S) : nullptr;  // d(capped)/d(scaled logit)
#pragma omp parallel for num_threads(team_size({BH, T, S}, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    const std::int64_t n = backward_keys(d, prm, lens, lse_p, r);
    float* row = P + r * S;
    probs_row(row, cap_slope ? cap_slope + r * S : nullptr, r, n, lse_p[r], d, prm);
    if (drop) {
      float* m = Pd + r * S;
      keep_scales(m, tbuf + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread + S, static_cast<std::uint64_t>(r * S),
                  n, p, prm.rng);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) m[j] *= row[j];
      std::fill(m + n, m + S, 0.0f);
    }
  }
  // dv[BG, S, Dh] += P'^T[BG, S, G*T] · dout[BG, G*T, Dh]
  const auto add = [](GradStore s) { return s == GradStore::Add; };
  if (dv)
    gemm(dv->raw(), dv->dtype(), MatView{Pd, DType::F32, BG, S, GT, true}, view_of(dout, BG, GT, Dh, false), 1.0f,
         add(prm.dv_store), nullptr, Activation::None, op);
  if (!dq && !dk && !prm.dbias) return;
  // dP'[BG, G*T, S] = dout[BG, G*T, Dh] · v^T[BG, Dh, S]
  float* dP = scratch_f32(kAttD, BH * T * S);
  gemm(dP, DType::F32, view_of(dout, BG, GT, Dh, false), view_of(v, BG, Dh, S, true), 1.0f, false, nullptr, Activation::None, op);
  // dS = P ⊙ (dP - sum_j P_j dP_j), with dP = dP' ⊙ keep / (1 - p)   (in place in dP)
#pragma omp parallel for num_threads(team_size({BH, T, S}, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    const std::int64_t n = backward_keys(d, prm, lens, lse_p, r);
    float* keep = nullptr;
    if (drop) {
      keep = tbuf + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread;
      keep_scales(keep, keep + S, static_cast<std::uint64_t>(r * S), n, p, prm.rng);
    }
    dscores_row(dP + r * S, P + r * S, keep, nullptr, n, S);  // the cap's slopes after the bias gradient
  }
  if (prm.dbias) accumulate_bias_grad(*prm.dbias, dP, d);
  // Through the softcap: dS ⊙ (1 - tanh^2) for q and k (the bias was added after the cap). Rows past
  // n have dS = 0 (P = 0 there), so their slope values do not matter.
  if (cap_slope && (dq || dk)) {
#pragma omp parallel for num_threads(team_size({BH, T, S}, threads_)) schedule(static)
    for (std::int64_t r = 0; r < BH * T; ++r) {
      float* g = dP + r * S;
      const float* c = cap_slope + r * S;
      const std::int64_t n = backward_keys(d, prm, lens, lse_p, r);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) g[j] *= c[j];
    }
  }
  // dq[BG, G*T, Dh] += scale dS[BG, G*T, S] · k[BG, S, Dh]
  if (dq)
    gemm(dq->raw(), dq->dtype(), MatView{dP, DType::F32, BG, GT, S, false}, view_of(k, BG, S, Dh, false), prm.scale,
         add(prm.dq_store), nullptr, Activation::None, op);
  // dk[BG, S, Dh] += scale dS^T[BG, S, G*T] · q[BG, G*T, Dh]  (the group's heads summed)
  if (dk)
    gemm(dk->raw(), dk->dtype(), MatView{dP, DType::F32, BG, S, GT, true}, view_of(q, BG, GT, Dh, false), prm.scale,
         add(prm.dk_store), nullptr, Activation::None, op);
}

void OnednnBackend::do_split_heads_forward(Tensor& y, const Tensor& x, int /*parts: x's width*/, int part) {
  const ablate::Shape& hs = y.shape();
  set_threads();
  copy_heads("split_heads_forward", x, y, hs, x.shape()[2], part * hs[1] * hs[3], true, false, threads_);
}

void OnednnBackend::do_split_heads_backward(Tensor& dx, const Tensor& dy, int /*parts: dx's width*/, int part) {
  const ablate::Shape& hs = dy.shape();
  set_threads();
  copy_heads("split_heads_backward", dy, dx, hs, dx.shape()[2], part * hs[1] * hs[3], false, true, threads_);
}

void OnednnBackend::do_merge_heads_forward(Tensor& y, const Tensor& x) {
  set_threads();
  copy_heads("merge_heads_forward", x, y, x.shape(), y.shape()[2], 0, false, false, threads_);
}

void OnednnBackend::do_merge_heads_backward(Tensor& dx, const Tensor& dy) {
  set_threads();
  copy_heads("merge_heads_backward", dy, dx, dx.shape(), dy.shape()[2], 0, true, true, threads_);
}

// ------------------------------------------------------------------------------------------
// KV cache (incremental decoding; no backward): dst[B, H, S, Dh] rows offset .. offset+T-1 of
// every (b, h) = src[B, H, T, Dh]. Per (b, h) the slice is one contiguous block of T*Dh elements
// in both tensors: one memcpy each, over (b, h) in parallel above the grain. Other rows untouched.

void OnednnBackend::do_write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  const std::int64_t B = dst.shape()[0], H = dst.shape()[1], S = dst.shape()[2], Dh = dst.shape()[3];
  const std::int64_t T = src.shape()[2];
  const std::size_t es = ablate::dtype_size(dst.dtype());
  const std::int64_t BH = B * H, block = T * Dh;
  auto* d = static_cast<unsigned char*>(dst.raw());
  const auto* s = static_cast<const unsigned char*>(src.raw());
  if (block == 0 || BH == 0 || d == s) return;  // d == s: T == S, offset 0, the same storage
  set_threads();
#pragma omp parallel for num_threads(team_size({BH, block}, threads_)) schedule(static)
  for (std::int64_t i = 0; i < BH; ++i)
    std::memcpy(d + static_cast<std::size_t>((i * S + offset) * Dh) * es, s + static_cast<std::size_t>(i * block) * es,
                static_cast<std::size_t>(block) * es);
}

}  // namespace backend_onednn
