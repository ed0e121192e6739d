// backend/onednn: linear (x·W^T + b with a fused activation) and batched matmul on the cached
// oneDNN matmul primitives (gemm), forward and backward side by side.

#include <algorithm>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

using ablate::Activation;

namespace {
// Whether dw[O, I] += g^T·x runs into cache-set aliasing in oneDNN 2.6's AVX2 sgemm: one side a
// power-of-two multiple of 1024 floats (4 KiB rows), the other at most 256. Measured on Zen 3 with
// 2048 rows (2 threads): 65-85 GFLOP/s for O x I = 1024 x 256, 256 x 1024, 2048 x 256, 256 x 2048,
// 126-148 with both operands copied to rows padded by 16 floats (the copy included); shapes
// such as 2048 x 512, 1536 x 512 or 768 x 256 run at 120-160 either way. With AVX-512 (its own
// sgemm kernels) the copies do not pay: on Zen 5 config A's linear backward took 0.6-2.1 ms a step
// longer with them in 7 of 8 alternating profiles (bench/README.md), so there they are skipped
// (other AVX-512 CPUs: unmeasured).
bool aliasing_shape(std::int64_t O, std::int64_t I) {
  const std::int64_t lo = std::min(O, I), hi = std::max(O, I);
  return !cpu_has_avx512() && lo <= 256 && hi >= 1024 && hi % 1024 == 0 && (hi & (hi - 1)) == 0;
}

// The gradient at pre, g[N, O] = grad(i) for element i = r O + j, into gs (when non-null), and db's
// column sums of g into dbs (when non-null), in one pass over the rows; the column sums in fixed
// chunks (deterministic). `grad` holds its pointers by value, and each row loop reads them from a
// local copy (kernels.hpp, put_row: no lane-by-lane pointer loads).
template <class G, class F>
void grad_rows(G* gs, float* dbs, float* partial, std::int64_t N, std::int64_t O, int threads, const F& grad) {
  if (dbs) {
    chunked_column_sum(dbs, partial, N, O, threads, [gs, O, grad](std::int64_t r, float* acc) {
      const F f = grad;
      const std::int64_t i0 = r * O;
      if (gs) {
        G* gr = gs + i0;
#pragma omp simd
        for (std::int64_t j = 0; j < O; ++j) {
          const float v = f(i0 + j);
          st(gr, j, v);
          acc[j] += v;
        }
      } else {
#pragma omp simd
        for (std::int64_t j = 0; j < O; ++j) acc[j] += f(i0 + j);
      }
    });
    return;
  }
  const std::int64_t n = N * O;
#pragma omp parallel num_threads(team_size(n, threads))
  {
    const F f = grad;
#pragma omp for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) st(gs, i, f(i));
  }
}
// grad_rows with g stored as g_dtype: bf16 where the GEMMs take it as bf16 anyway, else f32.
template <class F>
void store_grad(void* gs, DType g_dtype, float* dbs, float* partial, std::int64_t N, std::int64_t O, int threads, const F& grad) {
  if (g_dtype == DType::BF16)
    grad_rows(static_cast<bf16_t*>(gs), dbs, partial, N, O, threads, grad);
  else
    grad_rows(static_cast<float*>(gs), dbs, partial, N, O, threads, grad);
}
}  // namespace

// ------------------------------------------------------------------------------------------
// linear: y[N, O] = act(x[N, I] · w[O, I]^T + b[O]) — forward and backward

void OnednnBackend::do_linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, Activation act) {
  const char* op = "linear_forward";
  const std::int64_t O = w.shape()[0], I = w.shape()[1], N = x.shape().rows();
  const MatView xv = view_of(x, 1, N, I, false), wv = view_of(w, 1, I, O, true);  // w^T: [I, O] stored [O, I]
  // ReLU runs as a oneDNN post-op; GELU/SiLU run as our own vectorised pass afterwards (measured
  // faster here than oneDNN 2.6's gelu post-op on AVX2), in place on y when `pre` is not kept.
  if (!pre) {
    const bool fuse = act == Activation::None || act == Activation::ReLU;
    gemm(y.raw(), y.dtype(), xv, wv, 1.0f, false, b, fuse ? act : Activation::None, op);
    if (!fuse) activation_forward(y, y, act);
    return;
  }
  gemm(pre->raw(), pre->dtype(), xv, wv, 1.0f, false, b, Activation::None, op);
  activation_forward(y, *pre, act);
}

