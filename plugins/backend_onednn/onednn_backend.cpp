// Plugin backend/onednn: the CPU compute backend on oneDNN 2.x. This file holds the plugin
// record, memory, the cached matmul primitives (gemm) and the GEMM-shaped ops: linear, batched
// matmul and attention (QK^T and PV on oneDNN, mask + softmax + dropout fused per row here).
#include "onednn_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels.hpp"

namespace backend_onednn {

using ablate::Activation;
using ablate::Shape;
using tag = dnnl::memory::format_tag;
using ddt = dnnl::memory::data_type;

// ------------------------------------------------------------------------------------------
// construction, caps, test hook

OnednnBackend::OnednnBackend(int threads)
    : threads_(threads), alloc_(ablate::HostAllocator::create()), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
  if (threads_ < 1) throw ablate::Error("backend/onednn: threads must be >= 1, got " + std::to_string(threads_));
  set_threads();
  key_.reserve(16);
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  native_bf16_ = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

OnednnBackend::~OnednnBackend() = default;

void OnednnBackend::set_threads() const {
  // oneDNN (OpenMP runtime) uses the calling thread's max-threads ICV (gemm lowers it for tiny
  // products, then restores it); our loops say num_threads.
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
}

ablate::BackendCaps OnednnBackend::caps() const {
  ablate::BackendCaps c;
  c.device = "cpu";
  c.host_addressable = true;
  c.bf16 = true;
  c.bf16_arithmetic = native_bf16_ ? "bf16 GEMMs with f32 accumulation (bf16 dot-product instructions); f32 elsewhere"
                                   : "f32 GEMMs on bf16 values widened to f32 (saves memory, not time: no bf16 "
                                     "instructions on this CPU)";
  c.deterministic = true;
  c.threads = threads_;
  return c;
}

CacheStats OnednnBackend::stats() const {
  CacheStats s;
  s.primitives_created = created_;
  s.hits = hits_;
  s.system_allocations = alloc_->stats().system_allocations;
  return s;
}

CacheStats cache_stats(const ablate::Backend& b) {
  const auto* o = dynamic_cast<const OnednnBackend*>(&b);
  if (!o) throw ablate::Error("cache_stats: not an onednn backend linked into this binary");
  return o->stats();
}

std::size_t OnednnBackend::KeyHash::operator()(const std::vector<std::int64_t>& k) const noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (const std::int64_t v : k) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
  return static_cast<std::size_t>(h);
}

void* OnednnBackend::scratch(Slot slot, std::size_t bytes) {
  auto& s = slots_[slot];
  if (!s || s->bytes < bytes) {
    s.reset();  // give the old block back before taking a bigger one
    s = alloc_->allocate(std::max<std::size_t>(bytes, 64), nullptr);
  }
  return s->data;
}

const float* OnednnBackend::as_f32(const void* data, DType dt, std::int64_t n, Slot slot) {
  if (dt == DType::F32) return static_cast<const float*>(data);
  float* out = scratch_f32(slot, n);
  const bf16_t* in = static_cast<const bf16_t*>(data);
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = ld(in, i);
  return out;
}

MatView OnednnBackend::padded(const MatView& m, Slot slot) {
  if (m.trans || m.batch != 1) fail("gemm", "internal: only a plain matrix can be padded");
  const std::int64_t rows = m.rows, cols = m.cols, ld = cols + 16;
  float* out = scratch_f32(slot, rows * ld);
  const auto copy = [&](const auto* in) {
#pragma omp parallel for num_threads(team_size(rows * cols, threads_)) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
      for (std::int64_t c = 0; c < cols; ++c) out[r * ld + c] = backend_onednn::ld(in, r * cols + c);
    }
  };
  if (m.dtype == DType::F32) copy(static_cast<const float*>(m.data));
  else copy(static_cast<const bf16_t*>(m.data));
  return MatView{out, DType::F32, 1, rows, cols, false, ld};
}

// ------------------------------------------------------------------------------------------
// memory

Tensor OnednnBackend::empty(const Shape& shape, DType dtype) {
  auto self = shared_from_this();
  return Tensor(alloc_->allocate(static_cast<std::size_t>(shape.numel()) * ablate::dtype_size(dtype), self), shape,
                dtype);
}

void OnednnBackend::fill(Tensor& y, float value) {
  ablate::contract::fill(y);
  const std::int64_t n = y.numel();
  if (y.dtype() == DType::I32) {
    auto* p = y.data<std::int32_t>();
    const auto v = static_cast<std::int32_t>(value);
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) p[i] = v;
    return;
  }
  with_float("fill", y, [&](auto* p) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) st(p, i, value);
  });
}

