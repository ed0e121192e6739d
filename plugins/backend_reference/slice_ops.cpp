// backend/reference: slices along the last dim, forward and backward side by side (contract in
// ablate/backend.hpp); ops::slice_last and ops::concat_last are built on this pair.
#include "reference_backend.hpp"

namespace backend_reference {
void ReferenceBackend::do_slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  const std::int64_t C = x.shape().last(), W = y.shape().last(), N = x.shape().rows();
  const std::vector<double> xv = load(x);
  std::vector<double> yv(static_cast<std::size_t>(y.numel()));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < W; ++j)
      yv[static_cast<std::size_t>(n * W + j)] = xv[static_cast<std::size_t>(n * C + offset + j)];
  store(y, yv);
}

void ReferenceBackend::do_slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  const std::int64_t C = dx.shape().last(), W = dy.shape().last(), N = dx.shape().rows();
  const std::vector<double> g = load(dy);
  std::vector<double> d(static_cast<std::size_t>(dx.numel()), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < W; ++j) d[static_cast<std::size_t>(n * C + offset + j)] = g[static_cast<std::size_t>(n * W + j)];
  accumulate(&dx, d);
}

}  // namespace backend_reference
