// backend/onednn: the elementwise ops as OpenMP + SIMD C++: activations, add and mul (b repeating
// over a's leading elements), axpy, dropout (Philox, the same masks as every backend) and the
// embedding gather/scatter-add, forward and backward side by side.

#include <algorithm>
#include <string>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

using ablate::Activation;

namespace {

// Calls f(i, j) for every element i = r * nb + j of reps repeats of nb elements (a tensor whose
// partner repeats over its leading elements), split across threads.
template <class F>
void for_each_repeat(std::int64_t reps, std::int64_t nb, int threads, F&& f) {
#pragma omp parallel for num_threads(team_size({reps, nb}, threads)) schedule(static) collapse(2)
  for (std::int64_t r = 0; r < reps; ++r)
    for (std::int64_t j = 0; j < nb; ++j) f(r * nb + j, j);
}

// db[j] += scale * the sum over the reps rows of row(r, acc) (which adds row r's terms into acc),
// in chunked_column_sum's fixed order; sums [nb] and partial are the caller's scratch.
template <class Row>
void add_repeat_sums(const char* op, Tensor& db, float scale, std::int64_t reps, float* sums, float* partial, int threads,
                     Row&& row) {
  const std::int64_t nb = db.numel();
  chunked_column_sum(sums, partial, reps, nb, threads, row);
  with_float(op, db, [&](auto* p) {
#pragma omp parallel for simd num_threads(team_size(nb, threads)) schedule(static)
    for (std::int64_t j = 0; j < nb; ++j) st(p, j, ld(p, j) + scale * sums[j]);
  });
}

}  // namespace

// ------------------------------------------------------------------------------------------
// elementwise: activation, add (with repeat-broadcast), mul, axpy

void OnednnBackend::do_activation_forward(Tensor& y, const Tensor& x, Activation act) {
  const char* op = "activation_forward";
  const std::int64_t n = x.numel();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
    with_act(act, [&](auto tag) {
      constexpr Activation A = decltype(tag)::value;
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) st(yp, i, act_fwd<A>(ld(xp, i)));
    });
  });
}

void OnednnBackend::do_activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) {
  const char* op = "activation_backward";
  const std::int64_t n = x.numel();
  set_threads();
  with_floats(op, std::tie(x, dy, dx), [&](const auto* xp, const auto* dyp, auto* dxp) {
    with_act(act, [&](auto tag) {
      constexpr Activation A = decltype(tag)::value;
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) st(dxp, i, ld(dxp, i) + ld(dyp, i) * act_bwd<A>(ld(xp, i)));
    });
  });
}

void OnednnBackend::do_add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  const char* op = "add_forward";
  const std::int64_t n = a.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  with_floats(op, std::tie(a, b, y), [&](const auto* ap, const auto* bp, auto* yp) {
    for_each_repeat(reps, nb, threads_, [&](std::int64_t i, std::int64_t j) { st(yp, i, alpha * ld(ap, i) + beta * ld(bp, j)); });
  });
}

// da += alpha * dy; db += beta * (dy summed over the repeats).
void OnednnBackend::do_add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  const char* op = "add_backward";
  const std::int64_t n = dy.numel();
  set_threads();
  if (da) {
    axpy(*da, dy, alpha);
  }
  if (db) {
    const std::int64_t nb = db->numel();
    if (n == 0) return;
    const std::int64_t reps = n / nb;
    if (reps == 1) {
      axpy(*db, dy, beta);
      return;
    }
    float* sums = scratch_f32(kSums, nb);
    float* partial = scratch_f32(kPartial, std::min<std::int64_t>(reps, 64) * nb);
    with_float(op, dy, [&](const auto* dyp) {
      add_repeat_sums(op, *db, beta, reps, sums, partial, threads_, [&](std::int64_t r, float* acc) {
        const auto* row = dyp + r * nb;
#pragma omp simd
        for (std::int64_t j = 0; j < nb; ++j) acc[j] += ld(row, j);
      });
    });
  }
}

// y = a * b, b repeating over a's leading elements (reps of nb): a gate per channel or scalar.
void OnednnBackend::do_mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  const char* op = "mul_forward";
  const std::int64_t n = a.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  with_floats(op, std::tie(a, b, y), [&](const auto* ap, const auto* bp, auto* yp) {
    for_each_repeat(reps, nb, threads_, [&](std::int64_t i, std::int64_t j) { st(yp, i, ld(ap, i) * ld(bp, j)); });
  });
}