void OnednnBackend::copy_from_host(Tensor& dst, const void* src) {
  ablate::contract::copy_from_host(dst);
  if (dst.bytes()) std::memcpy(dst.raw(), src, dst.bytes());
}

void OnednnBackend::copy_to_host(void* dst, const Tensor& src) {
  ablate::contract::copy_to_host(src);
  if (src.bytes()) std::memcpy(dst, src.raw(), src.bytes());
}

void OnednnBackend::copy(Tensor& dst, const Tensor& src) {
  ablate::contract::copy(dst, src);
  if (dst.raw() != src.raw() && dst.bytes()) std::memcpy(dst.raw(), src.raw(), dst.bytes());
}

void OnednnBackend::synchronize() { stream_.wait(); }

// ------------------------------------------------------------------------------------------
// gemm on cached oneDNN matmul primitives

struct OnednnBackend::Prim {
  dnnl::matmul prim;
  dnnl::memory a, b, c, bias, pad;
  std::size_t pad_bytes = 0;
  bool reference = false;             // oneDNN chose its reference (unoptimised) kernel
  std::vector<dnnl_exec_arg_t> args;  // for the C execute call: no per-call map or vector
};

namespace {

dnnl::algorithm eltwise_alg(Activation act) {
  switch (act) {
    case Activation::ReLU: return dnnl::algorithm::eltwise_relu;
    case Activation::GeluErf: return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::GeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::SiLU: return dnnl::algorithm::eltwise_swish;
    case Activation::None: break;
  }
  return dnnl::algorithm::undef;
}

// [batch, rows, cols] logical dims with strides for the stored layout.
dnnl::memory::desc view_md(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans, ddt type) {
  if (batch == 1) {
    return dnnl::memory::desc({rows, cols}, type, trans ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1});
  }
  return dnnl::memory::desc({batch, rows, cols}, type,
                            trans ? dnnl::memory::dims{rows * cols, 1, rows} : dnnl::memory::dims{rows * cols, cols, 1});
}

}  // namespace

