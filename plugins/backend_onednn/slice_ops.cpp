// backend/onednn: slices along the last dim (forward copies, backward accumulates into the slice),
// rows in parallel (contract in ablate/backend.hpp).
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {
void OnednnBackend::do_slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  const char* op = "slice_last_forward";
  const std::int64_t C = x.shape().last(), W = y.shape().last(), N = x.shape().rows();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for num_threads(team_size(y.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const auto* xr = xp + n * C + offset;
      auto* yr = yp + n * W;
#pragma omp simd
      for (std::int64_t j = 0; j < W; ++j) st(yr, j, ld(xr, j));
    }
  });
}

void OnednnBackend::do_slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  const char* op = "slice_last_backward";
  const std::int64_t C = dx.shape().last(), W = dy.shape().last(), N = dx.shape().rows();
  set_threads();
  with_floats(op, std::tie(dy, dx), [&](const auto* gp, auto* dp) {
#pragma omp parallel for num_threads(team_size(dy.numel(), threads_)) schedule(static)
    for (std::int64_t n = 0; n < N; ++n) {
      const auto* gr = gp + n * W;
      auto* dr = dp + n * C + offset;
#pragma omp simd
      for (std::int64_t j = 0; j < W; ++j) st(dr, j, ld(dr, j) + ld(gr, j));
    }
  });
}

}  // namespace backend_onednn
