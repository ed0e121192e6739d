// Plugin backend/reference: linear (x·W^T + b with a fused activation) and batched matmul,
// forward and backward side by side. Triple loops in double; gradients accumulate (+=).
#include "reference_backend.hpp"

#include <algorithm>

namespace backend_reference {

// ---------------------------------------------------------------------------- linear
// y: [N, O] (any leading dims), pre: [N, O] or null, x: [N, I], w: [O, I], b: [O] or null.
namespace {
// z[N, O] = x·w^T + b, in double.
std::vector<double> affine(const Tensor& x, const Tensor& w, const Tensor* b) {
  const std::int64_t N = x.shape().rows(), I = x.shape().last(), O = w.shape()[0];
  const std::vector<double> xv = load(x), wv = load(w);
  const std::vector<double> bv = b ? load(*b) : std::vector<double>(static_cast<std::size_t>(O), 0.0);
  std::vector<double> z(static_cast<std::size_t>(N * O));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      double s = bv[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < I; ++i) s += xv[static_cast<std::size_t>(n * I + i)] * wv[static_cast<std::size_t>(o * I + i)];
      z[static_cast<std::size_t>(n * O + o)] = s;
    }
  return z;
}

// out[o(r, c)] = alpha * (sum over k < K of a(r, k) * b(k, c)) for r < R, c < C: every product
// of the backward passes below, with a, b and o reading and writing through their layouts.
template <class A, class B, class O>
void product(std::vector<double>& out, std::int64_t R, std::int64_t C, std::int64_t K, A a, B b, O o, double alpha = 1.0) {
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += a(r, k) * b(k, c);
      out[o(r, c)] = alpha * s;
    }
}

// With g[N, O] = the gradient at x·w^T + b: dx[N, I] += g·w (= for Write), dw[O, I] += g^T·x,
// db[O] += sum_rows(g).
void affine_grads(Tensor* dx, Tensor* dw, Tensor* db, const std::vector<double>& g, const Tensor& x, const Tensor& w,
                  ablate::GradStore dx_store) {
  const std::int64_t N = x.shape().rows(), I = x.shape().last(), O = w.shape()[0];
  const std::vector<double> xv = load(x), wv = load(w);
  auto at = [](std::int64_t r, std::int64_t c, std::int64_t cols) { return static_cast<std::size_t>(r * cols + c); };
  auto G = [&](std::int64_t n, std::int64_t o) { return g[at(n, o, O)]; };
  auto W = [&](std::int64_t o, std::int64_t i) { return wv[at(o, i, I)]; };
  auto X = [&](std::int64_t n, std::int64_t i) { return xv[at(n, i, I)]; };
  if (dx) {  // dx[n, i] += sum_o g[n, o] w[o, i]
    std::vector<double> d(xv.size(), 0.0);
    product(d, N, I, O, G, W, [&](std::int64_t n, std::int64_t i) { return at(n, i, I); });
    accumulate(dx, d, dx_store);
  }
  if (dw) {  // dw[o, i] += sum_n g[n, o] x[n, i]
    std::vector<double> d(wv.size(), 0.0);
    const auto GT = [&](std::int64_t o, std::int64_t n) { return G(n, o); };
    product(d, O, I, N, GT, X, [&](std::int64_t o, std::int64_t i) { return at(o, i, I); });
    accumulate(dw, d);
  }
  if (db) {
    std::vector<double> d(static_cast<std::size_t>(O), 0.0);
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < O; ++o) d[static_cast<std::size_t>(o)] += g[at(n, o, O)];
    accumulate(db, d);
  }
}
}  // namespace

void ReferenceBackend::do_linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                         Activation act) {
  const std::vector<double> z = affine(x, w, b);
  std::vector<double> yv(z.size());
  if (pre != nullptr) store(*pre, z);
  for (std::size_t j = 0; j < z.size(); ++j) yv[j] = activate(act, z[j]);
  store(y, yv);
}

