// Plugin backend/onednn: the CPU compute backend on oneDNN 2.x. This file holds the plugin
// record, memory and the cached matmul primitives (gemm); the ops live by family, as in
// backend_reference: linear_ops, attention_ops, norm_ops, elementwise_ops, loss_optim_ops, rope,
// slice and rowwise ops.
#include "onednn_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels.hpp"

#if ABLATE_ONEDNN_GEMM_BF16
// oneDNN 2.x's row-major bf16 GEMM, C[M, N] = alpha op(A) op(B) + beta C with bf16 A, B and f32 C:
// exported by libdnnl but not declared by its public header (CMakeLists.txt checks that it links).
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                               const std::uint16_t* A, dnnl_dim_t lda, const std::uint16_t* B, dnnl_dim_t ldb,
                                               float beta, float* C, dnnl_dim_t ldc);
#endif

namespace backend_onednn {

namespace {
constexpr bool kHasGemmBf16 = ABLATE_ONEDNN_GEMM_BF16;

// dnnl_gemm_bf16bf16f32 where it links (never called elsewhere: kHasGemmBf16 is false).
void gemm_bf16(char ta, char tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const void* A, std::int64_t lda,
               const void* B, std::int64_t ldb, float beta, float* C, const char* op) {
#if ABLATE_ONEDNN_GEMM_BF16
  const dnnl_status_t st = dnnl_gemm_bf16bf16f32(ta, tb, M, N, K, alpha, static_cast<const std::uint16_t*>(A), lda,
                                                 static_cast<const std::uint16_t*>(B), ldb, beta, C, N);
  if (st != dnnl_success) fail(op, "oneDNN bf16 gemm failed with status " + std::to_string(static_cast<int>(st)));
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C;
  fail(op, "internal: oneDNN's bf16 gemm is not linked");
#endif
}
}  // namespace

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
#pragma omp parallel for num_threads(team_size({rows, cols}, threads_)) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
#pragma omp simd
      for (std::int64_t c = 0; c < cols; ++c) out[r * ld + c] = backend_onednn::ld(in, r * cols + c);
    }
  };
  if (m.dtype == DType::F32)
    copy(static_cast<const float*>(m.data));
  else
    copy(static_cast<const bf16_t*>(m.data));
  return MatView{out, DType::F32, 1, rows, cols, false, ld};
}

// ------------------------------------------------------------------------------------------
// memory

Tensor OnednnBackend::empty(const Shape& shape, DType dtype) {
  auto self = shared_from_this();
  return Tensor(alloc_->allocate(static_cast<std::size_t>(shape.numel()) * ablate::dtype_size(dtype), self), shape, dtype);
}

void OnednnBackend::do_fill(Tensor& y, float value) {
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

void OnednnBackend::do_copy_from_host(Tensor& dst, const void* src) {
  if (dst.bytes()) std::memcpy(dst.raw(), src, dst.bytes());
}

void OnednnBackend::do_copy_to_host(void* dst, const Tensor& src) {
  if (src.bytes()) std::memcpy(dst, src.raw(), src.bytes());
}

void OnednnBackend::do_copy(Tensor& dst, const Tensor& src) {
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
    fail(op, "internal gemm shape mismatch [" + std::to_string(a.batch) + "," + std::to_string(M) + "," + std::to_string(K) +
                 "] x [" + std::to_string(b.batch) + "," + std::to_string(b.rows) + "," + std::to_string(N) + "]");
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
  const bool bf16_ops =
      native_bf16_ && K > 0 && (a.dtype == DType::BF16 || b.dtype == DType::BF16) && !a.padded_ld && !b.padded_ld;
  // A plain bf16 product into f32 (the backward's dw += g^T·x), or into bf16 after a reduction
  // 8x its width (the logits' dx, through f32 C below), on oneDNN's bf16 GEMM: at benchmark B's
  // shapes 5-25% faster than the matmul primitive (its transposed A packed by the GEMM, not by a
  // copy; dw [8000, 512] 17.4 vs 21-22 ms, the logits' dx 17.8 vs 20.2 ms; narrower reductions
  // into bf16 ran no faster, and their f32 C would cost a pass).
  const bool bf16_gemm =
      kHasGemmBf16 && bf16_ops && batch == 1 && !bias && act == Activation::None && (c_dtype == DType::F32 || K >= 8 * N);
  if (bf16_ops && !bf16_gemm) {
    Prim& p = matmul_prim(DType::BF16, c_dtype, batch, M, K, N, a.trans, b.trans, alpha, accumulate, bias != nullptr, act, op);
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
  } else if (bf16_gemm) {
    gemm_bf16(a.trans ? 'T' : 'N', b.trans ? 'T' : 'N', M, N, K, alpha, as_bf16(a, kGemmA), a.trans ? M : K, as_bf16(b, kGemmB),
              b.trans ? K : N, accumulate ? 1.0f : 0.0f, C, op);
  } else {
    const float* A = as_f32(a.data, a.dtype, batch * M * K, kGemmA);
    const float* B = as_f32(b.data, b.dtype, batch * K * N, kGemmB);
    if (batch == 1 && !bias && act == Activation::None) {
      // The backward GEMMs (dx += g·w, dw += g^T·x) accumulate. oneDNN 2.6's sgemm with
      // beta = 1 ran them 0-11% faster than the matmul primitive with a sum post-op at benchmark
      // config A's shapes (ablate_op_bench, linear fwd+bwd rows).
      const std::int64_t lda = a.padded_ld ? a.padded_ld : a.trans ? M : K, ldb = b.padded_ld ? b.padded_ld : b.trans ? K : N;
      const dnnl_status_t st =
          dnnl_sgemm(a.trans ? 'T' : 'N', b.trans ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, accumulate ? 1.0f : 0.0f, C, N);
      if (st != dnnl_success) fail(op, "oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)));
    } else {
      if (a.padded_ld || b.padded_ld) fail(op, "internal: padded operands need the sgemm path");
      run_matmul(
          matmul_prim(DType::F32, DType::F32, batch, M, K, N, a.trans, b.trans, alpha, accumulate, bias != nullptr, act, op), C,
          A, B, bias_f, op);
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

OnednnBackend::Prim& OnednnBackend::matmul_prim(DType ab, DType c_dt, std::int64_t batch, std::int64_t M, std::int64_t K,
                                                std::int64_t N, bool trans_a, bool trans_b, float alpha, bool accumulate,
                                                bool has_bias, Activation act, const char* op) {
  key_.assign({batch, M, K, N, trans_a, trans_b, static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(alpha)), accumulate,
               has_bias, static_cast<std::int64_t>(act), static_cast<std::int64_t>(ab), static_cast<std::int64_t>(c_dt)});
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
      const auto bias_md =
          batch == 1 ? dnnl::memory::desc({1, N}, ddt::f32, tag::ab) : dnnl::memory::desc({1, 1, N}, ddt::f32, tag::abc);
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
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p.prim.get(), stream_.get(), static_cast<int>(p.args.size()), p.args.data()),
                            "could not execute a matmul primitive");
    stream_.wait();
  } catch (const dnnl::error& err) {
    fail(op, std::string("oneDNN matmul execution failed: ") + err.what());
  }
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
