// Plugin backend/reference: layer norm and RMS norm over the last dim, forward and backward
// side by side. Statistics (mean, rstd) are F32 and saved by forward for backward.
#include <cmath>

#include "reference_backend.hpp"

namespace backend_reference {

// ---------------------------------------------------------------------------- layer norm
// y: [N, D] = (x - mean) * rstd * gamma + beta; mean, rstd: [N] F32 (biased variance).
void ReferenceBackend::do_layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                             const Tensor& beta, float eps) {
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  const std::vector<double> xv = load(x), gv = load(gamma), bv = load(beta);
  std::vector<double> yv(xv.size()), mv(static_cast<std::size_t>(N)), rv(static_cast<std::size_t>(N));
  for (std::int64_t n = 0; n < N; ++n) {
    const double* xr = &xv[static_cast<std::size_t>(n * D)];
    double mu = 0, var = 0;
    for (std::int64_t j = 0; j < D; ++j) mu += xr[j];
    mu /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) var += (xr[j] - mu) * (xr[j] - mu);
    var /= static_cast<double>(D);
    const double r = 1.0 / std::sqrt(var + eps);
    mv[static_cast<std::size_t>(n)] = mu;
    rv[static_cast<std::size_t>(n)] = r;
    for (std::int64_t j = 0; j < D; ++j)
      yv[static_cast<std::size_t>(n * D + j)] =
          (xr[j] - mu) * r * gv[static_cast<std::size_t>(j)] + bv[static_cast<std::size_t>(j)];
  }
  store(y, yv);
  store(mean, mv);
  store(rstd, rv);
}

// xhat = (x - mean) * rstd, g = dy * gamma:
// dx += rstd * (g - mean_row(g) - xhat * mean_row(g * xhat)); dgamma += sum_rows(dy * xhat);
// dbeta += sum_rows(dy).
void ReferenceBackend::do_layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                              const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                                              ablate::GradStore dx_store) {
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  const std::vector<double> xv = load(x), gy = load(dy), mv = load(mean), rv = load(rstd), gm = load(gamma);
  std::vector<double> gx(xv.size(), 0.0), gg(static_cast<std::size_t>(D), 0.0), gb(static_cast<std::size_t>(D), 0.0);
  std::vector<double> xhat(static_cast<std::size_t>(D)), g(static_cast<std::size_t>(D));
  for (std::int64_t n = 0; n < N; ++n) {
    const double mu = mv[static_cast<std::size_t>(n)], r = rv[static_cast<std::size_t>(n)];
    double mean_g = 0, mean_gx = 0;
    for (std::int64_t j = 0; j < D; ++j) {
      const auto i = static_cast<std::size_t>(n * D + j);
      const auto jj = static_cast<std::size_t>(j);
      xhat[jj] = (xv[i] - mu) * r;
      g[jj] = gy[i] * gm[jj];
      mean_g += g[jj];
      mean_gx += g[jj] * xhat[jj];
      gg[jj] += gy[i] * xhat[jj];
      gb[jj] += gy[i];
    }
    mean_g /= static_cast<double>(D);
    mean_gx /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) {
      const auto jj = static_cast<std::size_t>(j);
      gx[static_cast<std::size_t>(n * D + j)] = r * (g[jj] - mean_g - xhat[jj] * mean_gx);
    }
  }
  accumulate(dx, gx, dx_store);
  accumulate(dgamma, gg);
  accumulate(dbeta, gb);
}

// ---------------------------------------------------------------------------- RMS norm
// y: [N, D] = x * rstd * gamma, rstd: [N] F32 = 1 / sqrt(mean(x^2) + eps).
void ReferenceBackend::do_rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  const std::vector<double> xv = load(x), gv = load(gamma);
  std::vector<double> yv(xv.size()), rv(static_cast<std::size_t>(N));
  for (std::int64_t n = 0; n < N; ++n) {
    double ms = 0;
    for (std::int64_t j = 0; j < D; ++j) ms += xv[static_cast<std::size_t>(n * D + j)] * xv[static_cast<std::size_t>(n * D + j)];
    const double r = 1.0 / std::sqrt(ms / static_cast<double>(D) + eps);
    rv[static_cast<std::size_t>(n)] = r;
    for (std::int64_t j = 0; j < D; ++j)
      yv[static_cast<std::size_t>(n * D + j)] = xv[static_cast<std::size_t>(n * D + j)] * r * gv[static_cast<std::size_t>(j)];
  }
  store(y, yv);
  store(rstd, rv);
}

// xhat = x * rstd, g = dy * gamma: dx += rstd * (g - xhat * mean_row(g * xhat));
// dgamma += sum_rows(dy * xhat).
void ReferenceBackend::do_rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                            const Tensor& gamma, ablate::GradStore dx_store) {
  const std::int64_t N = x.shape().rows(), D = x.shape().last();
  const std::vector<double> xv = load(x), gy = load(dy), rv = load(rstd), gm = load(gamma);
  std::vector<double> gx(xv.size(), 0.0), gg(static_cast<std::size_t>(D), 0.0);
  for (std::int64_t n = 0; n < N; ++n) {
    const double r = rv[static_cast<std::size_t>(n)];
    double mean_gx = 0;
    for (std::int64_t j = 0; j < D; ++j) {
      const auto i = static_cast<std::size_t>(n * D + j);
      const double xhat = xv[i] * r;
      mean_gx += gy[i] * gm[static_cast<std::size_t>(j)] * xhat;
      gg[static_cast<std::size_t>(j)] += gy[i] * xhat;
    }
    mean_gx /= static_cast<double>(D);
    for (std::int64_t j = 0; j < D; ++j) {
      const auto i = static_cast<std::size_t>(n * D + j);
      gx[i] = r * (gy[i] * gm[static_cast<std::size_t>(j)] - xv[i] * r * mean_gx);
    }
  }
  accumulate(dx, gx, dx_store);
  accumulate(dgamma, gg);
}

}  // namespace backend_reference