// g = dy ⊙ act'(pre) (ReLU: from y), then affine_grads.
void ReferenceBackend::do_linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                                          const Tensor* pre, const Tensor& y, Activation act, ablate::GradStore dx_store) {
  std::vector<double> g = load(dy);
  if (ablate::activation_needs_pre(act)) {
    const std::vector<double> z = load(*pre);
    for (std::size_t j = 0; j < g.size(); ++j) g[j] *= activate_grad(act, z[j]);
  } else if (act == Activation::ReLU) {
    const std::vector<double> yv = load(y);
    for (std::size_t j = 0; j < g.size(); ++j) g[j] *= yv[j] > 0 ? 1.0 : 0.0;
  }
  affine_grads(dx, dw, db, g, x, w, dx_store);
}

// y = dropout(act(z)) with z = x·w^T + b: act(z) rounded to y's dtype as linear_forward stores it,
// then dropout_forward's values; slope = act'(z as pre stores it) times the keep indicator.
void ReferenceBackend::do_linear_dropout_forward(Tensor& y, Tensor* slope, const Tensor& x, const Tensor& w, const Tensor* b,
                                                 Activation act, float p, const ablate::RngKey& rng) {
  const std::vector<double> z = affine(x, w, b);
  std::vector<double> a(z.size());
  for (std::size_t j = 0; j < z.size(); ++j) a[j] = rounded(activate(act, z[j]), y.dtype());
  store(y, dropped(a, p, rng));
  if (slope == nullptr) return;
  std::vector<double> s(z.size());
  for (std::size_t j = 0; j < z.size(); ++j) s[j] = activate_grad(act, rounded(z[j], y.dtype())) * (kept(rng, j, p) ? 1.0 : 0.0);
  store(*slope, s);
}

// g = h ⊙ slope (ReLU without slope: h where y > 0), h = dy / (1 - p) rounded to dy's dtype (the
// dropout gradient as dropout_forward stores it); then affine_grads.
void ReferenceBackend::do_linear_dropout_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                                  const Tensor& w, const Tensor* slope, const Tensor& y, Activation, float p,
                                                  ablate::GradStore dx_store) {
  std::vector<double> g = load(dy);
  const std::vector<double> s = slope ? load(*slope) : load(y);
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  for (std::size_t j = 0; j < g.size(); ++j) {
    const double h = rounded(g[j] * scale, dy.dtype());
    g[j] = slope ? h * s[j] : (s[j] > 0 ? h : 0.0);
  }
  affine_grads(dx, dw, db, g, x, w, dx_store);
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
  if (da) {  // dA[m, k] = alpha sum_n dC[m, n] B[k, n], per batch t
    std::vector<double> g(av.size(), 0.0);
    for (std::int64_t t = 0; t < d.batch; ++t) {
      const auto dC = [&](std::int64_t m, std::int64_t n) { return gv[ic(t, m, n)]; };
      const auto BT = [&](std::int64_t n, std::int64_t k) { return bv[ib(t, k, n)]; };
      const auto at_a = [&](std::int64_t m, std::int64_t k) { return ia(t, m, k); };
      product(g, d.M, d.K, d.N, dC, BT, at_a, alpha);
    }
    accumulate(da, g);
  }
  if (db) {  // dB[k, n] = alpha sum_m A[m, k] dC[m, n], per batch t
    std::vector<double> g(bv.size(), 0.0);
    for (std::int64_t t = 0; t < d.batch; ++t) {
      const auto AT = [&](std::int64_t k, std::int64_t m) { return av[ia(t, m, k)]; };
      const auto dC = [&](std::int64_t m, std::int64_t n) { return gv[ic(t, m, n)]; };
      const auto at_b = [&](std::int64_t k, std::int64_t n) { return ib(t, k, n); };
      product(g, d.K, d.N, d.M, AT, dC, at_b, alpha);
    }
    accumulate(db, g);
  }
}

}  // namespace backend_reference