void OnednnBackend::gemm(void* c, DType c_dtype, const MatView& a, const MatView& b, float alpha, bool accumulate,
                         const Tensor* bias, Activation act, const char* op) {
  const std::int64_t batch = a.batch, M = a.rows, K = a.cols, N = b.cols;
  if (b.rows != K || b.batch != batch)
    fail(op, "internal gemm shape mismatch [" + std::to_string(a.batch) + "," + std::to_string(M) + "," +
                 std::to_string(K) + "] x [" + std::to_string(b.batch) + "," + std::to_string(b.rows) + "," +
                 std::to_string(N) + "]");
  const std::int64_t nc = batch * M * N;
  if (nc == 0) return;
  // oneDNN forks a libgomp team of the ICV's size for every matmul, however small, and spins at
  // its barriers like our loops do (see team_size; it was 2.6 of the 11 s in the measurement
  // there): products under the grain in multiply-adds run on this thread alone. The team is a
  // function of the shape (the primitive key), so a shape's result is the same on every call.
  // (oneDNN 2.6 splits K across threads for some shapes, so its bits do depend on the team.)
  // The ICV goes back to threads_ on the way out, also when oneDNN throws.
  struct IcvRestore {
    int threads;
    ~IcvRestore() {
      if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    }
  } restore{threads_};
  const int team = team_size(batch * M * N * std::max<std::int64_t>(K, 1), threads_);
  if (omp_get_max_threads() != team) omp_set_num_threads(team);
  const float* bias_f = bias ? as_f32(bias->raw(), bias->dtype(), N, kGemmBias) : nullptr;

  // bf16 values on a CPU with bf16 dot products: both operands as bf16 (an f32 one - softmax
  // probabilities, activation gradients - rounded to bf16 first, as autocast does), products
  // accumulated in f32 by oneDNN and written straight into C's dtype. Where oneDNN would only
  // offer its reference kernel for a layout, the f32 path below runs instead.
  if (native_bf16_ && K > 0 && (a.dtype == DType::BF16 || b.dtype == DType::BF16) && !a.padded_ld && !b.padded_ld) {
    Prim& p = matmul_prim(DType::BF16, c_dtype, batch, M, K, N, a.trans, b.trans, alpha, accumulate, bias != nullptr,
                          act, op);
    if (!p.reference) {
      run_matmul(p, c, as_bf16(a, kGemmA), as_bf16(b, kGemmB), bias_f, op);
      return;
    }
  }

  float* C = c_dtype == DType::F32 ? static_cast<float*>(c) : scratch_f32(kGemmC, nc);
  if (c_dtype == DType::BF16 && accumulate) {
    const bf16_t* cb = static_cast<const bf16_t*>(c);
#pragma omp parallel for simd num_threads(team_size(nc, threads_)) schedule(static)
    for (std::int64_t i = 0; i < nc; ++i) C[i] = ld(cb, i);
  }

  if (K == 0) {  // oneDNN refuses empty reductions: the product is zero
#pragma omp parallel for num_threads(team_size(nc, threads_)) schedule(static)
    for (std::int64_t i = 0; i < nc; ++i) {
      const float v = (accumulate ? C[i] : 0.0f) + (bias_f ? bias_f[i % N] : 0.0f);
      C[i] = accumulate ? v : act_f(act, v);
    }
  } else {
    const float* A = as_f32(a.data, a.dtype, batch * M * K, kGemmA);
    const float* B = as_f32(b.data, b.dtype, batch * K * N, kGemmB);
    if (batch == 1 && !bias && act == Activation::None) {
      // The backward GEMMs (dx += g·w, dw += g^T·x) accumulate. oneDNN 2.6's sgemm with
      // beta = 1 ran them 0-11% faster than the matmul primitive with a sum post-op at benchmark
      // config A's shapes (ablate_op_bench, linear fwd+bwd rows).
      const std::int64_t lda = a.padded_ld ? a.padded_ld : a.trans ? M : K, ldb = b.padded_ld ? b.padded_ld : b.trans ? K : N;
      const dnnl_status_t st = dnnl_sgemm(a.trans ? 'T' : 'N', b.trans ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                                          accumulate ? 1.0f : 0.0f, C, N);
      if (st != dnnl_success) fail(op, "oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)));
    } else {
      if (a.padded_ld || b.padded_ld) fail(op, "internal: padded operands need the sgemm path");
      run_matmul(matmul_prim(DType::F32, DType::F32, batch, M, K, N, a.trans, b.trans, alpha, accumulate,
                             bias != nullptr, act, op),
                 C, A, B, bias_f, op);
    }
  }

  if (c_dtype == DType::BF16) {
    bf16_t* cb = static_cast<bf16_t*>(c);
#pragma omp parallel for simd num_threads(team_size(nc, threads_)) schedule(static)
    for (std::int64_t i = 0; i < nc; ++i) st(cb, i, C[i]);
  }
}

const void* OnednnBackend::as_bf16(const MatView& m, Slot slot) {
  if (m.dtype == DType::BF16) return m.data;
  const std::int64_t n = m.batch * m.rows * m.cols;
  bf16_t* out = static_cast<bf16_t*>(scratch(slot, static_cast<std::size_t>(n) * sizeof(bf16_t)));
  const float* in = static_cast<const float*>(m.data);
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) st(out, i, in[i]);
  return out;
}

