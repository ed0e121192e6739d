// backend/onednn: the ops oneDNN has no fitting primitive for, as OpenMP + SIMD C++: norms,
// elementwise ops, dropout (Philox, bit-identical masks to every backend), embedding, head
// split/merge, the KV-cache time-slice write, fused cross-entropy, Adam, sum of squares and
// casts. Forward and backward side by side; reductions run in a fixed order so results are
// bit-identical run to run.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

using ablate::Activation;

namespace {

// Calls f(i0, len, m) over fixed chunks [i0, i0 + len) of [0, n), 1024 elements each, split
// across threads, with m[j] = dropout_keep(key, i0 + j, p) ? inv : 0 (Philox 8 blocks at a time).
template <class F>
void for_each_keep(std::int64_t n, float p, float inv, const ablate::RngKey& key, int threads, F&& f) {
  constexpr std::int64_t kChunk = 1024;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel num_threads(team_size(n, threads))
  {
    alignas(64) float m[kChunk], u[kChunk + 16];
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t i0 = c * kChunk, len = std::min(kChunk, n - i0);
      keep_scales(m, u, static_cast<std::uint64_t>(i0), len, p, inv, key);
      f(i0, len, m);
    }
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// layer norm: y[N, D] = (x - mean) * rstd * gamma[D] + beta[D]; mean[N], rstd[N] saved (F32)

void OnednnBackend::layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                       const Tensor& beta, float eps) {
  ablate::contract::layer_norm_forward(y, mean, rstd, x, gamma, beta);
  const char* op = "layer_norm_forward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* bt = as_f32(beta.raw(), beta.dtype(), D, kVecB);
  float* mp = mean.data<float>();
  float* rp = rstd.data<float>();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
      for (std::int64_t r = 0; r < N; ++r) {
        const auto* xr = xp + r * D;
        auto* yr = yp + r * D;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (std::int64_t j = 0; j < D; ++j) s += ld(xr, j);
        const float mu = s / static_cast<float>(D);
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (std::int64_t j = 0; j < D; ++j) {
          const float c = ld(xr, j) - mu;
          v += c * c;
        }
        const float rs = 1.0f / std::sqrt(v / static_cast<float>(D) + eps);
        mp[r] = mu;
        rp[r] = rs;
#pragma omp simd
        for (std::int64_t j = 0; j < D; ++j) st(yr, j, (ld(xr, j) - mu) * rs * g[j] + bt[j]);
      }
    });
  });
}

// dx += rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)), dxh = dy * gamma, xh = (x - mean) * rstd;
// dgamma += sum_rows(dy * xh); dbeta += sum_rows(dy).
void OnednnBackend::layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                        const Tensor& mean, const Tensor& rstd, const Tensor& gamma) {
  ablate::contract::layer_norm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
  const char* op = "layer_norm_backward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* mp = mean.data<float>();
  const float* rp = rstd.data<float>();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, dy, [&](const auto* dyp) {
      if (dx) {
        with_float(op, *dx, [&](auto* dxp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
          for (std::int64_t r = 0; r < N; ++r) {
            const auto* xr = xp + r * D;
            const auto* dr = dyp + r * D;
            auto* o = dxp + r * D;
            const float mu = mp[r], rs = rp[r];
            float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
            for (std::int64_t j = 0; j < D; ++j) {
              const float dxh = ld(dr, j) * g[j];
              s1 += dxh;
              s2 += dxh * (ld(xr, j) - mu) * rs;
            }
            const float m1 = s1 / static_cast<float>(D), m2 = s2 / static_cast<float>(D);
#pragma omp simd
            for (std::int64_t j = 0; j < D; ++j) {
              const float xh = (ld(xr, j) - mu) * rs;
              st(o, j, ld(o, j) + rs * (ld(dr, j) * g[j] - m1 - xh * m2));
            }
          }
        });
      }
      if (dgamma || dbeta) {
        float* sums = scratch_f32(kSums, 2 * D);  // [dgamma | dbeta]
        float* partial = scratch_f32(kPartial, 64 * 2 * D);
        chunked_column_sum(sums, partial, N, 2 * D, threads_, [&](std::int64_t r, float* acc) {
          const auto* xr = xp + r * D;
          const auto* dr = dyp + r * D;
          const float mu = mp[r], rs = rp[r];
#pragma omp simd
          for (std::int64_t j = 0; j < D; ++j) {
            const float d = ld(dr, j);
            acc[j] += d * (ld(xr, j) - mu) * rs;
            acc[D + j] += d;
          }
        });
        if (dgamma) with_float(op, *dgamma, [&](auto* p) {
#pragma omp simd
            for (std::int64_t j = 0; j < D; ++j) st(p, j, ld(p, j) + sums[j]);
          });
        if (dbeta) with_float(op, *dbeta, [&](auto* p) {
#pragma omp simd
            for (std::int64_t j = 0; j < D; ++j) st(p, j, ld(p, j) + sums[D + j]);
          });
      }
    });
  });
}