template <class Pass>
void OnednnBackend::linear_gemm_grads(const char* op, Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                      const Tensor& w, GradStore dx_store, bool g_is_dy, Pass&& pass) {
  const std::int64_t O = w.shape()[0], I = w.shape()[1], N = x.shape().rows();
  MatView g = view_of(dy, 1, N, O, false);
  // g is kept as bf16 when the GEMMs below take it as bf16 anyway (bf16 values, bf16 instructions).
  const DType g_dtype = native_bf16_ && x.dtype() == DType::BF16 ? DType::BF16 : DType::F32;
  void* gs = !g_is_dy && (dx || dw) ? scratch(kLinG, static_cast<std::size_t>(N * O) * ablate::dtype_size(g_dtype)) : nullptr;
  float* dbs = db ? scratch_f32(kSums, O) : nullptr;
  if (gs || dbs) {
    set_threads();
    pass(gs, g_dtype, dbs, db ? scratch_f32(kPartial, std::min<std::int64_t>(N, 64) * O) : nullptr);
    if (gs) g = MatView{gs, g_dtype, 1, N, O, false};
  }
  // (an sgemm problem: bf16 operands on bf16 instructions take the matmul primitive instead)
  const bool pad = aliasing_shape(O, I) && (dx || dw) && g_dtype == DType::F32;
  if (pad) g = padded(g, kPadA);
  // dx[N, I] += g[N, O] · w[O, I]  (= for Write)
  if (dx)
    gemm(dx->raw(), dx->dtype(), g, view_of(w, 1, O, I, false), 1.0f, dx_store == GradStore::Add, nullptr, Activation::None, op);
  // dw[O, I] += g^T[O, N] · x[N, I]
  if (dw) {
    const MatView xv = pad ? padded(view_of(x, 1, N, I, false), kPadB) : view_of(x, 1, N, I, false);
    MatView gt = g;
    gt.rows = O;
    gt.cols = N;
    gt.trans = true;
    gemm(dw->raw(), dw->dtype(), gt, xv, 1.0f, true, nullptr, Activation::None, op);
  }
  if (db)
    with_float(op, *db, [&](auto* p) {
#pragma omp simd
      for (std::int64_t j = 0; j < O; ++j) st(p, j, ld(p, j) + dbs[j]);
    });
}

// g = dy ⊙ act'(pre or y) (dy itself when act is None, with no pass unless db wants its sums),
// then the GEMMs of linear_gemm_grads.
void OnednnBackend::do_linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                                       const Tensor* pre, const Tensor& y, Activation act, GradStore dx_store) {
  const char* op = "linear_backward";
  if (!dx && !dw && !db) return;
  const std::int64_t N = x.shape().rows(), O = w.shape()[0];
  const Tensor* src = act == Activation::ReLU && !pre ? &y : pre;  // relu' from y: y > 0 <=> pre > 0
  if (act == Activation::None) {
    linear_gemm_grads(op, dx, dw, db, dy, x, w, dx_store, true, [&](void* gs, DType g_dtype, float* dbs, float* partial) {
      with_float(op, dy, [&](const auto* d) {
        store_grad(gs, g_dtype, dbs, partial, N, O, threads_, [d](std::int64_t i) { return ld(d, i); });
      });
    });
    return;
  }
  linear_gemm_grads(op, dx, dw, db, dy, x, w, dx_store, false, [&](void* gs, DType g_dtype, float* dbs, float* partial) {
    with_floats(op, std::tie(dy, *src), [&](const auto* d, const auto* sp) {
      with_act(act, [&](auto tag) {
        constexpr Activation A = decltype(tag)::value;
        store_grad(gs, g_dtype, dbs, partial, N, O, threads_,
                   [d, sp](std::int64_t i) { return ld(d, i) * act_bwd<A>(ld(sp, i)); });
      });
    });
  });
}

// One pass after the GEMM (which leaves pre, or relu(pre) from its post-op, in y): y = act(pre) as
// linear_forward stores it, times the dropout scale; slope = act'(pre) times the keep indicator.
void OnednnBackend::do_linear_dropout_forward(Tensor& y, Tensor* slope, const Tensor& x, const Tensor& w, const Tensor* b,
                                              Activation act, float p, const ablate::RngKey& rng) {
  const char* op = "linear_dropout_forward";
  const std::int64_t O = w.shape()[0], I = w.shape()[1], N = x.shape().rows();
  const Activation fused = act == Activation::ReLU ? act : Activation::None;
  gemm(y.raw(), y.dtype(), view_of(x, 1, N, I, false), view_of(w, 1, I, O, true), 1.0f, false, b, fused, op);
  set_threads();
  float* const sl = slope ? slope->data<float>() : nullptr;
  with_float(op, y, [&](auto* yp) {
    with_act(act, [&](auto tag) {
      constexpr Activation A = decltype(tag)::value;
      for_each_keep(N * O, p, rng, threads_, [yp, sl](std::int64_t i0, std::int64_t len, const float* m) {
        auto* yr = yp + i0;
        if (sl) {
          float* sr = sl + i0;
#pragma omp simd
          for (std::int64_t j = 0; j < len; ++j) {
            const float z = ld(yr, j);
            sr[j] = act_bwd<A>(z) * (m[j] > 0.0f ? 1.0f : 0.0f);
            st(yr, j, stored_as(yr, act_fwd<A>(z)) * m[j]);
          }
        } else {
#pragma omp simd
          for (std::int64_t j = 0; j < len; ++j) st(yr, j, stored_as(yr, act_fwd<A>(ld(yr, j))) * m[j]);
        }
      });
    });
  });
}