OnednnBackend::Prim& OnednnBackend::matmul_prim(DType ab, DType c_dt, std::int64_t batch, std::int64_t M,
                                                std::int64_t K, std::int64_t N, bool trans_a, bool trans_b,
                                                float alpha, bool accumulate, bool has_bias, Activation act,
                                                const char* op) {
  key_.assign({batch, M, K, N, trans_a, trans_b, static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(alpha)),
               accumulate, has_bias, static_cast<std::int64_t>(act), static_cast<std::int64_t>(ab),
               static_cast<std::int64_t>(c_dt)});
  if (auto it = prims_.find(key_); it != prims_.end()) {
    ++hits_;
    return *it->second;
  }
  try {
    auto e = std::make_unique<Prim>();
    const ddt abt = ab == DType::BF16 ? ddt::bf16 : ddt::f32, ct = c_dt == DType::BF16 ? ddt::bf16 : ddt::f32;
    const auto a_md = view_md(batch, M, K, trans_a, abt), b_md = view_md(batch, K, N, trans_b, abt),
               c_md = view_md(batch, M, N, false, ct);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    dnnl::post_ops po;
    if (accumulate) po.append_sum(1.0f);
    if (act != Activation::None) po.append_eltwise(1.0f, eltwise_alg(act), act == Activation::SiLU ? 1.0f : 0.0f, 0.0f);
    attr.set_post_ops(po);
    dnnl::matmul::desc d = [&] {
      if (!has_bias) return dnnl::matmul::desc(a_md, b_md, c_md);
      const auto bias_md = batch == 1 ? dnnl::memory::desc({1, N}, ddt::f32, tag::ab)
                                      : dnnl::memory::desc({1, 1, N}, ddt::f32, tag::abc);
      return dnnl::matmul::desc(a_md, b_md, bias_md, c_md);
    }();
    dnnl::matmul::primitive_desc pd(d, attr, engine_);
    e->reference = std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
    e->prim = dnnl::matmul(pd);
    e->a = dnnl::memory(a_md, engine_, DNNL_MEMORY_NONE);
    e->b = dnnl::memory(b_md, engine_, DNNL_MEMORY_NONE);
    e->c = dnnl::memory(c_md, engine_, DNNL_MEMORY_NONE);
    e->args = {{DNNL_ARG_SRC, e->a.get()}, {DNNL_ARG_WEIGHTS, e->b.get()}, {DNNL_ARG_DST, e->c.get()}};
    if (has_bias) {
      e->bias = dnnl::memory(pd.bias_desc(), engine_, DNNL_MEMORY_NONE);
      e->args.push_back({DNNL_ARG_BIAS, e->bias.get()});
    }
    e->pad_bytes = pd.scratchpad_desc().get_size();
    e->pad = dnnl::memory(pd.scratchpad_desc(), engine_, DNNL_MEMORY_NONE);
    e->args.push_back({DNNL_ARG_SCRATCHPAD, e->pad.get()});
    Prim& p = *e;
    prims_.emplace(key_, std::move(e));
    ++created_;
    return p;
  } catch (const dnnl::error& err) {
    fail(op, std::string("oneDNN matmul primitive creation failed: ") + err.what());
  }
}

void OnednnBackend::run_matmul(Prim& p, void* C, const void* A, const void* B, const float* bias_f, const char* op) {
  try {
    p.a.set_data_handle(const_cast<void*>(A));
    p.b.set_data_handle(const_cast<void*>(B));
    p.c.set_data_handle(C);
    if (bias_f) p.bias.set_data_handle(const_cast<float*>(bias_f));
    p.pad.set_data_handle(p.pad_bytes ? scratch(kDnnlScratch, p.pad_bytes) : nullptr);
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p.prim.get(), stream_.get(), static_cast<int>(p.args.size()),
                                                   p.args.data()),
                            "could not execute a matmul primitive");
    stream_.wait();
  } catch (const dnnl::error& err) {
    fail(op, std::string("oneDNN matmul execution failed: ") + err.what());
  }
}

namespace {
MatView view_of(const Tensor& t, std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  return MatView{t.raw(), t.dtype(), batch, rows, cols, trans};
}
}  // namespace

namespace {
// Whether dw[O, I] += g^T·x runs into cache-set aliasing in oneDNN 2.6's sgemm: one side a
// power-of-two multiple of 1024 floats (4 KiB rows), the other at most 256. Measured with 2048
// rows (2 threads): 65-85 GFLOP/s for O x I = 1024 x 256, 256 x 1024, 2048 x 256, 256 x 2048,
// 126-148 with both operands copied to rows padded by 16 floats (the copy included); shapes
// such as 2048 x 512, 1536 x 512 or 768 x 256 run at 120-160 either way.
bool aliasing_shape(std::int64_t O, std::int64_t I) {
  const std::int64_t lo = std::min(O, I), hi = std::max(O, I);
  return lo <= 256 && hi >= 1024 && hi % 1024 == 0 && (hi & (hi - 1)) == 0;
}

// g[N, O] = dy ⊙ act'(src) into gs (when non-null) and db's column sums of g into dbs (when
// non-null), in one pass over the rows; the column sums in fixed chunks (deterministic).
template <Activation A, class D, class Sp, class G>
void activation_grad_rows(G* gs, float* dbs, float* partial, const D* d, const Sp* sp, std::int64_t N,
                          std::int64_t O, int threads) {
  if (dbs) {
    chunked_column_sum(dbs, partial, N, O, threads, [&](std::int64_t r, float* acc) {
      const D* dr = d + r * O;
      const Sp* sr = sp + r * O;
      if (gs) {
        G* gr = gs + r * O;
#pragma omp simd
        for (std::int64_t j = 0; j < O; ++j) {
          const float v = ld(dr, j) * act_bwd<A>(ld(sr, j));
          st(gr, j, v);
          acc[j] += v;
        }
      } else {
#pragma omp simd
        for (std::int64_t j = 0; j < O; ++j) acc[j] += ld(dr, j) * act_bwd<A>(ld(sr, j));
      }
    });
    return;
  }
  const std::int64_t n = N * O;
#pragma omp parallel for simd num_threads(team_size(n, threads)) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) st(gs, i, ld(d, i) * act_bwd<A>(ld(sp, i)));
}
}  // namespace