// ------------------------------------------------------------------------------------------
// RMS norm: y[N, D] = x * rstd * gamma[D], rstd[N] = 1/sqrt(mean(x^2) + eps)

void OnednnBackend::rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  ablate::contract::rms_norm_forward(y, rstd, x, gamma);
  const char* op = "rms_norm_forward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  float* rp = rstd.data<float>();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
      for (std::int64_t r = 0; r < N; ++r) {
        const auto* xr = xp + r * D;
        auto* yr = yp + r * D;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (std::int64_t j = 0; j < D; ++j) s += ld(xr, j) * ld(xr, j);
        const float rs = 1.0f / std::sqrt(s / static_cast<float>(D) + eps);
        rp[r] = rs;
#pragma omp simd
        for (std::int64_t j = 0; j < D; ++j) st(yr, j, ld(xr, j) * rs * g[j]);
      }
    });
  });
}

// dx += rstd * (dxh - xh * mean(dxh * xh)), dxh = dy * gamma, xh = x * rstd; dgamma += sum_rows(dy * xh).
void OnednnBackend::rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                      const Tensor& gamma) {
  ablate::contract::rms_norm_backward(dx, dgamma, dy, x, rstd, gamma);
  const char* op = "rms_norm_backward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* rp = rstd.data<float>();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, dy, [&](const auto* dyp) {
      if (dx) {
        with_float(op, *dx, [&](auto* dxp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
          for (std::int64_t r = 0; r < N; ++r) {
            const auto* xr = xp + r * D;
            const auto* dr = dyp + r * D;
            auto* o = dxp + r * D;
            const float rs = rp[r];
            float s2 = 0.0f;
#pragma omp simd reduction(+ : s2)
            for (std::int64_t j = 0; j < D; ++j) s2 += ld(dr, j) * g[j] * ld(xr, j) * rs;
            const float m2 = s2 / static_cast<float>(D);
#pragma omp simd
            for (std::int64_t j = 0; j < D; ++j)
              st(o, j, ld(o, j) + rs * (ld(dr, j) * g[j] - ld(xr, j) * rs * m2));
          }
        });
      }
      if (dgamma) {
        float* sums = scratch_f32(kSums, D);
        float* partial = scratch_f32(kPartial, 64 * D);
        chunked_column_sum(sums, partial, N, D, threads_, [&](std::int64_t r, float* acc) {
          const auto* xr = xp + r * D;
          const auto* dr = dyp + r * D;
          const float rs = rp[r];
#pragma omp simd
          for (std::int64_t j = 0; j < D; ++j) acc[j] += ld(dr, j) * ld(xr, j) * rs;
        });
        with_float(op, *dgamma, [&](auto* p) {
#pragma omp simd
          for (std::int64_t j = 0; j < D; ++j) st(p, j, ld(p, j) + sums[j]);
        });
      }
    });
  });
}

// ------------------------------------------------------------------------------------------
// elementwise: activation, add (with repeat-broadcast), mul, axpy

