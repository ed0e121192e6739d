// Plugin backend/reference: elementwise ops (activation, add with repeat, mul, axpy, dropout)
// and the embedding gather / scatter-add, forward and backward side by side.
// Backward ops accumulate into their gradients (+=).
#include "ablate/bf16.hpp"
#include "ablate/philox.hpp"
#include "reference_backend.hpp"

namespace backend_reference {

// ---------------------------------------------------------------------------- activation
// y = act(x), any shape.
void ReferenceBackend::do_activation_forward(Tensor& y, const Tensor& x, Activation act) {
  std::vector<double> v = load(x);
  for (double& e : v) e = activate(act, e);
  store(y, v);
}

// dx += dy * act'(x).
void ReferenceBackend::do_activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) {
  const std::vector<double> xv = load(x);
  std::vector<double> g = load(dy);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] *= activate_grad(act, xv[i]);
  accumulate(&dx, g);
}

// ---------------------------------------------------------------------------- add
// y = alpha * a + beta * b; b repeats over a's leading elements (b.numel() divides a.numel()).
void ReferenceBackend::do_add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> yv(av.size());
  for (std::size_t i = 0; i < av.size(); ++i) yv[i] = alpha * av[i] + beta * bv[i % bv.size()];
  store(y, yv);
}

// da += alpha * dy; db += beta * (dy summed over the repeats). da/db may be F32 for bf16 dy.
void ReferenceBackend::do_add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  const std::vector<double> g = load(dy);
  if (da) {
    std::vector<double> d(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) d[i] = alpha * g[i];
    accumulate(da, d);
  }
  if (db) {
    std::vector<double> d(static_cast<std::size_t>(db->numel()), 0.0);
    for (std::size_t i = 0; i < g.size(); ++i) d[i % d.size()] += beta * g[i];
    accumulate(db, d);
  }
}

// ---------------------------------------------------------------------------- mul
// y = a * b[i % nb]: b of a's shape or repeating over a's leading elements.
void ReferenceBackend::do_mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> yv(av.size());
  for (std::size_t i = 0; i < av.size(); ++i) yv[i] = av[i] * bv[i % bv.size()];
  store(y, yv);
}

// da += dy * b (repeated); db += (dy * a) summed over the repeats.
void ReferenceBackend::do_mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const std::vector<double> av = load(a), bv = load(b), g = load(dy);
  if (da) {
    std::vector<double> d(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) d[i] = g[i] * bv[i % bv.size()];
    accumulate(da, d);
  }
  if (db) {
    std::vector<double> d(bv.size(), 0.0);
    for (std::size_t i = 0; i < g.size(); ++i) d[i % d.size()] += g[i] * av[i];
    accumulate(db, d);
  }
}

// ---------------------------------------------------------------------------- axpy
// y += alpha * x (same numel; dtypes may differ).
void ReferenceBackend::do_axpy(Tensor& y, const Tensor& x, float alpha) {
  std::vector<double> d = load(x);
  for (double& e : d) e *= alpha;
  accumulate(&y, d);
}

// ---------------------------------------------------------------------------- dropout
// y = x * keep / (1 - p) with keep = dropout_keep(rng, flat index, p); any shape.
bool kept(const ablate::RngKey& rng, std::size_t i, float p) { return p <= 0.0f || ablate::dropout_keep(rng, i, p); }

std::vector<double> dropped(const std::vector<double>& v, float p, const ablate::RngKey& rng) {
  std::vector<double> out(v.size());
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = kept(rng, i, p) ? v[i] * (p > 0.0f ? scale : 1.0) : 0.0;
  return out;
}

void ReferenceBackend::do_dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  store(y, dropped(load(x), p, rng));
}

// dx += dy * keep / (1 - p), the same mask as forward.
void ReferenceBackend::do_dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  accumulate(&dx, dropped(load(dy), p, rng));
}

// y = x + d, d = dropout_forward(h) as that op stores it: rounded to the dtype before the add.
void ReferenceBackend::do_dropout_add_forward(Tensor& y, const Tensor& x, const Tensor& h, float p, const ablate::RngKey& rng) {
  std::vector<double> yv = dropped(load(h), p, rng);
  const std::vector<double> xv = load(x);
  for (std::size_t i = 0; i < yv.size(); ++i) yv[i] = xv[i] + rounded(yv[i], h.dtype());
  store(y, yv);
}

// ---------------------------------------------------------------------------- embedding
// y: [N, D] = table[ids[N], :]; ids: I32 [N] (any shape) in [0, V); table: [V, D].
namespace {

// ids read, and the reference's own check of their values: in [0, V).
std::vector<std::int32_t> checked_ids(const char* op, const Tensor& ids, std::int64_t V) {
  std::vector<std::int32_t> v = load_i32(ids);
  for (std::size_t n = 0; n < v.size(); ++n)
    if (v[n] < 0 || v[n] >= V)
      fail(op, "ids[" + std::to_string(n) + "] = " + std::to_string(v[n]) + " is outside [0, V = " + std::to_string(V) + ")");
  return v;
}

}  // namespace

void ReferenceBackend::do_embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  const std::int64_t V = table.shape()[0], D = table.shape()[1];
  const std::vector<std::int32_t> idv = checked_ids("embedding_forward", ids, V);
  const auto N = static_cast<std::int64_t>(idv.size());
  const std::vector<double> tv = load(table);
  std::vector<double> yv(static_cast<std::size_t>(N * D));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < D; ++j)
      yv[static_cast<std::size_t>(n * D + j)] = tv[static_cast<std::size_t>(idv[static_cast<std::size_t>(n)] * D + j)];
  store(y, yv);
}

// dtable[ids[n], :] += dy[n, :] (repeated ids add up). dtable may be F32 for bf16 dy.
void ReferenceBackend::do_embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const std::int64_t V = dtable.shape()[0], D = dtable.shape()[1];
  const std::vector<std::int32_t> idv = checked_ids("embedding_backward", ids, V);
  const auto N = static_cast<std::int64_t>(idv.size());
  const std::vector<double> g = load(dy);
  std::vector<double> d(static_cast<std::size_t>(V * D), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < D; ++j)
      d[static_cast<std::size_t>(idv[static_cast<std::size_t>(n)] * D + j)] += g[static_cast<std::size_t>(n * D + j)];
  accumulate(&dtable, d);
}

}  // namespace backend_reference