// ------------------------------------------------------------------------------------------
// linear: y[N, O] = act(x[N, I] · w[O, I]^T + b[O]) — forward and backward

void OnednnBackend::linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                   Activation act) {
  ablate::contract::linear_forward(y, pre, x, w, b, act);
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

void OnednnBackend::linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                    const Tensor& w, const Tensor* pre, const Tensor& y, Activation act) {
  ablate::contract::linear_backward(dx, dw, db, dy, x, w, pre, y, act);
  const char* op = "linear_backward";
  const std::int64_t O = w.shape()[0], I = w.shape()[1], N = x.shape().rows();
  if (!dx && !dw && !db) return;

  // g[N, O] = dy ⊙ act'(pre or y) (dy itself when act is None), and db's column sums of g in
  // the same pass over the rows (fixed chunk order: deterministic).
  MatView g = view_of(dy, 1, N, O, false);
  const Tensor* src = nullptr;
  if (act != Activation::None) {
    src = pre;
    if (act == Activation::ReLU && !src) src = &y;  // relu' from y: y > 0 <=> pre > 0 (the contract
                                                    // requires pre for the other activations)
  }
  // g is kept as bf16 when the GEMMs below take it as bf16 anyway (bf16 values, bf16 instructions).
  const DType g_dtype = native_bf16_ && x.dtype() == DType::BF16 ? DType::BF16 : DType::F32;
  void* gs = act != Activation::None && (dx || dw) ? scratch(kLinG, static_cast<std::size_t>(N * O) * ablate::dtype_size(g_dtype))
                                                   : nullptr;
  float* dbs = db ? scratch_f32(kSums, O) : nullptr;
  if (act != Activation::None || db) {
    float* partial = db ? scratch_f32(kPartial, std::min<std::int64_t>(N, 64) * O) : nullptr;
    with_float(op, dy, [&](const auto* d) {
      if (!src) {  // act None: db only
        chunked_column_sum(dbs, partial, N, O, threads_, [&](std::int64_t r, float* acc) {
          const auto* dr = d + r * O;
#pragma omp simd
          for (std::int64_t j = 0; j < O; ++j) acc[j] += ld(dr, j);
        });
        return;
      }
      with_float(op, *src, [&](const auto* sp) {
        with_act(act, [&](auto tag) {
          if (g_dtype == DType::BF16)
            activation_grad_rows<decltype(tag)::value>(static_cast<bf16_t*>(gs), dbs, partial, d, sp, N, O, threads_);
          else
            activation_grad_rows<decltype(tag)::value>(static_cast<float*>(gs), dbs, partial, d, sp, N, O, threads_);
        });
      });
    });
    if (gs) g = MatView{gs, g_dtype, 1, N, O, false};
  }
  // (an sgemm problem: bf16 operands on bf16 instructions take the matmul primitive instead)
  const bool pad = aliasing_shape(O, I) && (dx || dw) && g_dtype == DType::F32;
  if (pad) g = padded(g, kPadA);
  // dx[N, I] += g[N, O] · w[O, I]
  if (dx) gemm(dx->raw(), dx->dtype(), g, view_of(w, 1, O, I, false), 1.0f, true, nullptr, Activation::None, op);
  // dw[O, I] += g^T[O, N] · x[N, I]
  if (dw) {
    const MatView xv = pad ? padded(view_of(x, 1, N, I, false), kPadB) : view_of(x, 1, N, I, false);
    MatView gt = g;
    gt.rows = O;
    gt.cols = N;
    gt.trans = true;
    gemm(dw->raw(), dw->dtype(), gt, xv, 1.0f, true, nullptr, Activation::None, op);
  }
  if (db) with_float(op, *db, [&](auto* p) {
#pragma omp simd
      for (std::int64_t j = 0; j < O; ++j) st(p, j, ld(p, j) + dbs[j]);
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

void OnednnBackend::matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                                   float alpha) {
  ablate::contract::matmul_forward(c, a, b, trans_a, trans_b);
  const char* op = "matmul_forward";
  const MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
  gemm(c.raw(), c.dtype(), view_of(a, d.Bt, d.M, d.K, trans_a), view_of(b, d.Bt, d.K, d.N, trans_b), alpha, false,
       nullptr, Activation::None, op);
}

void OnednnBackend::matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b,
                                    bool trans_a, bool trans_b, float alpha) {
  ablate::contract::matmul_backward(da, db, dc, a, b, trans_a, trans_b);
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

// ------------------------------------------------------------------------------------------
// attention: out[B, H, T, Dh] = dropout(softmax(mask(scale q·k^T + bias))) · v — forward and backward
// (k/v [B, Hkv, S, Dh]: grouped-query attention batches each group of query heads against its k/v head)

namespace {

struct AttDims {
  std::int64_t B, H, T, S, Dh;
  std::int64_t Hkv;  // k/v heads: the G = H / Hkv query heads of a group are adjacent in q, so each
                     // group is one [G*T, Dh] block against one k/v head (no repeated k/v)
};

// The sizes of q [B, H, T, Dh] and k [B, Hkv, S, Dh] (checked by ablate::contract).
AttDims attention_dims(const Tensor& q, const Tensor& k) {
  return AttDims{q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2], q.shape()[3], k.shape()[1]};
}

// Caps the n visible scaled logits of a row at softcap: x -> c tanh(x / c); `slope` (if not null)
// receives the derivative 1 - tanh(x / c)^2 of each.
inline void cap_logits(float* row, float* slope, std::int64_t n, float c) {
  const float inv = 1.0f / c;
  for (std::int64_t j = 0; j < n; ++j) {
    const float t = std::tanh(row[j] * inv);
    row[j] = c * t;
    if (slope) slope[j] = 1.0f - t * t;
  }
}

// Adds AttentionParams' bias and ALiBi slopes to the n visible logits of row r = (b, h, i).
inline void add_logit_bias(float* row, const AttDims& d, const ablate::AttentionParams& prm, std::int64_t r,
                           std::int64_t n) {
  const std::int64_t h = (r / d.T) % d.H, i = r % d.T;
  if (prm.bias) {
    const float* bias = prm.bias->data<float>() + ((prm.bias->shape()[0] == 1 ? 0 : h) * d.T + i) * d.S;
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
  if (prm.slopes) {
    const float slope = prm.slopes->data<float>()[h];
    const std::int64_t pos = i + prm.query_offset;
    for (std::int64_t j = 0; j < n; ++j) row[j] -= slope * static_cast<float>(pos > j ? pos - j : j - pos);
  }
}

// Number of keys query i of batch item b may see: keys [0, visible) (masks are prefixes).
inline std::int64_t visible_keys(const AttDims& d, const ablate::AttentionParams& prm, const std::int32_t* lens,
                                 std::int64_t b, std::int64_t i) {
  std::int64_t n = d.S;
  if (lens) n = std::min<std::int64_t>(n, std::max<std::int32_t>(lens[b], 0));
  if (prm.causal) n = std::min<std::int64_t>(n, std::max<std::int64_t>(i + prm.query_offset + 1, 0));
  return n;
}

}  // namespace

void OnednnBackend::attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                      const Tensor& v, const ablate::AttentionParams& prm) {
  ablate::contract::attention_forward(*this, out, lse, probs, q, k, v, prm);
  const char* op = "attention_forward";
  const AttDims d = attention_dims(q, k);
  const std::int64_t BH = d.B * d.H, T = d.T, S = d.S, Dh = d.Dh;
  const std::int64_t BG = d.B * d.Hkv, GT = d.H / d.Hkv * T;  // groups, and a group's query rows
  if (BH * T == 0) return;
  // scores[BG, G*T, S] (= [BH, T, S]) = scale q[BG, G*T, Dh] · k^T[BG, Dh, S]
  float* sc = scratch_f32(kAttS, BH * T * S);
  gemm(sc, DType::F32, view_of(q, BG, GT, Dh, false), view_of(k, BG, Dh, S, true), prm.scale, false, nullptr,
       Activation::None, op);
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  float* lse_p = lse.data<float>();
  float* pr = probs ? probs->data<float>() : nullptr;
  const float p = prm.dropout;
  const bool drop = p > 0.0f;
  const float inv = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  const std::int64_t per_thread = 2 * S + 16;  // keep scales [S] + Philox uniforms [S + 16]
  float* mask = drop ? scratch_f32(kAttP, static_cast<std::int64_t>(threads_) * per_thread) : nullptr;
  const float ninf = -std::numeric_limits<float>::infinity();
  // One fused pass per row: mask, max, exp, sum, lse, probs, dropout (in place in sc).
#pragma omp parallel for num_threads(team_size(BH * T * S, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    const std::int64_t b = r / (d.H * T), i = r % T;
    const std::int64_t n = visible_keys(d, prm, lens, b, i);
    float* row = sc + r * S;
    if (n <= 0) {
      lse_p[r] = ninf;
      std::fill(row, row + S, 0.0f);
      if (pr) std::fill(pr + r * S, pr + (r + 1) * S, 0.0f);
      continue;
    }
    if (prm.softcap > 0.0f) cap_logits(row, nullptr, n, prm.softcap);
    add_logit_bias(row, d, prm, r, n);
    const float mx = row_max(row, n);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < n; ++j) {
      const float e = fast_exp(row[j] - mx);
      row[j] = e;
      sum += e;
    }
    const float rs = 1.0f / sum;
    lse_p[r] = mx + std::log(sum);
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) row[j] *= rs;
    std::fill(row + n, row + S, 0.0f);
    if (pr) std::memcpy(pr + r * S, row, static_cast<std::size_t>(S) * sizeof(float));
    if (drop) {
      float* m = mask + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread;
      keep_scales(m, m + S, static_cast<std::uint64_t>(r * S), n, p, inv, prm.rng);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) row[j] *= m[j];
    }
  }
  // out[BG, G*T, Dh] = P'[BG, G*T, S] · v[BG, S, Dh]
  gemm(out.raw(), out.dtype(), MatView{sc, DType::F32, BG, GT, S, false}, view_of(v, BG, S, Dh, false), 1.0f, false,
       nullptr, Activation::None, op);
}

