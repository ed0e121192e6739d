// Plugin backend/reference: elementwise ops (activation, add with repeat, mul, axpy, dropout)
// and the embedding gather / scatter-add, forward and backward side by side.
// Backward ops accumulate into their gradients (+=).
#include "ablate/philox.hpp"
#include "reference_backend.hpp"

namespace backend_reference {

// ---------------------------------------------------------------------------- activation
// y = act(x), any shape.
void ReferenceBackend::activation_forward(Tensor& y, const Tensor& x, Activation act) {
  const char* op = "activation_forward";
  check_value(op, "x", x);
  check_same_dtype(op, "y", y, "x", x);
  check_shape(op, "y", y, x.shape());
  std::vector<double> v = load(x);
  for (double& e : v) e = activate(act, e);
  store(y, v);
}

// dx += dy * act'(x).
void ReferenceBackend::activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) {
  const char* op = "activation_backward";
  check_value(op, "x", x);
  check_same_dtype(op, "dy", dy, "x", x);
  check_shape(op, "dy", dy, x.shape());
  check_grad(op, "dx", dx, "x", x, false);
  const std::vector<double> xv = load(x);
  std::vector<double> g = load(dy);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] *= activate_grad(act, xv[i]);
  accumulate(&dx, g);
}

// ---------------------------------------------------------------------------- add
// y = alpha * a + beta * b; b repeats over a's leading elements (b.numel() divides a.numel()).
void ReferenceBackend::add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const char* op = "add_forward";
  check_value(op, "a", a);
  check_same_dtype(op, "b", b, "a", a);
  check_same_dtype(op, "y", y, "a", a);
  check_shape(op, "y", y, a.shape());
  if (b.numel() == 0 || a.numel() % b.numel() != 0)
    fail(op, "b " + b.str() + " must have a number of elements dividing that of a " + a.str());
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> yv(av.size());
  for (std::size_t i = 0; i < av.size(); ++i) yv[i] = alpha * av[i] + beta * bv[i % bv.size()];
  store(y, yv);
}

// da += alpha * dy; db += beta * (dy summed over the repeats). da/db may be F32 for bf16 dy.
void ReferenceBackend::add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  const char* op = "add_backward";
  check_value(op, "dy", dy);
  if (da) check_grad(op, "da", *da, "dy", dy, true);
  if (db) {
    check_value(op, "db", *db);
    if (db->numel() == 0 || dy.numel() % db->numel() != 0)
      fail(op, "db " + db->str() + " must have a number of elements dividing that of dy " + dy.str());
    if (db->dtype() != dy.dtype() && db->dtype() != DType::F32)
      fail(op, "db " + db->str() + " must be f32 or dy's dtype " + dy.str());
  }
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
void ReferenceBackend::mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "mul_forward";
  check_value(op, "a", a);
  check_same_dtype(op, "b", b, "a", a);
  check_same_dtype(op, "y", y, "a", a);
  check_shape(op, "y", y, a.shape());
  if (b.numel() == 0 || a.numel() % b.numel() != 0)
    fail(op, "b " + b.str() + " must have a number of elements dividing that of a " + a.str());
  const std::vector<double> av = load(a), bv = load(b);
  std::vector<double> yv(av.size());
  for (std::size_t i = 0; i < av.size(); ++i) yv[i] = av[i] * bv[i % bv.size()];
  store(y, yv);
}

// da += dy * b (repeated); db += (dy * a) summed over the repeats.
void ReferenceBackend::mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  check_value(op, "a", a);
  check_same_dtype(op, "b", b, "a", a);
  check_same_dtype(op, "dy", dy, "a", a);
  check_shape(op, "dy", dy, a.shape());
  if (b.numel() == 0 || a.numel() % b.numel() != 0)
    fail(op, "b " + b.str() + " must have a number of elements dividing that of a " + a.str());
  if (da) check_grad(op, "da", *da, "a", a, true);
  if (db) check_grad(op, "db", *db, "b", b, true);
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
void ReferenceBackend::axpy(Tensor& y, const Tensor& x, float alpha) {
  const char* op = "axpy";
  check_value(op, "x", x);
  check_value(op, "y", y);
  check_numel(op, "y", y, x.numel());
  std::vector<double> d = load(x);
  for (double& e : d) e *= alpha;
  accumulate(&y, d);
}

