// backend/reference: the index and layout ops (contracts compare_problem and permute_problem in
// ablate/backend.hpp): an elementwise comparison into a 0/1 mask, and an axis permutation with
// its backward, in double, one element at a time.
#include "reference_backend.hpp"

namespace backend_reference {

// y[i] = (a[i] c b[i mod |b|]) ? 1 : 0.
void ReferenceBackend::do_compare_forward(Tensor& y, const Tensor& a, const Tensor& b, ablate::Compare c) {
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> out(av.size());
  for (std::size_t i = 0; i < av.size(); ++i)
    out[i] = ablate::compare_holds(c, static_cast<float>(av[i]), static_cast<float>(bv[i % bv.size()])) ? 1.0 : 0.0;
  store(y, out);
}

// y[j] = x[offset(j)]: y's element j is x's at the permuted index.
void ReferenceBackend::do_permute_forward(Tensor& y, const Tensor& x, const ablate::Permutation& p) {
  const ablate::PermutedStrides walk = ablate::permuted_strides(x.shape(), p);
  const std::vector<double> xv = load(x);
  std::vector<double> out(xv.size());
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = xv[static_cast<std::size_t>(walk.offset(static_cast<std::int64_t>(j)))];
  store(y, out);
}

// dx[offset(j)] += dy[j]: the permutation's transpose.
void ReferenceBackend::do_permute_backward(Tensor& dx, const Tensor& dy, const ablate::Permutation& p) {
  const ablate::PermutedStrides walk = ablate::permuted_strides(dx.shape(), p);
  const std::vector<double> g = load(dy);
  std::vector<double> d(g.size());
  for (std::size_t j = 0; j < g.size(); ++j) d[static_cast<std::size_t>(walk.offset(static_cast<std::int64_t>(j)))] = g[j];
  accumulate(&dx, d);
}

}  // namespace backend_reference