// da += dy * b (repeated); db += (dy * a) summed over the repeats.
void OnednnBackend::do_mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  const std::int64_t n = dy.numel(), nb = b.numel();
  if (n == 0) return;
  const std::int64_t reps = n / nb;
  set_threads();
  if (da) {
    with_floats(op, std::tie(dy, b, *da), [&](const auto* dyp, const auto* bp, auto* dp) {
      for_each_repeat(reps, nb, threads_, [&](std::int64_t i, std::int64_t j) { st(dp, i, ld(dp, i) + ld(dyp, i) * ld(bp, j)); });
    });
  }
  if (!db) return;
  if (reps == 1) {  // same shapes: elementwise
    with_floats(op, std::tie(dy, a, *db), [&](const auto* dyp, const auto* ap, auto* dp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) st(dp, i, ld(dp, i) + ld(dyp, i) * ld(ap, i));
    });
    return;
  }
  float* sums = scratch_f32(kSums, nb);
  float* partial = scratch_f32(kPartial, std::min<std::int64_t>(reps, 64) * nb);
  with_floats(op, std::tie(dy, a), [&](const auto* dyp, const auto* ap) {
    add_repeat_sums(op, *db, 1.0f, reps, sums, partial, threads_, [&](std::int64_t r, float* acc) {
      const auto* g = dyp + r * nb;
      const auto* x = ap + r * nb;
#pragma omp simd
      for (std::int64_t j = 0; j < nb; ++j) acc[j] += ld(g, j) * ld(x, j);
    });
  });
}

void OnednnBackend::do_axpy(Tensor& y, const Tensor& x, float alpha) {
  const char* op = "axpy";
  const std::int64_t n = x.numel();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) st(yp, i, ld(yp, i) + alpha * ld(xp, i));
  });
}

// ------------------------------------------------------------------------------------------
// dropout: y = x * keep / (1 - p), keep = dropout_keep(rng, i, p) — forward and backward (dx +=)

void OnednnBackend::do_dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_forward";
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
    for_each_keep(x.numel(), p, rng, threads_, [&](std::int64_t i0, std::int64_t len, const float* m) {
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) st(yp, i0 + j, ld(xp, i0 + j) * m[j]);
    });
  });
}

void OnednnBackend::do_dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_backward";
  set_threads();
  with_floats(op, std::tie(dy, dx), [&](const auto* dyp, auto* dxp) {
    for_each_keep(dy.numel(), p, rng, threads_, [&](std::int64_t i0, std::int64_t len, const float* m) {
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) st(dxp, i0 + j, ld(dxp, i0 + j) + ld(dyp, i0 + j) * m[j]);
    });
  });
}

// y = x + dropout(h) as dropout_forward stores it, in one pass (the residual add of a block).
void OnednnBackend::do_dropout_add_forward(Tensor& y, const Tensor& x, const Tensor& h, float p, const ablate::RngKey& rng) {
  const char* op = "dropout_add_forward";
  set_threads();
  with_floats(op, std::tie(x, h, y), [&](const auto* xp, const auto* hp, auto* yp) {
    for_each_keep(h.numel(), p, rng, threads_, [&](std::int64_t i0, std::int64_t len, const float* m) {
#pragma omp simd
      for (std::int64_t j = 0; j < len; ++j) st(yp, i0 + j, ld(xp, i0 + j) + stored_as(hp, ld(hp, i0 + j) * m[j]));
    });
  });
}

// ------------------------------------------------------------------------------------------
// embedding: y[N, D] = table[ids[N], :]; backward dtable[V, D] += scatter(dy)

namespace {
void check_ids(const char* op, const std::int32_t* ids, std::int64_t n, std::int64_t V) {
  for (std::int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= V)
      fail(op, "ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is outside [0, " + std::to_string(V) + ")");
}
}  // namespace

void OnednnBackend::do_embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  const char* op = "embedding_forward";
  const std::int64_t N = ids.numel(), V = table.shape()[0], D = table.shape()[1];
  const std::int32_t* id = ids.data<std::int32_t>();
  check_ids(op, id, N, V);
  set_threads();
  with_floats(op, std::tie(table, y), [&](const auto* tp, auto* yp) {
#pragma omp parallel for num_threads(team_size({N, D}, threads_)) schedule(static)
    for (std::int64_t r = 0; r < N; ++r) {
      const auto* src = tp + static_cast<std::int64_t>(id[r]) * D;
      auto* dst = yp + r * D;
#pragma omp simd
      for (std::int64_t j = 0; j < D; ++j) st(dst, j, ld(src, j));
    }
  });
}

// Deterministic scatter-add: threads own disjoint column slices and walk the rows in order.
void OnednnBackend::do_embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  const char* op = "embedding_backward";
  const std::int64_t N = ids.numel(), V = dtable.shape()[0], D = dtable.shape()[1];
  const std::int32_t* id = ids.data<std::int32_t>();
  check_ids(op, id, N, V);
  set_threads();
  const std::int64_t slices = std::min<std::int64_t>(threads_, std::max<std::int64_t>(D / 16, 1));
  with_floats(op, std::tie(dy, dtable), [&](const auto* dyp, auto* tp) {
#pragma omp parallel for num_threads(team_size({N, D}, threads_)) schedule(static)
    for (std::int64_t s = 0; s < slices; ++s) {
      const std::int64_t c0 = D * s / slices, c1 = D * (s + 1) / slices;
      for (std::int64_t r = 0; r < N; ++r) {
        const auto* src = dyp + r * D;
        auto* dst = tp + static_cast<std::int64_t>(id[r]) * D;
#pragma omp simd
        for (std::int64_t j = c0; j < c1; ++j) st(dst, j, ld(dst, j) + ld(src, j));
      }
    }
  });
}

}  // namespace backend_onednn
