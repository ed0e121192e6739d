// backend/onednn: the small general optional ops (contract rowwise_problem in ablate/backend.hpp):
// softmax and sum over the last dim and exp/sigmoid elementwise, rows (or elements) in parallel,
// f32 arithmetic on f32 or bf16 values, forward and backward side by side.
#include <cmath>
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {
void OnednnBackend::do_softmax_last_forward(Tensor& y, const Tensor& x) {
  const char* op = "softmax_last_forward";
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size(x.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const auto* xr = xp + n * C;
      auto* yr = yp + n * C;
      float mx = ld(xr, 0);
      for (std::int64_t c = 1; c < C; ++c) mx = std::max(mx, ld(xr, c));
      float sum = 0.0f;
      for (std::int64_t c = 0; c < C; ++c) sum += std::exp(ld(xr, c) - mx);
      const float inv = 1.0f / sum;
      for (std::int64_t c = 0; c < C; ++c) st(yr, c, std::exp(ld(xr, c) - mx) * inv);
    }
  });
}

void OnednnBackend::do_softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  const char* op = "softmax_last_backward";
  const std::int64_t C = y.shape().last(), N = y.shape().rows();
  set_threads();
  with_floats(op, std::tie(y, dy, dx), [&](const auto* yp, const auto* gp, auto* dp) {
#pragma omp parallel for num_threads(team_size(y.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const auto* yr = yp + n * C;
      const auto* gr = gp + n * C;
      auto* dr = dp + n * C;
      float dot = 0.0f;
      for (std::int64_t c = 0; c < C; ++c) dot += ld(gr, c) * ld(yr, c);
      for (std::int64_t c = 0; c < C; ++c) st(dr, c, ld(dr, c) + ld(yr, c) * (ld(gr, c) - dot));
    }
  });
}

void OnednnBackend::do_sum_last_forward(Tensor& y, const Tensor& x) {
  const char* op = "sum_last_forward";
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size(x.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const auto* xr = xp + n * C;
      float sum = 0.0f;
      for (std::int64_t c = 0; c < C; ++c) sum += ld(xr, c);
      st(yp, n, sum);
    }
  });
}

void OnednnBackend::do_sum_last_backward(Tensor& dx, const Tensor& dy) {
  const char* op = "sum_last_backward";
  const std::int64_t C = dx.shape().last(), N = dx.shape().rows();
  set_threads();
  with_floats(op, std::tie(dy, dx), [&](const auto* gp, auto* dp) {
#pragma omp parallel for num_threads(team_size(dx.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const float g = ld(gp, n);
      auto* dr = dp + n * C;
      for (std::int64_t c = 0; c < C; ++c) st(dr, c, ld(dr, c) + g);
    }
  });
}

void OnednnBackend::do_pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) {
  const char* op = "pointwise_forward";
  const std::int64_t n = x.numel();
  const bool sigmoid = f == ablate::Pointwise::sigmoid;
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = ld(xp, i);
      st(yp, i, sigmoid ? 1.0f / (1.0f + std::exp(-v)) : std::exp(v));
    }
  });
}

void OnednnBackend::do_pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) {
  const char* op = "pointwise_backward";
  const std::int64_t n = y.numel();
  const bool sigmoid = f == ablate::Pointwise::sigmoid;
  set_threads();
  with_floats(op, std::tie(y, dy, dx), [&](const auto* yp, const auto* gp, auto* dp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = ld(yp, i);
      st(dp, i, ld(dp, i) + ld(gp, i) * (sigmoid ? v * (1.0f - v) : v));
    }
  });
}

}  // namespace backend_onednn
