// backend/onednn: the small general optional ops (contract rowwise_problem in ablate/backend.hpp):
// softmax and sum over the last dim and exp/sigmoid elementwise, rows (or elements) in parallel,
// f32 arithmetic on f32 or bf16 values, forward and backward side by side.
#include <cmath>
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {
// y, x: [N, C]; y = softmax over C.
void OnednnBackend::do_softmax_last_forward(Tensor& y, const Tensor& x) {
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  set_threads();
  each_row("softmax_last_forward", std::tie(x, y), N, x.numel(), threads_, [C](std::int64_t n, const auto* xp, auto* yp) {
    const auto* xr = xp + n * C;
    auto* yr = yp + n * C;
    float mx = ld(xr, 0);
    for (std::int64_t c = 1; c < C; ++c) mx = std::max(mx, ld(xr, c));
    float sum = 0.0f;
    for (std::int64_t c = 0; c < C; ++c) sum += std::exp(ld(xr, c) - mx);
    const float inv = 1.0f / sum;
    for (std::int64_t c = 0; c < C; ++c) st(yr, c, std::exp(ld(xr, c) - mx) * inv);
  });
}

// dx, dy, y: [N, C]; dx += y ⊙ (dy - <dy, y>) row by row.
void OnednnBackend::do_softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  const std::int64_t C = y.shape().last(), N = y.shape().rows();
  set_threads();
  each_row("softmax_last_backward", std::tie(y, dy, dx), N, y.numel(), threads_,
           [C](std::int64_t n, const auto* yp, const auto* gp, auto* dp) {
             const auto* yr = yp + n * C;
             const auto* gr = gp + n * C;
             auto* dr = dp + n * C;
             float dot = 0.0f;
             for (std::int64_t c = 0; c < C; ++c) dot += ld(gr, c) * ld(yr, c);
             for (std::int64_t c = 0; c < C; ++c) st(dr, c, ld(dr, c) + ld(yr, c) * (ld(gr, c) - dot));
           });
}

// x: [N, C], y: [N]; y = the sum over C.
void OnednnBackend::do_sum_last_forward(Tensor& y, const Tensor& x) {
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  set_threads();
  each_row("sum_last_forward", std::tie(x, y), N, x.numel(), threads_, [C](std::int64_t n, const auto* xp, auto* yp) {
    const auto* xr = xp + n * C;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < C; ++c) sum += ld(xr, c);
    st(yp, n, sum);
  });
}

// dy: [N], dx: [N, C]; dx += dy broadcast over C.
void OnednnBackend::do_sum_last_backward(Tensor& dx, const Tensor& dy) {
  const std::int64_t C = dx.shape().last(), N = dx.shape().rows();
  set_threads();
  each_row("sum_last_backward", std::tie(dy, dx), N, dx.numel(), threads_, [C](std::int64_t n, const auto* gp, auto* dp) {
    const float g = ld(gp, n);
    auto* dr = dp + n * C;
    for (std::int64_t c = 0; c < C; ++c) st(dr, c, ld(dr, c) + g);
  });
}

// y, x: any shape, the same; y = exp(x) or sigmoid(x) element by element.
void OnednnBackend::do_pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) {
  const std::int64_t n = x.numel();
  const bool sigmoid = f == ablate::Pointwise::sigmoid;
  set_threads();
  each_row("pointwise_forward", std::tie(x, y), n, n, threads_, [sigmoid](std::int64_t i, const auto* xp, auto* yp) {
    const float v = ld(xp, i);
    st(yp, i, sigmoid ? 1.0f / (1.0f + std::exp(-v)) : std::exp(v));
  });
}

// dx += dy ⊙ f'(x), f' written with y = f(x): y(1 - y) for sigmoid, y for exp.
void OnednnBackend::do_pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) {
  const std::int64_t n = y.numel();
  const bool sigmoid = f == ablate::Pointwise::sigmoid;
  set_threads();
  each_row("pointwise_backward", std::tie(y, dy, dx), n, n, threads_,
           [sigmoid](std::int64_t i, const auto* yp, const auto* gp, auto* dp) {
             const float v = ld(yp, i);
             st(dp, i, ld(dp, i) + ld(gp, i) * (sigmoid ? v * (1.0f - v) : v));
           });
}

}  // namespace backend_onednn
