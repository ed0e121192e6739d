// backend/onednn: the index and layout ops (contracts compare_problem and permute_problem in
// ablate/backend.hpp): an elementwise comparison into a 0/1 mask, and an axis permutation with
// its backward, element by element on a team of threads (each output element written by one).
#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

// y[i] = (a[i] c b[i mod |b|]) ? 1 : 0.
void OnednnBackend::do_compare_forward(Tensor& y, const Tensor& a, const Tensor& b, ablate::Compare c) {
  const std::int64_t n = a.numel(), nb = b.numel();
  set_threads();
  each_row("compare_forward", std::tie(a, b, y), n, n, threads_,
           [c, nb](std::int64_t i, const auto* ap, const auto* bp, auto* yp) {
             st(yp, i, ablate::compare_holds(c, ld(ap, i), ld(bp, i % nb)) ? 1.0f : 0.0f);
           });
}

// y[j] = x[offset(j)].
void OnednnBackend::do_permute_forward(Tensor& y, const Tensor& x, const ablate::Permutation& p) {
  const ablate::PermutedStrides walk = ablate::permuted_strides(x.shape(), p);
  const std::int64_t n = x.numel();
  set_threads();
  each_row("permute_forward", std::tie(x, y), n, n, threads_,
           [&walk](std::int64_t j, const auto* xp, auto* yp) { st(yp, j, ld(xp, walk.offset(j))); });
}

// dx[offset(j)] += dy[j]: each j reaches its own element of dx, so the team never collides.
void OnednnBackend::do_permute_backward(Tensor& dx, const Tensor& dy, const ablate::Permutation& p) {
  const ablate::PermutedStrides walk = ablate::permuted_strides(dx.shape(), p);
  const std::int64_t n = dy.numel();
  set_threads();
  each_row("permute_backward", std::tie(dy, dx), n, n, threads_, [&walk](std::int64_t j, const auto* gp, auto* dp) {
    const std::int64_t i = walk.offset(j);
    st(dp, i, ld(dp, i) + ld(gp, j));
  });
}

}  // namespace backend_onednn