void OnednnBackend::activation_forward(Tensor& y, const Tensor& x, Activation act) {
  ablate::contract::activation_forward(y, x);
  const char* op = "activation_forward";
  const std::int64_t n = x.numel();
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
      with_act(act, [&](auto tag) {
        constexpr Activation A = decltype(tag)::value;
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
        for (std::int64_t i = 0; i < n; ++i) st(yp, i, act_fwd<A>(ld(xp, i)));
      });
    });
  });
}

void OnednnBackend::activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) {
  ablate::contract::activation_backward(dx, dy, x);
  const char* op = "activation_backward";
  const std::int64_t n = x.numel();
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, dy, [&](const auto* dyp) {
      with_float(op, dx, [&](auto* dxp) {
        with_act(act, [&](auto tag) {
          constexpr Activation A = decltype(tag)::value;
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
          for (std::int64_t i = 0; i < n; ++i) st(dxp, i, ld(dxp, i) + ld(dyp, i) * act_bwd<A>(ld(xp, i)));
        });
      });
    });
  });
}

void OnednnBackend::add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  ablate::contract::add_forward(y, a, b);
  const char* op = "add_forward";
  const std::int64_t n = a.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  with_float(op, a, [&](const auto* ap) {
    with_float(op, b, [&](const auto* bp) {
      with_float(op, y, [&](auto* yp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static) collapse(2)
        for (std::int64_t r = 0; r < reps; ++r)
          for (std::int64_t j = 0; j < nb; ++j) st(yp, r * nb + j, alpha * ld(ap, r * nb + j) + beta * ld(bp, j));
      });
    });
  });
}

// da += alpha * dy; db += beta * (dy summed over the repeats).
void OnednnBackend::add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  ablate::contract::add_backward(da, db, dy);
  const char* op = "add_backward";
  const std::int64_t n = dy.numel();
  set_threads();
  if (da) {
    axpy(*da, dy, alpha);
  }
  if (db) {
    const std::int64_t nb = db->numel();
    if (n == 0) return;
    const std::int64_t reps = n / nb;
    if (reps == 1) {
      axpy(*db, dy, beta);
      return;
    }
    float* sums = scratch_f32(kSums, nb);
    float* partial = scratch_f32(kPartial, std::min<std::int64_t>(reps, 64) * nb);
    with_float(op, dy, [&](const auto* dyp) {
      chunked_column_sum(sums, partial, reps, nb, threads_, [&](std::int64_t r, float* acc) {
        const auto* row = dyp + r * nb;
#pragma omp simd
        for (std::int64_t j = 0; j < nb; ++j) acc[j] += ld(row, j);
      });
    });
    with_float(op, *db, [&](auto* p) {
#pragma omp parallel for simd num_threads(team_size(nb, threads_)) schedule(static)
      for (std::int64_t j = 0; j < nb; ++j) st(p, j, ld(p, j) + beta * sums[j]);
    });
  }
}

// y = a * b, b repeating over a's leading elements (reps of nb): a gate per channel or scalar.
void OnednnBackend::mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  ablate::contract::mul_forward(y, a, b);
  const char* op = "mul_forward";
  const std::int64_t n = a.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  with_float(op, a, [&](const auto* ap) {
    with_float(op, b, [&](const auto* bp) {
      with_float(op, y, [&](auto* yp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static) collapse(2)
        for (std::int64_t r = 0; r < reps; ++r)
          for (std::int64_t j = 0; j < nb; ++j) st(yp, r * nb + j, ld(ap, r * nb + j) * ld(bp, j));
      });
    });
  });
}

