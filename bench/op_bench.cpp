// ablate_op_bench: times backend/onednn's GEMM-heavy ops at Transformer shapes (tokens 4096,
// d 512, d_ff 2048; attention B 16, H 8, T = S 128, Dh 64) in f32 and bf16, the linear layers and
// attention of benchmark config A (f32) and the linear layers of config B (f32 and bf16), an FFN's
// first linear with its dropout as two ops and as linear_dropout, attention on split heads and on
// heads packed in a fused q/k/v projection, next to a plain oneDNN matmul at the same sizes (the
// achievable peak here: f32, and bf16 where the CPU has bf16 instructions), and prints one table;
// then config A's memory-bound ops (dropout, fill, copy, heads, layer norm) with their GB/s.
//
//   ablate_op_bench [--threads 2] [--reps 7] [--only TEXT]  (TEXT picks rows of both tables)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>
#include <omp.h>

#include "ablate/backend.hpp"
#include "ablate/bf16.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace {

using ablate::Activation;
using ablate::Backend;
using ablate::DType;
using ablate::Tensor;

struct Timing {
  double median_s, min_s, max_s;
};

// One benchmarked operation. All ops are timed in interleaved rounds (op 1, op 2, ..., then
// again), so a burst of load from other processes spreads over every row instead of one.
struct Row {
  Row(std::string n, std::function<void()> f, double fl, double by = 0)
      : name(std::move(n)), run(std::move(f)), flops(fl), bytes(by) {}
  std::string name;
  std::function<void()> run;
  double flops;
  double bytes;                                        // a memory-bound row: the bytes it must read and write (flops 0)
  bool bf16 = name.find("bf16") != std::string::npos;  // %peak against the bf16 peak, where measured
  std::vector<double> seconds;
  Timing t{};
};