void OnednnBackend::attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out,
                                       const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const ablate::AttentionParams& prm) {
  ablate::contract::attention_backward(*this, dq, dk, dv, dout, out, lse, q, k, v, prm);
  const char* op = "attention_backward";
  const AttDims d = attention_dims(q, k);
  if (!dq && !dk && !dv && !prm.dbias) return;
  const std::int64_t BH = d.B * d.H, T = d.T, S = d.S, Dh = d.Dh;
  const std::int64_t BG = d.B * d.Hkv, GT = d.H / d.Hkv * T;  // groups, and a group's query rows
  if (BH * T * S == 0) return;
  const std::int32_t* lens = prm.key_lengths ? prm.key_lengths->data<std::int32_t>() : nullptr;
  const float* lse_p = lse.data<float>();
  const float p = prm.dropout;
  const bool drop = p > 0.0f;
  const float inv = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;

  // P[BH, T, S] recomputed from the scores and lse; P' = P ⊙ keep / (1 - p).
  float* P = scratch_f32(kAttS, BH * T * S);
  float* Pd = drop ? scratch_f32(kAttP, BH * T * S) : P;
  const std::int64_t per_thread = 2 * S + 16;  // keep scales [S] + Philox uniforms [S + 16]
  float* tbuf = drop ? scratch_f32(kPartial, static_cast<std::int64_t>(threads_) * per_thread) : nullptr;
  gemm(P, DType::F32, view_of(q, BG, GT, Dh, false), view_of(k, BG, Dh, S, true), prm.scale, false, nullptr,
       Activation::None, op);
  float* cap_slope = prm.softcap > 0.0f ? scratch_f32(kAttC, BH * T * S) : nullptr;  // d(capped)/d(scaled logit)
#pragma omp parallel for num_threads(team_size(BH * T * S, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    const std::int64_t b = r / (d.H * T), i = r % T;
    const std::int64_t n = lse_p[r] == -std::numeric_limits<float>::infinity() ? 0 : visible_keys(d, prm, lens, b, i);
    float* row = P + r * S;
    if (cap_slope) cap_logits(row, cap_slope + r * S, n, prm.softcap);
    add_logit_bias(row, d, prm, r, n);
    const float l = lse_p[r];
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) row[j] = fast_exp(row[j] - l);
    std::fill(row + n, row + S, 0.0f);
    if (drop) {
      float* m = Pd + r * S;
      keep_scales(m, tbuf + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread + S,
                  static_cast<std::uint64_t>(r * S), n, p, inv, prm.rng);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) m[j] *= row[j];
      std::fill(m + n, m + S, 0.0f);
    }
  }
  // dv[BG, S, Dh] += P'^T[BG, S, G*T] · dout[BG, G*T, Dh]
  if (dv)
    gemm(dv->raw(), dv->dtype(), MatView{Pd, DType::F32, BG, S, GT, true}, view_of(dout, BG, GT, Dh, false), 1.0f, true,
         nullptr, Activation::None, op);
  if (!dq && !dk && !prm.dbias) return;
  // dP'[BG, G*T, S] = dout[BG, G*T, Dh] · v^T[BG, Dh, S]
  float* dP = scratch_f32(kAttD, BH * T * S);
  gemm(dP, DType::F32, view_of(dout, BG, GT, Dh, false), view_of(v, BG, Dh, S, true), 1.0f, false, nullptr,
       Activation::None, op);
  // dS = P ⊙ (dP - sum_j P_j dP_j), with dP = dP' ⊙ keep / (1 - p)   (in place in dP)