// da += dy * b (repeated); db += (dy * a) summed over the repeats.
void OnednnBackend::mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  ablate::contract::mul_backward(da, db, dy, a, b);
  const char* op = "mul_backward";
  const std::int64_t n = dy.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  if (da) {
    with_float(op, dy, [&](const auto* dyp) {
      with_float(op, b, [&](const auto* bp) {
        with_float(op, *da, [&](auto* dp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static) collapse(2)
          for (std::int64_t r = 0; r < reps; ++r)
            for (std::int64_t j = 0; j < nb; ++j) st(dp, r * nb + j, ld(dp, r * nb + j) + ld(dyp, r * nb + j) * ld(bp, j));
        });
      });
    });
  }
  if (!db) return;
  if (reps == 1) {  // same shapes: elementwise
    with_float(op, dy, [&](const auto* dyp) {
      with_float(op, a, [&](const auto* ap) {
        with_float(op, *db, [&](auto* dp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
          for (std::int64_t i = 0; i < n; ++i) st(dp, i, ld(dp, i) + ld(dyp, i) * ld(ap, i));
        });
      });
    });
    return;
  }
  float* sums = scratch_f32(kSums, nb);
  float* partial = scratch_f32(kPartial, std::min<std::int64_t>(reps, 64) * nb);
  with_float(op, dy, [&](const auto* dyp) {
    with_float(op, a, [&](const auto* ap) {
      chunked_column_sum(sums, partial, reps, nb, threads_, [&](std::int64_t r, float* acc) {
        const auto* g = dyp + r * nb;
        const auto* x = ap + r * nb;
#pragma omp simd
        for (std::int64_t j = 0; j < nb; ++j) acc[j] += ld(g, j) * ld(x, j);
      });
    });
  });
  with_float(op, *db, [&](auto* p) {
#pragma omp parallel for simd num_threads(team_size(nb, threads_)) schedule(static)
    for (std::int64_t j = 0; j < nb; ++j) st(p, j, ld(p, j) + sums[j]);
  });
}

void OnednnBackend::axpy(Tensor& y, const Tensor& x, float alpha) {
  ablate::contract::axpy(y, x);
  const char* op = "axpy";
  const std::int64_t n = x.numel();
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) st(yp, i, ld(yp, i) + alpha * ld(xp, i));
    });
  });
}

// ------------------------------------------------------------------------------------------
// dropout: y = x * keep / (1 - p), keep = dropout_keep(rng, i, p) — forward and backward (dx +=)

void OnednnBackend::dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  ablate::contract::dropout_forward(y, x, p);
  const char* op = "dropout_forward";
  const float inv = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
      for_each_keep(x.numel(), p, inv, rng, threads_, [&](std::int64_t i0, std::int64_t len, const float* m) {
#pragma omp simd
        for (std::int64_t j = 0; j < len; ++j) st(yp, i0 + j, ld(xp, i0 + j) * m[j]);
      });
    });
  });
}

void OnednnBackend::dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  ablate::contract::dropout_backward(dx, dy, p);
  const char* op = "dropout_backward";
  const float inv = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  set_threads();
  with_float(op, dy, [&](const auto* dyp) {
    with_float(op, dx, [&](auto* dxp) {
      for_each_keep(dy.numel(), p, inv, rng, threads_, [&](std::int64_t i0, std::int64_t len, const float* m) {
#pragma omp simd
        for (std::int64_t j = 0; j < len; ++j) st(dxp, i0 + j, ld(dxp, i0 + j) + ld(dyp, i0 + j) * m[j]);
      });
    });
  });
}

// ------------------------------------------------------------------------------------------
// embedding: y[N, D] = table[ids[N], :]; backward dtable[V, D] += scatter(dy)

namespace {
void check_ids(const char* op, const std::int32_t* ids, std::int64_t n, std::int64_t V) {
  for (std::int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= V)
      fail(op, "ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is outside [0, " + std::to_string(V) + ")");
}
}  // namespace

void OnednnBackend::embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  ablate::contract::embedding_forward(y, ids, table);
  const char* op = "embedding_forward";
  const std::int64_t N = ids.numel(), V = table.shape()[0], D = table.shape()[1];
  const std::int32_t* id = ids.data<std::int32_t>();
  check_ids(op, id, N, V);
  set_threads();
  with_float(op, table, [&](const auto* tp) {
    with_float(op, y, [&](auto* yp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
      for (std::int64_t r = 0; r < N; ++r) {
        const auto* src = tp + static_cast<std::int64_t>(id[r]) * D;
        auto* dst = yp + r * D;
#pragma omp simd
        for (std::int64_t j = 0; j < D; ++j) st(dst, j, ld(src, j));
      }
    });
  });
}

