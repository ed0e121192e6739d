// backend/reference: slices along the last dim, forward and backward side by side (contract in
// ablate/backend.hpp); ops::slice_last and ops::concat_last are built on this pair.
#include "reference_backend.hpp"

namespace backend_reference {
namespace {

// whole: [N, C], part: [N, W] (ablate::slice_last_problem), value dtypes.
void check_slice(const char* op, const Tensor& whole, const Tensor& part, std::int64_t offset) {
  check_value(op, "whole", whole);
  if (const std::string p = ablate::slice_last_problem(whole, part, offset); !p.empty()) fail(op, p);
}

}  // namespace

void ReferenceBackend::slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  const char* op = "slice_last_forward";
  require_supported(ablate::OptionalOp::slice_last, op);
  check_slice(op, x, y, offset);
  const std::int64_t C = x.shape().last(), W = y.shape().last(), N = x.shape().rows();
  const std::vector<double> xv = load(x);
  std::vector<double> yv(static_cast<std::size_t>(y.numel()));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < W; ++j) yv[static_cast<std::size_t>(n * W + j)] = xv[static_cast<std::size_t>(n * C + offset + j)];
  store(y, yv);
}

void ReferenceBackend::slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  const char* op = "slice_last_backward";
  require_supported(ablate::OptionalOp::slice_last, op);
  check_slice(op, dx, dy, offset);
  const std::int64_t C = dx.shape().last(), W = dy.shape().last(), N = dx.shape().rows();
  const std::vector<double> g = load(dy);
  std::vector<double> d(static_cast<std::size_t>(dx.numel()), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < W; ++j) d[static_cast<std::size_t>(n * C + offset + j)] = g[static_cast<std::size_t>(n * W + j)];
  accumulate(&dx, d);
}

}  // namespace backend_reference
