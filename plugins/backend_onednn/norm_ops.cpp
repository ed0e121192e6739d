// backend/onednn: layer norm and RMS norm over the last dim as OpenMP + SIMD C++, forward and
// backward side by side; the column sums of dgamma/dbeta in a fixed order (bit-identical runs).

#include <cmath>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

namespace {
// A norm backward's pass over its N rows of D: row(dxp, r, acc) with dx's data typed by its dtype
// (a null float* without dx) and, when width > 0, acc a row of `width` column sums that
// chunked_column_sum adds into `sums` in a fixed order (partial: its 64 x width scratch); without
// sums, a plain parallel loop.
template <class Row>
void norm_backward_rows(const char* op, Tensor* dx, std::int64_t N, std::int64_t D, std::int64_t width, float* sums,
                        float* partial, int threads, Row&& row) {
  const auto rows = [&](auto* dxp) {
    if (width == 0) {
#pragma omp parallel for num_threads(team_size({N, D}, threads)) schedule(static)
      for (std::int64_t r = 0; r < N; ++r) row(dxp, r, nullptr);
    } else {
      chunked_column_sum(sums, partial, N, width, threads, [&](std::int64_t r, float* acc) { row(dxp, r, acc); });
    }
  };
  if (dx)
    with_float(op, *dx, rows);
  else
    rows(static_cast<float*>(nullptr));
}

// A norm parameter's gradient: p[j] += sums[j] for j < D.
void add_column_sums(const char* op, Tensor& p, const float* sums, std::int64_t D) {
  with_float(op, p, [&](auto* pp) {
#pragma omp simd
    for (std::int64_t j = 0; j < D; ++j) st(pp, j, ld(pp, j) + sums[j]);
  });
}
}  // namespace

// ------------------------------------------------------------------------------------------
// layer norm: y[N, D] = (x - mean) * rstd * gamma[D] + beta[D]; mean[N], rstd[N] saved (F32)

void OnednnBackend::do_layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                          const Tensor& beta, float eps) {
  const char* op = "layer_norm_forward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* bt = as_f32(beta.raw(), beta.dtype(), D, kVecB);
  float* mp = mean.data<float>();
  float* rp = rstd.data<float>();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size({N, D}, threads_)) schedule(static)
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
}

// dx += rstd * (dxh - mean(dxh) - xh * mean(dxh * xh)) (= for Write), dxh = dy * gamma, xh = (x - mean) * rstd;
// dgamma += sum_rows(dy * xh); dbeta += sum_rows(dy).
void OnednnBackend::do_layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                           const Tensor& mean, const Tensor& rstd, const Tensor& gamma, GradStore dx_store) {
  const char* op = "layer_norm_backward";
  const bool add = dx_store == GradStore::Add;
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* mp = mean.data<float>();
  const float* rp = rstd.data<float>();
  const std::int64_t width = dgamma || dbeta ? 2 * D : 0;  // [dgamma | dbeta] sums
  float* sums = width ? scratch_f32(kSums, width) : nullptr;
  float* partial = width ? scratch_f32(kPartial, 64 * width) : nullptr;
  with_floats(op, std::tie(x, dy), [&](const auto* xp, const auto* dyp) {
    // dx's row r (when dx), and (when acc) row r's dgamma | dbeta terms: one pass over x and dy.
    const auto row = [&](auto* dxp, std::int64_t r, float* acc) {
      const auto* xr = xp + r * D;
      const auto* dr = dyp + r * D;
      const float* gm = g;  // a local: read through the closure, the vector loops gathered it lane by lane
      const float mu = mp[r], rs = rp[r];
      if (dxp) {
        auto* o = dxp + r * D;
        float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
        for (std::int64_t j = 0; j < D; ++j) {
          const float dxh = ld(dr, j) * gm[j];
          s1 += dxh;
          s2 += dxh * (ld(xr, j) - mu) * rs;
        }
        const float m1 = s1 / static_cast<float>(D), m2 = s2 / static_cast<float>(D);
        put_row(o, D, add, [&](std::int64_t j) { return rs * (ld(dr, j) * gm[j] - m1 - (ld(xr, j) - mu) * rs * m2); });
      }
      if (acc) {
#pragma omp simd
        for (std::int64_t j = 0; j < D; ++j) {
          const float d = ld(dr, j);
          acc[j] += d * (ld(xr, j) - mu) * rs;
          acc[D + j] += d;
        }
      }
    };
    norm_backward_rows(op, dx, N, D, width, sums, partial, threads_, row);
  });
  if (dgamma) add_column_sums(op, *dgamma, sums, D);
  if (dbeta) add_column_sums(op, *dbeta, sums + D, D);
}

// ------------------------------------------------------------------------------------------
// RMS norm: y[N, D] = x * rstd * gamma[D], rstd[N] = 1/sqrt(mean(x^2) + eps)

void OnednnBackend::do_rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  const char* op = "rms_norm_forward";
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  float* rp = rstd.data<float>();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size({N, D}, threads_)) schedule(static)
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
}

// dx += rstd * (dxh - xh * mean(dxh * xh)) (= for Write), dxh = dy * gamma, xh = x * rstd; dgamma +=
// sum_rows(dy * xh).
void OnednnBackend::do_rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                         const Tensor& gamma, GradStore dx_store) {
  const char* op = "rms_norm_backward";
  const bool add = dx_store == GradStore::Add;
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  set_threads();
  const float* g = as_f32(gamma.raw(), gamma.dtype(), D, kVecA);
  const float* rp = rstd.data<float>();
  const std::int64_t width = dgamma ? D : 0;
  float* sums = width ? scratch_f32(kSums, width) : nullptr;
  float* partial = width ? scratch_f32(kPartial, 64 * width) : nullptr;
  with_floats(op, std::tie(x, dy), [&](const auto* xp, const auto* dyp) {
    // dx's row r (when dx), and (when acc) row r's dgamma terms: one pass over x and dy.
    const auto row = [&](auto* dxp, std::int64_t r, float* acc) {
      const auto* xr = xp + r * D;
      const auto* dr = dyp + r * D;
      const float* gm = g;  // a local, as in layer_norm_backward
      const float rs = rp[r];
      if (dxp) {
        auto* o = dxp + r * D;
        float s2 = 0.0f;
#pragma omp simd reduction(+ : s2)
        for (std::int64_t j = 0; j < D; ++j) s2 += ld(dr, j) * gm[j] * ld(xr, j) * rs;
        const float m2 = s2 / static_cast<float>(D);
        put_row(o, D, add, [&](std::int64_t j) { return rs * (ld(dr, j) * gm[j] - ld(xr, j) * rs * m2); });
      }
      if (acc) {
#pragma omp simd
        for (std::int64_t j = 0; j < D; ++j) acc[j] += ld(dr, j) * ld(xr, j) * rs;
      }
    };
    norm_backward_rows(op, dx, N, D, width, sums, partial, threads_, row);
  });
  if (dgamma) add_column_sums(op, *dgamma, sums, D);
}

}  // namespace backend_onednn