#pragma omp parallel for num_threads(team_size(BH * T * S, threads_)) schedule(static)
  for (std::int64_t r = 0; r < BH * T; ++r) {
    float* g = dP + r * S;
    const float* pr = P + r * S;
    if (drop) {
      const std::int64_t b = r / (d.H * T), i = r % T;
      const std::int64_t n = lse_p[r] == -std::numeric_limits<float>::infinity() ? 0 : visible_keys(d, prm, lens, b, i);
      float* m = tbuf + static_cast<std::int64_t>(omp_get_thread_num()) * per_thread;
      keep_scales(m, m + S, static_cast<std::uint64_t>(r * S), n, p, inv, prm.rng);
      std::fill(m + n, m + S, 0.0f);
#pragma omp simd
      for (std::int64_t j = 0; j < S; ++j) g[j] *= m[j];
    }
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < S; ++j) dot += pr[j] * g[j];
#pragma omp simd
    for (std::int64_t j = 0; j < S; ++j) g[j] = pr[j] * (g[j] - dot);
  }
  // dbias[1 or H, T, S] += dS summed over B (and H): serial, rows of one bias row come from several threads
  if (prm.dbias) {
    float* db = prm.dbias->data<float>();
    const bool shared = prm.dbias->shape()[0] == 1;
    for (std::int64_t r = 0; r < BH * T; ++r) {
      const std::int64_t h = (r / T) % d.H, i = r % T;
      float* out_row = db + ((shared ? 0 : h) * T + i) * S;
      const float* g = dP + r * S;
#pragma omp simd
      for (std::int64_t j = 0; j < S; ++j) out_row[j] += g[j];
    }
  }
  // Through the softcap: dS ⊙ (1 - tanh^2) for q and k (the bias was added after the cap). Rows past
  // n have dS = 0 (P = 0 there), so their slope values do not matter.
  if (cap_slope && (dq || dk)) {
#pragma omp parallel for num_threads(team_size(BH * T * S, threads_)) schedule(static)
    for (std::int64_t r = 0; r < BH * T; ++r) {
      float* g = dP + r * S;
      const float* c = cap_slope + r * S;
      const std::int64_t b = r / (d.H * T), i = r % T;
      const std::int64_t n = lse_p[r] == -std::numeric_limits<float>::infinity() ? 0 : visible_keys(d, prm, lens, b, i);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) g[j] *= c[j];
    }
  }
  // dq[BG, G*T, Dh] += scale dS[BG, G*T, S] · k[BG, S, Dh]
  if (dq)
    gemm(dq->raw(), dq->dtype(), MatView{dP, DType::F32, BG, GT, S, false}, view_of(k, BG, S, Dh, false), prm.scale,
         true, nullptr, Activation::None, op);
  // dk[BG, S, Dh] += scale dS^T[BG, S, G*T] · q[BG, G*T, Dh]  (the group's heads summed)
  if (dk)
    gemm(dk->raw(), dk->dtype(), MatView{dP, DType::F32, BG, S, GT, true}, view_of(q, BG, GT, Dh, false), prm.scale,
         true, nullptr, Activation::None, op);
}

// ------------------------------------------------------------------------------------------
// the plugin record

namespace {
constexpr ablate::OptionInfo kOptions[] = {
    {"threads", ablate::OptionType::Int, "2", nullptr, "CPU threads for oneDNN and the OpenMP kernels"},
};
ablate::Component* create(const ablate::Options& o) {
  const std::int64_t t = o.get_int("threads");
  if (t < 1 || t > 1024) throw ablate::Error("backend/onednn: threads must be in [1, 1024], got " + std::to_string(t));
  return new OnednnBackend(static_cast<int>(t));
}
}  // namespace

ABLATE_PLUGIN("backend", "onednn", "0.1.0", "CPU backend on oneDNN 2.x matmul primitives + OpenMP kernels (f32, bf16)",
              ablate::options_of(kOptions), create)

}  // namespace backend_onednn