// Deterministic scatter-add: threads own disjoint column slices and walk the rows in order.
void OnednnBackend::embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  ablate::contract::embedding_backward(dtable, dy, ids);
  const char* op = "embedding_backward";
  const std::int64_t N = ids.numel(), V = dtable.shape()[0], D = dtable.shape()[1];
  const std::int32_t* id = ids.data<std::int32_t>();
  check_ids(op, id, N, V);
  set_threads();
  const std::int64_t slices = std::min<std::int64_t>(threads_, std::max<std::int64_t>(D / 16, 1));
  with_float(op, dy, [&](const auto* dyp) {
    with_float(op, dtable, [&](auto* tp) {
#pragma omp parallel for num_threads(team_size(N * D, threads_)) schedule(static)
      for (std::int64_t s = 0; s < slices; ++s) {
        const std::int64_t c0 = D * s / slices, c1 = D * (s + 1) / slices;
        for (std::int64_t r = 0; r < N; ++r) {
          const auto* src = dyp + r * D;
          auto* dst = tp + static_cast<std::int64_t>(id[r]) * D;
#pragma omp simd
          for (std::int64_t j = c0; j < c1; ++j) st(dst, j, ld(dst, j) + ld(src, j));
        }
      }
    });
  });
}

// ------------------------------------------------------------------------------------------
// heads: split x[B, T, P*H*Dh] part -> y[B, H, T, Dh]; merge x[B, H, T, Dh] -> y[B, T, H*Dh]

namespace {
// Copies (or adds, when `acc`) rows of Dh between [B, T, P*H*Dh] (part `part`) and [B, H, T, Dh].
// to_heads: heads[b, h, t, :] (op)= packed[b, t, part, h, :]; else the reverse.
template <class Src, class Dst>
void heads_copy(Dst* dst, const Src* src, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                std::int64_t parts, std::int64_t part, bool to_heads, bool acc, int threads) {
  const std::int64_t W = parts * H * Dh;
#pragma omp parallel for num_threads(team_size(B * H * T * Dh, threads)) schedule(static) collapse(3)
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t hoff = ((b * H + h) * T + t) * Dh, poff = (b * T + t) * W + part * H * Dh + h * Dh;
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
}  // namespace

void OnednnBackend::split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) {
  ablate::contract::split_heads_forward(y, x, parts, part);
  const char* op = "split_heads_forward";
  const std::int64_t B = y.shape()[0], H = y.shape()[1], T = y.shape()[2], Dh = y.shape()[3];
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) { heads_copy(yp, xp, B, T, H, Dh, parts, part, true, false, threads_); });
  });
}

void OnednnBackend::split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  ablate::contract::split_heads_backward(dx, dy, parts, part);
  const char* op = "split_heads_backward";
  const std::int64_t B = dy.shape()[0], H = dy.shape()[1], T = dy.shape()[2], Dh = dy.shape()[3];
  set_threads();
  with_float(op, dy, [&](const auto* dyp) {
    with_float(op, dx, [&](auto* dxp) { heads_copy(dxp, dyp, B, T, H, Dh, parts, part, false, true, threads_); });
  });
}

void OnednnBackend::merge_heads_forward(Tensor& y, const Tensor& x) {
  ablate::contract::merge_heads_forward(y, x);
  const char* op = "merge_heads_forward";
  const std::int64_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], Dh = x.shape()[3];
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) { heads_copy(yp, xp, B, T, H, Dh, 1, 0, false, false, threads_); });
  });
}