void measure(std::vector<Row>& rows, int reps) {
  for (Row& r : rows) {
    r.run();
    r.run();
  }
  for (int i = 0; i < reps; ++i)
    for (Row& r : rows) {
      const auto t0 = std::chrono::steady_clock::now();
      r.run();
      r.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  for (Row& r : rows) {
    std::sort(r.seconds.begin(), r.seconds.end());
    r.t = {r.seconds[r.seconds.size() / 2], r.seconds.front(), r.seconds.back()};
  }
}

// Plain oneDNN matmul dst[M, N] (f32) = src[M, K] · w[K, N] (f32 or bf16), all row-major: the
// achievable peak.
struct PlainMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream s{eng};
  dnnl::matmul prim;
  dnnl::memory a, b, c;
  PlainMatmul(std::int64_t M, std::int64_t K, std::int64_t N, dnnl::memory::data_type in = dnnl::memory::data_type::f32) {
    using namespace dnnl;
    memory::desc ad({M, K}, in, memory::format_tag::ab), bd({K, N}, in, memory::format_tag::ab),
        cd({M, N}, memory::data_type::f32, memory::format_tag::ab);
    prim = matmul(matmul::primitive_desc(matmul::desc(ad, bd, cd), eng));
    a = memory(ad, eng);
    b = memory(bd, eng);
    c = memory(cd, eng);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> d(-1, 1);
    for (auto* m : {&a, &b, &c}) {  // touch every page: untouched zero pages would fake bandwidth
      const bool low = m->get_desc().data_type() == memory::data_type::bf16;
      auto* p = static_cast<unsigned char*>(m->get_data_handle());
      for (std::size_t i = 0; i < m->get_desc().get_size() / (low ? 2 : 4); ++i) {
        const float v = d(g);
        if (low)
          reinterpret_cast<std::uint16_t*>(p)[i] = ablate::float_to_bf16(v);
        else
          reinterpret_cast<float*>(p)[i] = v;
      }
    }
  }
  void operator()() {
    prim.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
};

Tensor random_tensor(Backend& be, ablate::Shape shape, DType dt, unsigned seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (auto& x : v) x = d(g);
  Tensor t = be.empty(shape, dt);
  if (dt == DType::F32) {
    be.copy_from_host(t, v.data());
  } else {
    be.copy_from_host(t, ablate::to_bf16(v).data());
  }
  return t;
}

// The attention shapes: B 16, H 8, T = S = 128, Dh 64.
struct Sizes {
  std::int64_t B, H, T, S, Dh;
};

// A linear layer's tensors, x[n, in] -> y[n, out], its gradients zeroed (accumulated into, as the
// model runs it), `pre` where the activation's gradient needs it (as training keeps it), and the
// rows' shape name "n x in -> out".
struct LinearTensors {
  Tensor x, w, b, y, dy, dx, dw, db, pre;
  std::string shape;
  Tensor* kept_pre() { return pre.defined() ? &pre : nullptr; }
};
LinearTensors linear_tensors(Backend& be, std::int64_t n, std::int64_t in, std::int64_t out, Activation act, DType dt) {
  LinearTensors t{random_tensor(be, {n, in}, dt, 1),
                  random_tensor(be, {out, in}, dt, 2, 0.05f),
                  random_tensor(be, {out}, dt, 3),
                  be.empty({n, out}, dt),
                  random_tensor(be, {n, out}, dt, 4),
                  be.empty({n, in}, dt),
                  be.empty({out, in}, DType::F32),
                  be.empty({out}, DType::F32),
                  ablate::activation_needs_pre(act) ? be.empty({n, out}, dt) : Tensor(),
                  std::to_string(n) + "x" + std::to_string(in) + "->" + std::to_string(out)};
  be.fill(t.dx, 0);
  be.fill(t.dw, 0);
  be.fill(t.db, 0);
  return t;
}

// linear fwd+bwd: x[n, in] -> y[n, out], as the model runs it (dx, dw, db accumulated).
void add_linear(std::vector<Row>& rows, const std::shared_ptr<Backend>& be, std::int64_t n, std::int64_t in, std::int64_t out,
                Activation act, DType dt) {
  LinearTensors t = linear_tensors(*be, n, in, out, act, dt);
  const std::string shape = t.shape +
                            (act == Activation::None ? std::string(" ") : " " + std::string(ablate::activation_name(act)) + " ") +
                            ablate::dtype_name(dt);
  rows.push_back(
      {"linear fwd " + shape, [=]() mutable { be->linear_forward(t.y, t.kept_pre(), t.x, t.w, &t.b, act); }, 2.0 * n * in * out});
  rows.push_back({"linear fwd+bwd " + shape,
                  [=]() mutable {
                    be->linear_forward(t.y, t.kept_pre(), t.x, t.w, &t.b, act);
                    be->linear_backward(&t.dx, &t.dw, &t.db, t.dy, t.x, t.w, t.kept_pre(), t.y, act, ablate::GradStore::Add);
                  },
                  3 * 2.0 * n * in * out});
}

// An FFN's first linear with its dropout (p 0.1) forward and backward, as two ops (linear, then
// dropout; the dropout's gradient into a new buffer as ops::dropout runs it) and as the fused
// linear_dropout (where the backend has it).
void add_linear_dropout(std::vector<Row>& rows, const std::shared_ptr<Backend>& be, std::int64_t n, std::int64_t in,
                        std::int64_t out, Activation act, DType dt) {
  LinearTensors t = linear_tensors(*be, n, in, out, act, dt);
  Tensor h = be->empty({n, out}, dt), dh = be->empty({n, out}, dt);
  Tensor slope = act != Activation::ReLU ? be->empty({n, out}, DType::F32) : Tensor();
  const float p = 0.1f;
  const ablate::RngKey key{1, 2, 3};
  const std::string shape = t.shape + " " + ablate::activation_name(act) + " drop0.1 " + ablate::dtype_name(dt);
  const double flops = 3 * 2.0 * n * in * out;
  rows.push_back({"linear, dropout fwd+bwd " + shape,
                  [=]() mutable {
                    be->linear_forward(h, t.kept_pre(), t.x, t.w, &t.b, act);
                    be->dropout_forward(t.y, h, p, key);
                    be->dropout_forward(dh, t.dy, p, key);
                    be->linear_backward(&t.dx, &t.dw, &t.db, dh, t.x, t.w, t.kept_pre(), h, act, ablate::GradStore::Add);
                  },
                  flops});
  if (!be->supports(ablate::OptionalOp::linear_dropout)) return;
  rows.push_back({"linear_dropout fwd+bwd " + shape,
                  [=]() mutable {
                    Tensor* s = slope.defined() ? &slope : nullptr;
                    be->linear_dropout_forward(t.y, s, t.x, t.w, &t.b, act, p, key);
                    be->linear_dropout_backward(&t.dx, &t.dw, &t.db, t.dy, t.x, t.w, s, t.y, act, p, ablate::GradStore::Add);
                  },
                  flops});
}

// batched matmul: scores[BH, T, S] = q[BH, T, Dh] · k[BH, S, Dh]^T
void add_batched_matmul(std::vector<Row>& rows, const std::shared_ptr<Backend>& be, const Sizes& z, DType dt) {
  const std::int64_t B = z.B, H = z.H, T = z.T, S = z.S, Dh = z.Dh;
  const std::string tag = ablate::dtype_name(dt);
  Tensor q = random_tensor(*be, {B * H, T, Dh}, dt, 5), k = random_tensor(*be, {B * H, S, Dh}, dt, 6),
         c = be->empty({B * H, T, S}, dt), dc = random_tensor(*be, {B * H, T, S}, dt, 7), dq = be->empty(q.shape(), dt),
         dk = be->empty(k.shape(), dt);
  be->fill(dq, 0);
  be->fill(dk, 0);
  rows.push_back({"matmul fwd [128,128,64].[128,64,128]^T " + tag,
                  [=]() mutable { be->matmul_forward(c, q, k, false, true, 0.125f); }, 2.0 * B * H * T * S * Dh});
  rows.push_back({"matmul fwd+bwd [128,128,64].[128,64,128]^T " + tag,
                  [=]() mutable {
                    be->matmul_forward(c, q, k, false, true, 0.125f);
                    be->matmul_backward(&dq, &dk, dc, q, k, false, true, 0.125f);
                  },
                  3 * 2.0 * B * H * T * S * Dh});
}

// attention at sizes z, dropout 0.1 (causal or not): q/k/v [B, H, T|S, Dh]; or `packed`, self-attention
// (T = S) reading the heads from one fused projection qkv [B, T, 3 H Dh] and writing out [B, T, H Dh]
// and dqkv, as attention/mha runs it (AttentionParams::packed: no split or merge copies around it).
void add_attention(std::vector<Row>& rows, const std::shared_ptr<Backend>& be, const Sizes& z, bool causal, DType dt,
                   bool packed = false) {
  const std::int64_t B = z.B, H = z.H, T = z.T, S = z.S, Dh = z.Dh;
  const std::string shape = "B" + std::to_string(B) + " H" + std::to_string(H) + " T=S=" + std::to_string(T) + " Dh" +
                            std::to_string(Dh) + (causal ? " causal" : "") + " drop0.1 " + ablate::dtype_name(dt) +
                            (packed ? " packed" : "");
  ablate::AttentionParams p;
  p.causal = causal;
  p.scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  p.dropout = 0.1f;
  p.rng = {1, 1, 1};
  Tensor q, k, v, out, dout, dq, dk, dv;
  if (packed) {
    p.packed = {H, H, Dh, 0, H * Dh, 2 * H * Dh};
    p.dq_store = p.dk_store = p.dv_store = ablate::GradStore::Write;
    q = k = v = random_tensor(*be, {B, T, 3 * H * Dh}, dt, 8);
    out = be->empty({B, T, H * Dh}, dt), dout = random_tensor(*be, {B, T, H * Dh}, dt, 11);
    dq = dk = dv = be->empty(q.shape(), dt);
  } else {
    q = random_tensor(*be, {B, H, T, Dh}, dt, 8), k = random_tensor(*be, {B, H, S, Dh}, dt, 9),
    v = random_tensor(*be, {B, H, S, Dh}, dt, 10), out = be->empty({B, H, T, Dh}, dt),
    dout = random_tensor(*be, {B, H, T, Dh}, dt, 11), dq = be->empty(q.shape(), dt), dk = be->empty(k.shape(), dt),
    dv = be->empty(v.shape(), dt);
    for (Tensor* t : {&dq, &dk, &dv}) be->fill(*t, 0);
  }
  Tensor lse = be->empty({B, H, T}, DType::F32);
  // FLOPs counted as 2 GEMMs forward and 4 backward, over the full T x S square (the causal
  // half is still counted; the recomputed QK^T is not).
  const double g = 2.0 * B * H * T * S * Dh;
  rows.push_back({"attention fwd " + shape, [=]() mutable { be->attention_forward(out, lse, nullptr, q, k, v, p); }, 2 * g});
  rows.push_back({"attention fwd+bwd " + shape,
                  [=]() mutable {
                    be->attention_forward(out, lse, nullptr, q, k, v, p);
                    be->attention_backward(&dq, &dk, &dv, dout, out, lse, q, k, v, p);
                  },
                  6 * g});
}

// Config A's memory-bound ops (2048 tokens, d 256, d_ff 1024, 4 heads of 64), f32, each with the
// bytes it must move at the least (one read of each input, one write of each output; an
// accumulating gradient reads its output too).
void add_memory_ops(std::vector<Row>& rows, const std::shared_ptr<Backend>& be) {
  const std::int64_t B = 64, T = 32, D = 256, F = 1024, H = 4, Dh = D / H, N = B * T;
  const ablate::RngKey key{1, 1, 1};
  Tensor h = random_tensor(*be, {N, F}, DType::F32, 12), hy = be->empty({N, F}, DType::F32),
         x = random_tensor(*be, {N, D}, DType::F32, 13), r = random_tensor(*be, {N, D}, DType::F32, 14),
         y = be->empty({N, D}, DType::F32), dx = be->empty({N, D}, DType::F32),
         qkv = random_tensor(*be, {B, T, 3 * D}, DType::F32, 15), q = be->empty({B, H, T, Dh}, DType::F32),
         merged = be->empty({B, T, D}, DType::F32), gamma = random_tensor(*be, {D}, DType::F32, 16),
         beta = random_tensor(*be, {D}, DType::F32, 17), mean = be->empty({N}, DType::F32), rstd = be->empty({N}, DType::F32),
         dgamma = be->empty({D}, DType::F32), dbeta = be->empty({D}, DType::F32);
  for (Tensor* t : {&dx, &dgamma, &dbeta}) be->fill(*t, 0);
  const double f = 4.0, nf = static_cast<double>(N * F), nd = static_cast<double>(N * D);
  rows.push_back({"fill [2048,1024] f32", [=]() mutable { be->fill(hy, 0.0f); }, 0, f * nf});
  rows.push_back({"copy [2048,1024] f32", [=]() mutable { be->copy(hy, h); }, 0, 2 * f * nf});
  rows.push_back({"dropout fwd [2048,1024] p0.1 f32", [=]() mutable { be->dropout_forward(hy, h, 0.1f, key); }, 0, 2 * f * nf});
  rows.push_back(
      {"dropout bwd (dx +=) [2048,1024] p0.1 f32", [=]() mutable { be->dropout_backward(hy, h, 0.1f, key); }, 0, 3 * f * nf});
  rows.push_back(
      {"dropout_add fwd [2048,256] p0.1 f32", [=]() mutable { be->dropout_add_forward(y, x, r, 0.1f, key); }, 0, 3 * f * nd});
  rows.push_back(
      {"split_heads fwd [64,32,768] part 0 f32", [=]() mutable { be->split_heads_forward(q, qkv, 3, 0); }, 0, 2 * f * nd});
  rows.push_back({"merge_heads fwd [64,4,32,64] f32", [=]() mutable { be->merge_heads_forward(merged, q); }, 0, 2 * f * nd});
  rows.push_back({"layer_norm fwd [2048,256] f32",
                  [=]() mutable { be->layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-5f); }, 0, 2 * f * nd});
  rows.push_back(
      {"layer_norm bwd (dx +=) [2048,256] f32",
       [=]() mutable { be->layer_norm_backward(&dx, &dgamma, &dbeta, r, x, mean, rstd, gamma, ablate::GradStore::Add); }, 0,
       4 * f * nd});
  rows.push_back(
      {"layer_norm bwd (dx =) [2048,256] f32",
       [=]() mutable { be->layer_norm_backward(&dx, &dgamma, &dbeta, r, x, mean, rstd, gamma, ablate::GradStore::Write); }, 0,
       3 * f * nd});
}

