// Plugin backend/reference: linear (x·W^T + b with a fused activation) and batched matmul,
// forward and backward side by side. Triple loops in double; gradients accumulate (+=).
#include "reference_backend.hpp"

#include <algorithm>

namespace backend_reference {

// ---------------------------------------------------------------------------- linear
// y: [N, O] (any leading dims), pre: [N, O] or null, x: [N, I], w: [O, I], b: [O] or null.
void ReferenceBackend::do_linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                         Activation act) {
  const std::int64_t N = x.shape().rows(), I = x.shape().last(), O = w.shape()[0];
  const std::vector<double> xv = load(x), wv = load(w);
  const std::vector<double> bv = b ? load(*b) : std::vector<double>(static_cast<std::size_t>(O), 0.0);
  std::vector<double> z(static_cast<std::size_t>(N * O)), yv(z.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      double s = bv[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < I; ++i) s += xv[static_cast<std::size_t>(n * I + i)] * wv[static_cast<std::size_t>(o * I + i)];
      z[static_cast<std::size_t>(n * O + o)] = s;
    }
  if (pre != nullptr) store(*pre, z);
  for (std::size_t j = 0; j < z.size(); ++j) yv[j] = activate(act, z[j]);
  store(y, yv);
}

// g = dy ⊙ act'(pre) (ReLU: from y); dx[N, I] += g·w, dw[O, I] += g^T·x, db[O] += sum_rows(g).
void ReferenceBackend::do_linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                                          const Tensor* pre, const Tensor& y, Activation act) {
  const std::int64_t N = x.shape().rows(), I = x.shape().last(), O = w.shape()[0];
  std::vector<double> g = load(dy);
  if (ablate::activation_needs_pre(act)) {
    const std::vector<double> z = load(*pre);
    for (std::size_t j = 0; j < g.size(); ++j) g[j] *= activate_grad(act, z[j]);
  } else if (act == Activation::ReLU) {
    const std::vector<double> yv = load(y);
    for (std::size_t j = 0; j < g.size(); ++j) g[j] *= yv[j] > 0 ? 1.0 : 0.0;
  }
  const std::vector<double> xv = load(x), wv = load(w);
  auto at = [](std::int64_t r, std::int64_t c, std::int64_t cols) { return static_cast<std::size_t>(r * cols + c); };
  if (dx) {
    std::vector<double> d(static_cast<std::size_t>(N * I), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < I; ++i) {
        double s = 0;
        for (std::int64_t o = 0; o < O; ++o) s += g[at(n, o, O)] * wv[at(o, i, I)];
        d[at(n, i, I)] = s;
      }
    accumulate(dx, d);
  }
  if (dw) {
    std::vector<double> d(static_cast<std::size_t>(O * I), 0.0);
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < I; ++i) {
        double s = 0;
        for (std::int64_t n = 0; n < N; ++n) s += g[at(n, o, O)] * xv[at(n, i, I)];
        d[at(o, i, I)] = s;
      }
    accumulate(dw, d);
  }
  if (db) {
    std::vector<double> d(static_cast<std::size_t>(O), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < O; ++o) d[static_cast<std::size_t>(o)] += g[at(n, o, O)];
    accumulate(db, d);
  }
}

// ---------------------------------------------------------------------------- matmul
// c: [Bt, M, N]; a: [Bt, M, K] (trans_a: [Bt, K, M]); b: [Bt, K, N] (trans_b: [Bt, N, K]).
// Any rank >= 2: all dims but the last two are the batch Bt (the same product for a, b, c).
namespace {

struct MatmulDims {
  std::int64_t batch, M, N, K;
};

// The sizes of c = op(a) · op(b), whose shapes ablate::contract has checked.
MatmulDims matmul_dims(const Tensor& c, const Tensor& a, bool trans_a) {
  const Shape &sa = a.shape(), &sc = c.shape();
  MatmulDims d{};
  d.M = sc[sc.rank() - 2];
  d.N = sc[sc.rank() - 1];
  d.K = trans_a ? sa[sa.rank() - 2] : sa[sa.rank() - 1];
  d.batch = sc.numel() / std::max<std::int64_t>(1, d.M * d.N);
  return d;
}

}  // namespace

void ReferenceBackend::do_matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) {
  const MatmulDims d = matmul_dims(c, a, trans_a);
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> cv(static_cast<std::size_t>(c.numel()));
  for (std::int64_t t = 0; t < d.batch; ++t)
    for (std::int64_t m = 0; m < d.M; ++m)
      for (std::int64_t n = 0; n < d.N; ++n) {
        double s = 0;
        for (std::int64_t k = 0; k < d.K; ++k) {
          const std::int64_t ia = t * d.M * d.K + (trans_a ? k * d.M + m : m * d.K + k);
          const std::int64_t ib = t * d.K * d.N + (trans_b ? n * d.K + k : k * d.N + n);
          s += av[static_cast<std::size_t>(ia)] * bv[static_cast<std::size_t>(ib)];
        }
        cv[static_cast<std::size_t>((t * d.M + m) * d.N + n)] = alpha * s;
      }
  store(c, cv);
}

// With C = alpha A·B (A = op(a), B = op(b)): dA = alpha dC·B^T, dB = alpha A^T·dC, written back
// through the transposes: da += dA (or dA^T), db += dB (or dB^T).
void ReferenceBackend::do_matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b,
                                          bool trans_a, bool trans_b, float alpha) {
  const MatmulDims d = matmul_dims(dc, a, trans_a);
  const std::vector<double> av = load(a), bv = load(b), gv = load(dc);
  auto ia = [&](std::int64_t t, std::int64_t m, std::int64_t k) {
    return static_cast<std::size_t>(t * d.M * d.K + (trans_a ? k * d.M + m : m * d.K + k));
  };
  auto ib = [&](std::int64_t t, std::int64_t k, std::int64_t n) {
    return static_cast<std::size_t>(t * d.K * d.N + (trans_b ? n * d.K + k : k * d.N + n));
  };
  auto ic = [&](std::int64_t t, std::int64_t m, std::int64_t n) { return static_cast<std::size_t>((t * d.M + m) * d.N + n); };
  if (da) {
    std::vector<double> g(av.size(), 0.0);
    for (std::int64_t t = 0; t < d.batch; ++t)
      for (std::int64_t m = 0; m < d.M; ++m)
        for (std::int64_t k = 0; k < d.K; ++k) {
          double s = 0;
          for (std::int64_t n = 0; n < d.N; ++n) s += gv[ic(t, m, n)] * bv[ib(t, k, n)];
          g[ia(t, m, k)] = alpha * s;
        }
    accumulate(da, g);
  }
  if (db) {
    std::vector<double> g(bv.size(), 0.0);
    for (std::int64_t t = 0; t < d.batch; ++t)
      for (std::int64_t k = 0; k < d.K; ++k)
        for (std::int64_t n = 0; n < d.N; ++n) {
          double s = 0;
          for (std::int64_t m = 0; m < d.M; ++m) s += av[ia(t, m, k)] * gv[ic(t, m, n)];
          g[ib(t, k, n)] = alpha * s;
        }
    accumulate(db, g);
  }
}

}  // namespace backend_reference