void OnednnBackend::merge_heads_backward(Tensor& dx, const Tensor& dy) {
  ablate::contract::merge_heads_backward(dx, dy);
  const char* op = "merge_heads_backward";
  const std::int64_t B = dx.shape()[0], H = dx.shape()[1], T = dx.shape()[2], Dh = dx.shape()[3];
  set_threads();
  with_float(op, dy, [&](const auto* dyp) {
    with_float(op, dx, [&](auto* dxp) { heads_copy(dxp, dyp, B, T, H, Dh, 1, 0, true, true, threads_); });
  });
}

// ------------------------------------------------------------------------------------------
// KV cache (incremental decoding; no backward): dst[B, H, S, Dh] rows offset .. offset+T-1 of
// every (b, h) = src[B, H, T, Dh]. Per (b, h) the slice is one contiguous block of T*Dh elements
// in both tensors: one memcpy each, over (b, h) in parallel above the grain. Other rows untouched.

void OnednnBackend::write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  ablate::contract::write_time_slice(dst, src, offset);
  const std::int64_t B = dst.shape()[0], H = dst.shape()[1], S = dst.shape()[2], Dh = dst.shape()[3];
  const std::int64_t T = src.shape()[2];
  const std::size_t es = ablate::dtype_size(dst.dtype());
  const std::int64_t BH = B * H, block = T * Dh;
  auto* d = static_cast<unsigned char*>(dst.raw());
  const auto* s = static_cast<const unsigned char*>(src.raw());
  if (block == 0 || BH == 0 || d == s) return;  // d == s: T == S, offset 0, the same storage
  set_threads();
#pragma omp parallel for num_threads(team_size(BH * block, threads_)) schedule(static)
  for (std::int64_t i = 0; i < BH; ++i)
    std::memcpy(d + static_cast<std::size_t>((i * S + offset) * Dh) * es, s + static_cast<std::size_t>(i * block) * es,
                static_cast<std::size_t>(block) * es);
}

// ------------------------------------------------------------------------------------------
// cross entropy, fused: loss = mean over counted rows of lse - sum_c q_c x_c, q = (1-ls) onehot + ls/V;
// dlogits = (softmax - q) / count (0 on ignored rows); stats = {count, correct}.

void OnednnBackend::cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                          const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  ablate::contract::cross_entropy_forward(loss, dlogits, stats, logits, targets, label_smoothing);
  const char* op = "cross_entropy_forward";
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  const std::int32_t* tg = targets.data<std::int32_t>();
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < N; ++r) {
    if (tg[r] == ignore_index) continue;
    if (tg[r] < 0 || tg[r] >= V)
      fail(op, "targets[" + std::to_string(r) + "] = " + std::to_string(tg[r]) + " is outside [0, " + std::to_string(V) +
                   ") and is not ignore_index " + std::to_string(ignore_index));
    ++count;
  }
  set_threads();
  const float ls = label_smoothing;
  const float inv_count = count ? 1.0f / static_cast<float>(count) : 0.0f;
  const float on = 1.0f - ls, off = ls / static_cast<float>(V);
  float* row_loss = scratch_f32(kSums, 2 * std::max<std::int64_t>(N, 1));  // [loss | correct]
  with_float(op, logits, [&](const auto* xp) {
    with_float(op, dlogits, [&](auto* gp) {
#pragma omp parallel for num_threads(team_size(N * V, threads_)) schedule(static)
      for (std::int64_t r = 0; r < N; ++r) {
        const auto* x = xp + r * V;
        auto* g = gp + r * V;
        const std::int32_t t = tg[r];
        if (t == ignore_index) {
#pragma omp simd
          for (std::int64_t c = 0; c < V; ++c) st(g, c, 0.0f);
          row_loss[r] = 0.0f;
          row_loss[N + r] = 0.0f;
          continue;
        }
        const float mx = row_max(x, V);
        std::int64_t arg = 0;  // the first index of the maximum
        while (arg < V - 1 && !(ld(x, arg) >= mx)) ++arg;
        float sum = 0.0f, sx = 0.0f;
#pragma omp simd reduction(+ : sum, sx)
        for (std::int64_t c = 0; c < V; ++c) {
          const float v = ld(x, c);
          sum += fast_exp(v - mx);
          sx += v;
        }
        const float lse = mx + std::log(sum);
        row_loss[r] = lse - on * ld(x, t) - off * sx;
        row_loss[N + r] = arg == t ? 1.0f : 0.0f;
        const float rs = 1.0f / sum;
#pragma omp simd
        for (std::int64_t c = 0; c < V; ++c) st(g, c, (fast_exp(ld(x, c) - mx) * rs - off) * inv_count);
        st(g, t, ld(g, t) - on * inv_count);
      }
    });
  });
  double total = 0.0, correct = 0.0;
  for (std::int64_t r = 0; r < N; ++r) {
    total += row_loss[r];
    correct += row_loss[N + r];
  }
  loss.data<float>()[0] = count ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
  stats.data<float>()[0] = static_cast<float>(count);
  stats.data<float>()[1] = static_cast<float>(correct);
}