// g = h ⊙ slope (ReLU without slope: h where y > 0, else 0 · dy), h = dy / (1 - p) as
// dropout_forward stores it; then the GEMMs of linear_gemm_grads.
void OnednnBackend::do_linear_dropout_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                               const Tensor& w, const Tensor* slope, const Tensor& y, Activation, float p,
                                               GradStore dx_store) {
  const char* op = "linear_dropout_backward";
  if (!dx && !dw && !db) return;
  const float inv = keep_inv(p);
  const std::int64_t N = x.shape().rows(), O = w.shape()[0];
  linear_gemm_grads(op, dx, dw, db, dy, x, w, dx_store, false, [&](void* gs, DType g_dtype, float* dbs, float* partial) {
    if (slope) {
      const float* s = slope->data<float>();
      with_float(op, dy, [&](const auto* d) {
        store_grad(gs, g_dtype, dbs, partial, N, O, threads_,
                   [d, s, inv](std::int64_t i) { return stored_as(d, ld(d, i) * inv) * s[i]; });
      });
      return;
    }
    with_floats(op, std::tie(dy, y), [&](const auto* d, const auto* yp) {
      store_grad(gs, g_dtype, dbs, partial, N, O, threads_, [d, yp, inv](std::int64_t i) {
        const float v = ld(d, i);
        return ld(yp, i) > 0.0f ? stored_as(d, v * inv) : v * 0.0f;
      });
    });
  });
}

// ------------------------------------------------------------------------------------------
// batched matmul: c[Bt, M, N] = alpha * op(a) · op(b) — forward and backward

namespace {
struct MatmulDims {
  std::int64_t Bt, M, K, N;
};
// The sizes of op(a) · op(b), whose shapes ablate::contract has checked.
MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  const std::int64_t a0 = a.shape()[ra - 2], a1 = a.shape()[ra - 1], b0 = b.shape()[rb - 2], b1 = b.shape()[rb - 1];
  MatmulDims d{};
  d.M = ta ? a1 : a0;
  d.K = ta ? a0 : a1;
  d.N = tb ? b0 : b1;
  d.Bt = a.numel() / std::max<std::int64_t>(a0 * a1, 1);
  return d;
}
}  // namespace

void OnednnBackend::do_matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) {
  const char* op = "matmul_forward";
  const MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
  gemm(c.raw(), c.dtype(), view_of(a, d.Bt, d.M, d.K, trans_a), view_of(b, d.Bt, d.K, d.N, trans_b), alpha, false, nullptr,
       Activation::None, op);
}

void OnednnBackend::do_matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a,
                                       bool trans_b, float alpha) {
  const char* op = "matmul_backward";
  const MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
  const std::int64_t Bt = d.Bt, M = d.M, K = d.K, N = d.N;
  if (da) {
    if (!trans_a)  // da[M, K] += alpha dc[M, N] · op(b)^T[N, K]
      gemm(da->raw(), da->dtype(), view_of(dc, Bt, M, N, false), view_of(b, Bt, N, K, !trans_b), alpha, true, nullptr,
           Activation::None, op);
    else  // da[K, M] += alpha op(b)[K, N] · dc^T[N, M]
      gemm(da->raw(), da->dtype(), view_of(b, Bt, K, N, trans_b), view_of(dc, Bt, N, M, true), alpha, true, nullptr,
           Activation::None, op);
  }
  if (db) {
    if (!trans_b)  // db[K, N] += alpha op(a)^T[K, M] · dc[M, N]
      gemm(db->raw(), db->dtype(), view_of(a, Bt, K, M, !trans_a), view_of(dc, Bt, M, N, false), alpha, true, nullptr,
           Activation::None, op);
    else  // db[N, K] += alpha dc^T[N, M] · op(a)[M, K]
      gemm(db->raw(), db->dtype(), view_of(dc, Bt, N, M, true), view_of(a, Bt, M, K, trans_a), alpha, true, nullptr,
           Activation::None, op);
  }
}

}  // namespace backend_onednn