// The memory-bound rows: median ms and GB/s of the bytes each must move.
void print_memory_table(const std::vector<Row>& rows) {
  std::printf("\n%-58s %9s %7s %9s\n", "memory-bound op", "ms", "spread", "GB/s");
  for (const Row& r : rows)
    std::printf("%-58s %9.3f %6.0f%% %9.1f\n", r.name.c_str(), r.t.median_s * 1e3, 100.0 * (r.t.max_s - r.t.min_s) / r.t.median_s,
                r.bytes / r.t.median_s / 1e9);
}

// The table: each row's median time, spread and GFLOP/s against the plain matmuls' peak (f32, and
// bf16 where measured: rows 2 and 3).
void print_table(const std::vector<Row>& rows, int threads, int reps, bool bf16_isa) {
  const double peak = std::max(rows[0].flops / rows[0].t.median_s, rows[1].flops / rows[1].t.median_s);
  const double best_peak = std::max(rows[0].flops / rows[0].t.min_s, rows[1].flops / rows[1].t.min_s);
  const double low_peak = bf16_isa ? std::max(rows[2].flops / rows[2].t.median_s, rows[3].flops / rows[3].t.median_s) : peak;
  const double low_best = bf16_isa ? std::max(rows[2].flops / rows[2].t.min_s, rows[3].flops / rows[3].t.min_s) : best_peak;

  std::printf(
      "threads %d, %d interleaved rounds (median; spread = (max-min)/median); peak = the better plain matmul, "
      "%.1f GFLOP/s median, %.1f best (min time; the right column compares best with best)\n",
      threads, reps, peak / 1e9, best_peak / 1e9);
  if (bf16_isa)
    std::printf("bf16 peak = the better plain bf16 matmul, %.1f GFLOP/s median, %.1f best (bf16 rows' %%peak)\n", low_peak / 1e9,
                low_best / 1e9);
  else
    std::printf("no bf16 peak: this CPU has no bf16 instructions (bf16 rows' %%peak is against the f32 peak)\n");
  std::printf("%-58s %9s %7s %9s %7s | %9s %7s\n", "op", "ms", "spread", "GFLOP/s", "%peak", "best GF/s", "%best");
  for (const Row& r : rows) {
    const double gf = r.flops / r.t.median_s / 1e9;
    const double best = r.flops / r.t.min_s;
    const double pk = r.bf16 ? low_peak : peak, bpk = r.bf16 ? low_best : best_peak;
    std::printf("%-58s %9.3f %6.0f%% %9.1f %6.1f%% | %9.1f %6.1f%%\n", r.name.c_str(), r.t.median_s * 1e3,
                100.0 * (r.t.max_s - r.t.min_s) / r.t.median_s, gf, 100.0 * gf * 1e9 / pk, best / 1e9, 100.0 * best / bpk);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 7;
  std::string only;  // --only TEXT: just the rows whose name has TEXT (and the peaks)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--reps R] [--only TEXT]\n", argv[0]);
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const std::int64_t N = 4096, D = 512, F = 2048;
  const Sizes sizes{16, 8, 128, 128, 64};

  std::vector<Row> rows;
  auto plain1 = std::make_shared<PlainMatmul>(N, D, F), plain2 = std::make_shared<PlainMatmul>(N, F, D);
  rows.push_back({"plain oneDNN matmul f32 4096x512 . 512x2048", [plain1] { (*plain1)(); }, 2.0 * N * D * F});
  rows.push_back({"plain oneDNN matmul f32 4096x2048 . 2048x512", [plain2] { (*plain2)(); }, 2.0 * N * D * F});
  // bf16 operands (f32 result) only where oneDNN has bf16 instructions: elsewhere it would time
  // a reference kernel for minutes.
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const bool bf16_isa = (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
  if (bf16_isa) {
    using dt = dnnl::memory::data_type;
    auto low1 = std::make_shared<PlainMatmul>(N, D, F, dt::bf16), low2 = std::make_shared<PlainMatmul>(N, F, D, dt::bf16);
    rows.push_back({"plain oneDNN matmul bf16 4096x512 . 512x2048", [low1] { (*low1)(); }, 2.0 * N * D * F});
    rows.push_back({"plain oneDNN matmul bf16 4096x2048 . 2048x512", [low2] { (*low2)(); }, 2.0 * N * D * F});
  }

  ablate::PluginRegistry registry;
  registry.scan({ablate::builtin_plugin_dir()});
  auto be = registry.create<Backend>("onednn", {{"threads", std::to_string(threads)}});

  // Benchmark config A's layers (bench/configs/A_enc_dec.yaml: 2048 target tokens, d 256, d_ff
  // 1024, vocabulary 1000): fused q/k/v, the attention output, cross k/v, FFN in and out, the output
  // projection.
  add_linear(rows, be, 2048, 256, 768, Activation::None, DType::F32);
  add_linear(rows, be, 2048, 256, 256, Activation::None, DType::F32);  // attention out, cross q
  add_linear(rows, be, 2048, 256, 512, Activation::None, DType::F32);  // cross k/v
  add_linear(rows, be, 2048, 256, 1024, Activation::ReLU, DType::F32);
  add_linear(rows, be, 2048, 1024, 256, Activation::None, DType::F32);
  add_linear(rows, be, 2048, 256, 1000, Activation::None, DType::F32);
  add_linear_dropout(rows, be, 2048, 256, 1024, Activation::ReLU, DType::F32);
  add_attention(rows, be, Sizes{64, 4, 32, 32, 64}, false, DType::F32);  // A's encoder self and cross attention
  // Benchmark config B's layers (bench/configs/B_decoder_lm.yaml: 16 x 127 tokens, d 512, d_ff 2048,
  // vocabulary 8000), f32 and bf16: fused q/k/v, attention output, FFN in (GELU) and out, the logits.
  for (DType dt : {DType::F32, DType::BF16}) {
    if (dt == DType::BF16 && !bf16_isa) continue;
    for (const auto& [in, out, act] : {std::tuple{512, 1536, Activation::None}, std::tuple{512, 512, Activation::None},
                                       std::tuple{512, 2048, Activation::GeluErf}, std::tuple{2048, 512, Activation::None},
                                       std::tuple{512, 8000, Activation::None}})
      add_linear(rows, be, 2032, in, out, act, dt);
    add_linear_dropout(rows, be, 2032, 512, 2048, Activation::GeluErf, dt);
  }
  add_attention(rows, be, Sizes{64, 4, 32, 32, 64}, false, DType::F32, true);
  for (DType dt : {DType::F32, DType::BF16}) {
    // both FFN layers of a d 512 model: x[N, D] -> h[N, F] (relu) -> y[N, D]
    add_linear(rows, be, N, D, F, Activation::ReLU, dt);
    add_linear(rows, be, N, F, D, Activation::None, dt);
    add_batched_matmul(rows, be, sizes, dt);
    add_attention(rows, be, sizes, true, dt);
    add_attention(rows, be, sizes, true, dt, true);
  }
  const std::size_t peaks = bf16_isa ? 4 : 2;
  const auto unwanted = [&](const Row& r) { return r.name.find(only) == std::string::npos; };  // --only
  rows.erase(std::remove_if(rows.begin() + static_cast<std::ptrdiff_t>(peaks), rows.end(), unwanted), rows.end());
  measure(rows, reps);
  print_table(rows, threads, reps, bf16_isa);
  std::vector<Row> memory;
  add_memory_ops(memory, be);
  memory.erase(std::remove_if(memory.begin(), memory.end(), unwanted), memory.end());
  if (!memory.empty()) {
    measure(memory, reps);
    print_memory_table(memory);
  }
  return 0;
}