// ------------------------------------------------------------------------------------------
// optimizer and gradient utilities

void OnednnBackend::sum_squares(Tensor& total, const Tensor& x) {
  ablate::contract::sum_squares(total, x);
  const char* op = "sum_squares";
  const std::int64_t n = x.numel();
  constexpr std::int64_t kChunk = 16384;  // fixed chunks: the order does not depend on threads
  const std::int64_t nch = (n + kChunk - 1) / kChunk;
  float* part = scratch_f32(kPartial, std::max<std::int64_t>(nch, 1));
  set_threads();
  with_float(op, x, [&](const auto* xp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t ch = 0; ch < nch; ++ch) {
      const std::int64_t i0 = ch * kChunk, i1 = std::min(n, i0 + kChunk);
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (std::int64_t i = i0; i < i1; ++i) s += ld(xp, i) * ld(xp, i);
      part[ch] = s;
    }
  });
  double s = 0.0;
  for (std::int64_t ch = 0; ch < nch; ++ch) s += part[ch];
  total.data<float>()[0] += static_cast<float>(s);
}

void OnednnBackend::adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                                const ablate::AdamParams& prm) {
  ablate::contract::adam_update(w, m, v, w_low, grad, prm);
  const std::int64_t n = w.numel();
  set_threads();
  const float b1 = prm.beta1, b2 = prm.beta2, lr = prm.lr, eps = prm.eps, wd = prm.weight_decay, gs = prm.grad_scale;
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(b1), static_cast<double>(prm.step)));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(b2), static_cast<double>(prm.step)));
  const bool decoupled = prm.decoupled;
  float* wp = w.data<float>();
  float* mp = m.data<float>();
  float* vp = v.data<float>();
  const float* gp = grad.data<float>();
  bf16_t* lp = w_low ? w_low->data<bf16_t>() : nullptr;
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float w0 = wp[i];
    float g = gp[i] * gs;
    if (!decoupled) g += wd * w0;
    const float mi = b1 * mp[i] + (1.0f - b1) * g;
    const float vi = b2 * vp[i] + (1.0f - b2) * g * g;
    mp[i] = mi;
    vp[i] = vi;
    const float mhat = mi / bc1, vhat = vi / bc2;
    float upd = mhat / (std::sqrt(vhat) + eps);
    if (decoupled) upd += wd * w0;
    const float w1 = w0 - lr * upd;
    wp[i] = w1;
    if (lp) st(lp, i, w1);
  }
}

void OnednnBackend::cast(Tensor& y, const Tensor& x) {
  ablate::contract::cast(y, x);
  const char* op = "cast";
  if (x.dtype() == y.dtype()) {
    copy(y, x);
    return;
  }
  const std::int64_t n = x.numel();
  set_threads();
  with_float(op, x, [&](const auto* xp) {
    with_float(op, y, [&](auto* yp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) st(yp, i, ld(xp, i));
    });
  });
}

}  // namespace backend_onednn
