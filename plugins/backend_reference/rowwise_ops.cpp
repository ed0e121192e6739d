// backend/reference: the small general optional ops, forward and backward side by side (contract
// rowwise_problem in ablate/backend.hpp): softmax and sum over the last dim, exp and sigmoid
// elementwise. In double, one row at a time.
#include <algorithm>
#include <cmath>

#include "reference_backend.hpp"

namespace backend_reference {
// y[N, C] = softmax(x[N, C]) per row.
void ReferenceBackend::do_softmax_last_forward(Tensor& y, const Tensor& x) {
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  std::vector<double> v = load(x);
  for (std::int64_t n = 0; n < N; ++n) {
    double* row = v.data() + n * C;
    const double mx = *std::max_element(row, row + C);
    double sum = 0;
    for (std::int64_t c = 0; c < C; ++c) sum += row[c] = std::exp(row[c] - mx);
    for (std::int64_t c = 0; c < C; ++c) row[c] /= sum;
  }
  store(y, v);
}

// dx[N, C] += y ⊙ (dy - sum_c dy ⊙ y) per row.
void ReferenceBackend::do_softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  const std::int64_t C = y.shape().last(), N = y.shape().rows();
  const std::vector<double> yv = load(y), g = load(dy);
  std::vector<double> d(yv.size());
  for (std::int64_t n = 0; n < N; ++n) {
    double dot = 0;
    for (std::int64_t c = 0; c < C; ++c) dot += g[static_cast<std::size_t>(n * C + c)] * yv[static_cast<std::size_t>(n * C + c)];
    for (std::int64_t c = 0; c < C; ++c) {
      const auto i = static_cast<std::size_t>(n * C + c);
      d[i] = yv[i] * (g[i] - dot);
    }
  }
  accumulate(&dx, d);
}

// y[N, 1] = sum_c x[N, c].
void ReferenceBackend::do_sum_last_forward(Tensor& y, const Tensor& x) {
  const std::int64_t C = x.shape().last(), N = x.shape().rows();
  const std::vector<double> v = load(x);
  std::vector<double> s(static_cast<std::size_t>(N), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) s[static_cast<std::size_t>(n)] += v[static_cast<std::size_t>(n * C + c)];
  store(y, s);
}

// dx[N, c] += dy[N, 1].
void ReferenceBackend::do_sum_last_backward(Tensor& dx, const Tensor& dy) {
  const std::int64_t C = dx.shape().last(), N = dx.shape().rows();
  const std::vector<double> g = load(dy);
  std::vector<double> d(static_cast<std::size_t>(dx.numel()));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) d[static_cast<std::size_t>(n * C + c)] = g[static_cast<std::size_t>(n)];
  accumulate(&dx, d);
}

// y = exp(x) or sigmoid(x) = 1 / (1 + exp(-x)).
void ReferenceBackend::do_pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) {
  std::vector<double> v = load(x);
  for (double& e : v) e = f == ablate::Pointwise::exp ? std::exp(e) : 1.0 / (1.0 + std::exp(-e));
  store(y, v);
}

// dx += dy ⊙ f'(x), from y: exp' = y, sigmoid' = y (1 - y).
void ReferenceBackend::do_pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) {
  const std::vector<double> yv = load(y), g = load(dy);
  std::vector<double> d(yv.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = g[i] * (f == ablate::Pointwise::exp ? yv[i] : yv[i] * (1.0 - yv[i]));
  accumulate(&dx, d);
}

}  // namespace backend_reference