// ---------------------------------------------------------------------------- dropout
// y = x * keep / (1 - p) with keep = dropout_keep(rng, flat index, p); any shape.
namespace {

void check_dropout(const char* op, const char* out_name, const Tensor& out, const char* in_name, const Tensor& in,
                   float p) {
  check_value(op, in_name, in);
  check_value(op, out_name, out);
  check_shape(op, out_name, out, in.shape());
  if (!(p >= 0.0f && p < 1.0f)) fail(op, "p " + std::to_string(p) + " must be in [0, 1)");
}

std::vector<double> dropped(const std::vector<double>& v, float p, const ablate::RngKey& rng) {
  std::vector<double> out(v.size());
  const double scale = 1.0 / (1.0 - static_cast<double>(p));
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = (p <= 0.0f || ablate::dropout_keep(rng, i, p)) ? v[i] * (p > 0.0f ? scale : 1.0) : 0.0;
  return out;
}

}  // namespace

void ReferenceBackend::dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_forward";
  check_dropout(op, "y", y, "x", x, p);
  if (y.dtype() != x.dtype()) fail(op, "y " + y.str() + " must have the dtype of x " + x.str());
  store(y, dropped(load(x), p, rng));
}

// dx += dy * keep / (1 - p), the same mask as forward.
void ReferenceBackend::dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_backward";
  check_dropout(op, "dx", dx, "dy", dy, p);
  if (dx.dtype() != dy.dtype()) fail(op, "dx " + dx.str() + " must have the dtype of dy " + dy.str());
  accumulate(&dx, dropped(load(dy), p, rng));
}

// ---------------------------------------------------------------------------- embedding
// y: [N, D] = table[ids[N], :]; ids: I32 [N] (any shape) in [0, V); table: [V, D].
namespace {

std::vector<std::int32_t> checked_ids(const char* op, const Tensor& ids, std::int64_t V) {
  check_dtype(op, "ids", ids, DType::I32);
  std::vector<std::int32_t> v = load_i32(ids);
  for (std::size_t n = 0; n < v.size(); ++n)
    if (v[n] < 0 || v[n] >= V)
      fail(op, "ids[" + std::to_string(n) + "] = " + std::to_string(v[n]) + " is outside [0, V = " + std::to_string(V) + ")");
  return v;
}

}  // namespace

void ReferenceBackend::embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  const char* op = "embedding_forward";
  check_value(op, "table", table);
  check_same_dtype(op, "y", y, "table", table);
  if (table.shape().rank() != 2) fail(op, "table " + table.str() + " must be [V, D]");
  const std::int64_t V = table.shape()[0], D = table.shape()[1];
  const std::vector<std::int32_t> idv = checked_ids(op, ids, V);
  const auto N = static_cast<std::int64_t>(idv.size());
  if (y.shape().rows() != N || y.shape().last() != D)
    fail(op, "y " + y.str() + " must be [N, D] for ids " + ids.str() + " and table " + table.str());
  const std::vector<double> tv = load(table);
  std::vector<double> yv(static_cast<std::size_t>(N * D));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < D; ++j)
      yv[static_cast<std::size_t>(n * D + j)] = tv[static_cast<std::size_t>(idv[static_cast<std::size_t>(n)] * D + j)];
  store(y, yv);
}

// dtable[ids[n], :] += dy[n, :] (repeated ids add up). dtable may be F32 for bf16 dy.
void ReferenceBackend::embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const char* op = "embedding_backward";
  check_value(op, "dy", dy);
  check_value(op, "dtable", dtable);
  if (dtable.dtype() != dy.dtype() && dtable.dtype() != DType::F32)
    fail(op, "dtable " + dtable.str() + " must be f32 or dy's dtype " + dy.str());
  if (dtable.shape().rank() != 2) fail(op, "dtable " + dtable.str() + " must be [V, D]");
  const std::int64_t V = dtable.shape()[0], D = dtable.shape()[1];
  const std::vector<std::int32_t> idv = checked_ids(op, ids, V);
  const auto N = static_cast<std::int64_t>(idv.size());
  if (dy.shape().rows() != N || dy.shape().last() != D)
    fail(op, "dy " + dy.str() + " must be [N, D] for ids " + ids.str() + " and dtable " + dtable.str());
  const std::vector<double> g = load(dy);
  std::vector<double> d(static_cast<std::size_t>(V * D), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t j = 0; j < D; ++j)
      d[static_cast<std::size_t>(idv[static_cast<std::size_t>(n)] * D + j)] += g[static_cast<std::size_t>(n * D + j)];
  accumulate(&dtable, d);
}

}  // namespace backend_reference
