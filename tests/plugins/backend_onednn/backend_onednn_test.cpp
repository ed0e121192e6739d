// Tests of backend/onednn (plugins/backend_onednn) on its own: each op against a naive double
// loop written here (the KV-cache write against a host copy), dropout masks against
// ablate::dropout_keep, bit-identical reruns, and a warm op sequence that creates no primitive
// and allocates nothing. Parity with the reference backend is tests/backends' job.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/bf16.hpp"
#include "ablate/philox.hpp"
#include "kernels.hpp"
#include "onednn_backend.hpp"
#include "small_gemm.hpp"
#include "tile_rows.hpp"
#include "backends/backend_test_util.hpp"

namespace backend_onednn {
extern const ablate::PluginInfo plugin_info;
ablate::Component* plugin_create(const ablate::Options&);
}  // namespace backend_onednn

namespace {

using ablate::Activation;
using ablate::Backend;
using ablate::DType;
using ablate::GradStore;
using ablate::Shape;
using ablate::Tensor;

std::shared_ptr<Backend> load_backend() { return ablate::testing::new_builtin_backend("onednn", {{"threads", "2"}}); }

// The same plugin linked in (OBJECT library), for the cache-statistics hook.
std::shared_ptr<Backend> linked_backend() {
  ablate::Options o;
  o.set("threads", std::int64_t{2});
  return std::shared_ptr<Backend>(dynamic_cast<Backend*>(backend_onednn::plugin_create(o)));
}

std::vector<float> randn(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

Tensor make(Backend& be, Shape s, const std::vector<float>& v, DType dt = DType::F32) {
  Tensor t = be.empty(s, dt);
  EXPECT_EQ(static_cast<std::size_t>(t.numel()), v.size());
  if (dt == DType::F32) {
    be.copy_from_host(t, v.data());
  } else {
    be.copy_from_host(t, ablate::to_bf16(v).data());
  }
  return t;
}

std::vector<float> read(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::F32) {
    be.copy_to_host(v.data(), t);
  } else {
    std::vector<std::uint16_t> b(v.size());
    be.copy_to_host(b.data(), t);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = ablate::bf16_to_float(b[i]);
  }
  return v;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

double act_ref(Activation a, double x) {
  switch (a) {
    case Activation::None: return x;
    case Activation::ReLU: return x > 0 ? x : 0;
    case Activation::GeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::SiLU: return x / (1 + std::exp(-x));
  }
  return x;
}

class Onednn : public ::testing::Test {
 protected:
  std::shared_ptr<Backend> be = load_backend();
};

TEST_F(Onednn, CapsReportThreadsBf16AndDeterminism) {
  const auto c = be->caps();
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.threads, 2);
  EXPECT_TRUE(c.bf16);
  EXPECT_TRUE(c.deterministic);
  EXPECT_TRUE(c.host_addressable);
}

// bf16 GEMMs run on bf16 dot-product instructions exactly where the CPU has them (read here from
// /proc/cpuinfo, not from oneDNN) and oneDNN may use them (ONEDNN_MAX_CPU_ISA, which the ctest
// entry backend_onednn.bf16_widening sets to take the f32-widening path); caps() says which.
TEST_F(Onednn, Bf16GemmPathFollowsTheCpu) {
  bool has_bf16 = false;
  {
    std::FILE* f = std::fopen("/proc/cpuinfo", "r");
    if (!f) GTEST_SKIP() << "no /proc/cpuinfo";
    char line[8192];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "flags", 5) == 0) {
        has_bf16 = std::strstr(line, " avx512_bf16") || std::strstr(line, " amx_bf16");
        break;
      }
    std::fclose(f);
  }
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const bool capped = cap && std::string(cap) != "ALL" && std::string(cap) != "AVX512_CORE_BF16" &&
                      std::string(cap).rfind("AVX512_CORE_AMX", 0) != 0;
  auto linked = linked_backend();
  const bool native = dynamic_cast<backend_onednn::OnednnBackend&>(*linked).native_bf16();
  EXPECT_EQ(native, has_bf16 && !capped) << "cpu has bf16: " << has_bf16 << ", ONEDNN_MAX_CPU_ISA " << (cap ? cap : "unset");
  const std::string how = linked->caps().bf16_arithmetic;
  EXPECT_NE(how.find(native ? "bf16 GEMMs" : "widened to f32"), std::string::npos) << how;
}

// y = act(x·w^T + b) and its backward against naive loops, accumulating onto non-zero grads.
TEST_F(Onednn, LinearMatchesNaiveLoops) {
  const int N = 37, I = 29, O = 23;
  const auto xv = randn(N * I, 1), wv = randn(O * I, 2, 0.3f), bv = randn(O, 3), dyv = randn(N * O, 4);
  for (Activation act : {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU}) {
    SCOPED_TRACE(ablate::activation_name(act));
    Tensor x = make(*be, {N, I}, xv), w = make(*be, {O, I}, wv), b = make(*be, {O}, bv), dy = make(*be, {N, O}, dyv);
    Tensor y = be->empty({N, O}, DType::F32), pre = be->empty({N, O}, DType::F32);
    const bool need_pre = act != Activation::None && act != Activation::ReLU;
    be->linear_forward(y, need_pre ? &pre : nullptr, x, w, &b, act);
    std::vector<double> pre_ref(N * O), y_ref(N * O);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < O; ++o) {
        double s = bv[o];
        for (int i = 0; i < I; ++i) s += double(xv[n * I + i]) * wv[o * I + i];
        pre_ref[n * O + o] = s;
        y_ref[n * O + o] = act_ref(act, s);
      }
    expect_near(read(*be, y), y_ref, 1e-4, "y");
    // Also the fused path (no pre) must agree.
    Tensor y2 = be->empty({N, O}, DType::F32);
    be->linear_forward(y2, nullptr, x, w, &b, act);
    expect_near(read(*be, y2), y_ref, 1e-4, "y fused");

    Tensor dx = make(*be, {N, I}, std::vector<float>(N * I, 1.0f)), dw = make(*be, {O, I}, std::vector<float>(O * I, 2.0f)),
           db = make(*be, {O}, std::vector<float>(O, -1.0f));
    be->linear_backward(&dx, &dw, &db, dy, x, w, need_pre ? &pre : nullptr, y, act, GradStore::Add);
    std::vector<double> g(N * O);
    const double h = 1e-4;
    for (int k = 0; k < N * O; ++k) {
      const double d = act == Activation::None ? 1.0 : (act_ref(act, pre_ref[k] + h) - act_ref(act, pre_ref[k] - h)) / (2 * h);
      g[k] = dyv[k] * d;
    }
    std::vector<double> dx_ref(N * I, 1.0), dw_ref(O * I, 2.0), db_ref(O, -1.0);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < O; ++o) {
        db_ref[o] += g[n * O + o];
        for (int i = 0; i < I; ++i) {
          dx_ref[n * I + i] += g[n * O + o] * wv[o * I + i];
          dw_ref[o * I + i] += g[n * O + o] * xv[n * I + i];
        }
      }
    expect_near(read(*be, dx), dx_ref, 2e-4, "dx");
    expect_near(read(*be, dw), dw_ref, 2e-4, "dw");
    expect_near(read(*be, db), db_ref, 2e-4, "db");
  }
}

TEST_F(Onednn, LinearBackwardWithoutPreForGeluThrows) {
  Tensor x = make(*be, {2, 3}, randn(6, 1)), w = make(*be, {4, 3}, randn(12, 2)), y = be->empty({2, 4}, DType::F32),
         dy = make(*be, {2, 4}, randn(8, 3)), dx = be->empty({2, 3}, DType::F32);
  EXPECT_THROW(be->linear_backward(&dx, nullptr, nullptr, dy, x, w, nullptr, y, Activation::GeluErf, GradStore::Add),
               ablate::Error);
  Tensor bad = be->empty({5, 3}, DType::F32);
  try {
    be->linear_forward(y, nullptr, x, bad, nullptr, Activation::None);
    FAIL() << "expected a shape error";
  } catch (const ablate::Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[5, 3]"), std::string::npos) << e.what();
  }
}

// Every transpose combination of c = alpha op(a)·op(b), forward and backward.
TEST_F(Onednn, BatchedMatmulAllTransposes) {
  const int Bt = 3, M = 5, K = 7, N = 4;
  const float alpha = 0.5f;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(testing::Message() << "ta " << ta << " tb " << tb);
      const auto av = randn(Bt * M * K, 10), bv = randn(Bt * K * N, 11), dcv = randn(Bt * M * N, 12);
      Tensor a = make(*be, ta ? Shape{Bt, K, M} : Shape{Bt, M, K}, av), b = make(*be, tb ? Shape{Bt, N, K} : Shape{Bt, K, N}, bv);
      auto A = [&](int z, int m, int k) { return double(av[ta ? (z * K + k) * M + m : (z * M + m) * K + k]); };
      auto B = [&](int z, int k, int n) { return double(bv[tb ? (z * N + n) * K + k : (z * K + k) * N + n]); };
      Tensor c = be->empty({Bt, M, N}, DType::F32);
      be->matmul_forward(c, a, b, ta, tb, alpha);
      std::vector<double> c_ref(Bt * M * N, 0.0);
      for (int z = 0; z < Bt; ++z)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += A(z, m, k) * B(z, k, n);
            c_ref[(z * M + m) * N + n] = alpha * s;
          }
      expect_near(read(*be, c), c_ref, 1e-5, "c");
      Tensor dc = make(*be, {Bt, M, N}, dcv);
      Tensor da = make(*be, a.shape(), std::vector<float>(av.size(), 1.0f)),
             db = make(*be, b.shape(), std::vector<float>(bv.size(), 1.0f));
      be->matmul_backward(&da, &db, dc, a, b, ta, tb, alpha);
      std::vector<double> da_ref(av.size(), 1.0), db_ref(bv.size(), 1.0);
      for (int z = 0; z < Bt; ++z)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n)
            for (int k = 0; k < K; ++k) {
              const double g = alpha * dcv[(z * M + m) * N + n];
              da_ref[ta ? (z * K + k) * M + m : (z * M + m) * K + k] += g * B(z, k, n);
              db_ref[tb ? (z * N + n) * K + k : (z * K + k) * N + n] += g * A(z, m, k);
            }
      expect_near(read(*be, da), da_ref, 1e-5, "da");
      expect_near(read(*be, db), db_ref, 1e-5, "db");
    }
}

// Naive attention in double: forward (out, lse, probs) and backward.
struct AttRef {
  std::vector<double> out, lse, probs, dq, dk, dv;
};
AttRef attention_ref(int B, int H, int T, int S, int Dh, const std::vector<float>& q, const std::vector<float>& k,
                     const std::vector<float>& v, const std::vector<float>& dout, const ablate::AttentionParams& p,
                     const std::vector<int>& lens) {
  AttRef r;
  r.out.assign(B * H * T * Dh, 0.0);
  r.lse.assign(B * H * T, 0.0);
  r.probs.assign(B * H * T * S, 0.0);
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(v.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        const int bh = b * H + h, row = bh * T + t;
        std::vector<double> lg(S), P(S, 0.0), f(S, 0.0);
        double mx = -INFINITY;
        for (int s = 0; s < S; ++s) {
          bool vis = lens.empty() || s < lens[b];
          if (p.causal && s > t + p.query_offset) vis = false;
          if (!vis) {
            lg[s] = -INFINITY;
            continue;
          }
          double d = 0;
          for (int e = 0; e < Dh; ++e) d += double(q[(row)*Dh + e]) * k[(bh * S + s) * Dh + e];
          lg[s] = p.scale * d;
          mx = std::max(mx, lg[s]);
        }
        if (mx == -INFINITY) {
          r.lse[row] = -INFINITY;
          continue;
        }
        double sum = 0;
        for (int s = 0; s < S; ++s) sum += lg[s] == -INFINITY ? 0 : std::exp(lg[s] - mx);
        r.lse[row] = mx + std::log(sum);
        for (int s = 0; s < S; ++s) {
          P[s] = lg[s] == -INFINITY ? 0 : std::exp(lg[s] - r.lse[row]);
          r.probs[row * S + s] = P[s];
          const std::uint64_t idx = std::uint64_t(row) * S + s;
          f[s] = p.dropout > 0 ? (ablate::dropout_keep(p.rng, idx, p.dropout) ? 1.0 / (1.0 - p.dropout) : 0.0) : 1.0;
          for (int e = 0; e < Dh; ++e) r.out[row * Dh + e] += P[s] * f[s] * v[(bh * S + s) * Dh + e];
        }
        // backward
        std::vector<double> dP(S);
        double dot = 0;
        for (int s = 0; s < S; ++s) {
          double d = 0;
          for (int e = 0; e < Dh; ++e) d += double(dout[row * Dh + e]) * v[(bh * S + s) * Dh + e];
          dP[s] = d * f[s];
          dot += P[s] * dP[s];
          for (int e = 0; e < Dh; ++e) r.dv[(bh * S + s) * Dh + e] += P[s] * f[s] * dout[row * Dh + e];
        }
        for (int s = 0; s < S; ++s) {
          const double dS = P[s] * (dP[s] - dot) * p.scale;
          for (int e = 0; e < Dh; ++e) {
            r.dq[row * Dh + e] += dS * k[(bh * S + s) * Dh + e];
            r.dk[(bh * S + s) * Dh + e] += dS * q[row * Dh + e];
          }
        }
      }
  return r;
}

TEST_F(Onednn, AttentionMatchesNaiveWithMasksAndDropout) {
  const int B = 2, H = 3, T = 5, S = 7, Dh = 6;
  const auto qv = randn(B * H * T * Dh, 20), kv = randn(B * H * S * Dh, 21), vv = randn(B * H * S * Dh, 22),
             dov = randn(B * H * T * Dh, 23);
  struct Case {
    bool causal;
    bool pad;
    float drop;
    std::int64_t offset;
  };
  for (const Case cs : {Case{false, false, 0.0f, 0}, Case{true, false, 0.0f, 0}, Case{false, true, 0.0f, 0},
                        Case{true, true, 0.3f, 0}, Case{true, false, 0.0f, 2}, Case{false, true, 0.5f, 0}}) {
    SCOPED_TRACE(testing::Message() << "causal " << cs.causal << " pad " << cs.pad << " drop " << cs.drop);
    Tensor q = make(*be, {B, H, T, Dh}, qv), k = make(*be, {B, H, S, Dh}, kv), v = make(*be, {B, H, S, Dh}, vv),
           dout = make(*be, {B, H, T, Dh}, dov);
    std::vector<int> lens;
    Tensor len_t = be->empty({B}, DType::I32);
    ablate::AttentionParams p;
    p.causal = cs.causal;
    p.query_offset = cs.offset;
    p.scale = 1.0f / std::sqrt(float(Dh));
    p.dropout = cs.drop;
    p.rng = ablate::RngKey{7, 3, 11};
    if (cs.pad) {
      lens = {4, 0};  // item 1 has no visible key at all
      be->copy_from_host(len_t, lens.data());
      p.key_lengths = &len_t;
    }
    Tensor out = be->empty({B, H, T, Dh}, DType::F32), lse = be->empty({B, H, T}, DType::F32),
           probs = be->empty({B, H, T, S}, DType::F32);
    be->attention_forward(out, lse, &probs, q, k, v, p);
    const AttRef r = attention_ref(B, H, T, S, Dh, qv, kv, vv, dov, p, lens);
    expect_near(read(*be, out), r.out, 1e-5, "out");
    expect_near(read(*be, probs), r.probs, 1e-5, "probs");
    const auto lse_v = read(*be, lse);
    for (std::size_t i = 0; i < lse_v.size(); ++i) {
      if (std::isinf(r.lse[i]))
        EXPECT_TRUE(std::isinf(lse_v[i]) && lse_v[i] < 0) << i;
      else
        EXPECT_NEAR(lse_v[i], r.lse[i], 1e-5) << i;
    }
    // Rows sum to 1 (or are all 0 with no visible key); masked probabilities are exactly 0.
    const auto pr = read(*be, probs);
    for (int row = 0; row < B * H * T; ++row) {
      double s = 0;
      for (int j = 0; j < S; ++j) {
        s += pr[row * S + j];
        if (r.probs[row * S + j] == 0.0) {
          EXPECT_EQ(pr[row * S + j], 0.0f);
        }
      }
      EXPECT_NEAR(s, std::isinf(r.lse[row]) ? 0.0 : 1.0, 1e-5);
    }
    Tensor dq = make(*be, q.shape(), std::vector<float>(qv.size(), 0.5f)), dk = be->empty(k.shape(), DType::F32),
           dv = be->empty(v.shape(), DType::F32);
    be->fill(dk, 0.0f);
    be->fill(dv, 0.0f);
    be->attention_backward(&dq, &dk, &dv, dout, out, lse, q, k, v, p);
    auto dq_ref = r.dq;
    for (auto& x : dq_ref) x += 0.5;
    expect_near(read(*be, dq), dq_ref, 1e-4, "dq");
    expect_near(read(*be, dk), r.dk, 1e-4, "dk");
    expect_near(read(*be, dv), r.dv, 1e-4, "dv");
  }
}

TEST_F(Onednn, DropoutMaskEqualsDropoutKeepElementwise) {
  const int n = 1003;  // not a multiple of 4
  const float p = 0.37f;
  const ablate::RngKey key{0x123456789abcULL, 0x1'0000'0005ULL, 9};
  Tensor x = make(*be, {n}, std::vector<float>(n, 1.0f)), y = be->empty({n}, DType::F32);
  be->dropout_forward(y, x, p, key);
  const auto yv = read(*be, y);
  const float inv = 1.0f / (1.0f - p);
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    const bool keep = ablate::dropout_keep(key, static_cast<std::uint64_t>(i), p);
    ASSERT_EQ(yv[i], keep ? inv : 0.0f) << i;
    kept += keep;
  }
  EXPECT_NEAR(kept / double(n), 1.0 - p, 0.05);
  Tensor dx = make(*be, {n}, std::vector<float>(n, 1.0f));
  be->dropout_backward(dx, x, p, key);
  const auto dxv = read(*be, dx);
  for (int i = 0; i < n; ++i) ASSERT_EQ(dxv[i], 1.0f + yv[i]) << i;
}

TEST_F(Onednn, LayerNormNormalisesAndBackwardMatchesFiniteDifferences) {
  const int N = 9, D = 33;
  const auto xv = randn(N * D, 30, 3.0f), gv = randn(D, 31), bv = randn(D, 32), dyv = randn(N * D, 33);
  Tensor x = make(*be, {N, D}, xv), gamma = make(*be, {D}, std::vector<float>(D, 1.0f)),
         beta = make(*be, {D}, std::vector<float>(D, 0.0f));
  Tensor y = be->empty({N, D}, DType::F32), mean = be->empty({N}, DType::F32), rstd = be->empty({N}, DType::F32);
  be->layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-5f);
  const auto yv = read(*be, y);
  for (int r = 0; r < N; ++r) {
    double m = 0, v = 0;
    for (int j = 0; j < D; ++j) m += yv[r * D + j];
    m /= D;
    for (int j = 0; j < D; ++j) v += (yv[r * D + j] - m) * (yv[r * D + j] - m);
    EXPECT_NEAR(m, 0.0, 1e-5);
    EXPECT_NEAR(v / D, 1.0, 1e-3);
  }
  // Backward against central differences of L = sum(y ⊙ dy) in double.
  auto L = [&](const std::vector<double>& xd, const std::vector<double>& g, const std::vector<double>& bt) {
    double tot = 0;
    for (int r = 0; r < N; ++r) {
      double m = 0, v = 0;
      for (int j = 0; j < D; ++j) m += xd[r * D + j];
      m /= D;
      for (int j = 0; j < D; ++j) v += (xd[r * D + j] - m) * (xd[r * D + j] - m);
      const double rs = 1 / std::sqrt(v / D + 1e-5);
      for (int j = 0; j < D; ++j) tot += ((xd[r * D + j] - m) * rs * g[j] + bt[j]) * dyv[r * D + j];
    }
    return tot;
  };
  std::vector<double> xd(xv.begin(), xv.end()), gd(gv.begin(), gv.end()), bd(bv.begin(), bv.end());
  gamma = make(*be, {D}, gv);
  beta = make(*be, {D}, bv);
  be->layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-5f);
  Tensor dy = make(*be, {N, D}, dyv), dx = be->empty({N, D}, DType::F32), dg = be->empty({D}, DType::F32),
         db = be->empty({D}, DType::F32);
  be->fill(dx, 0.0f);
  be->fill(dg, 0.0f);
  be->fill(db, 0.0f);
  be->layer_norm_backward(&dx, &dg, &db, dy, x, mean, rstd, gamma, GradStore::Add);
  const double h = 1e-5;
  std::vector<double> dx_ref(N * D), dg_ref(D), db_ref(D);
  for (int i = 0; i < N * D; ++i) {
    auto a = xd, b = xd;
    a[i] += h;
    b[i] -= h;
    dx_ref[i] = (L(a, gd, bd) - L(b, gd, bd)) / (2 * h);
  }
  for (int j = 0; j < D; ++j) {
    auto a = gd, b = gd;
    a[j] += h;
    b[j] -= h;
    dg_ref[j] = (L(xd, a, bd) - L(xd, b, bd)) / (2 * h);
    auto c = bd, e = bd;
    c[j] += h;
    e[j] -= h;
    db_ref[j] = (L(xd, gd, c) - L(xd, gd, e)) / (2 * h);
  }
  expect_near(read(*be, dx), dx_ref, 1e-3, "dx");
  expect_near(read(*be, dg), dg_ref, 1e-3, "dgamma");
  expect_near(read(*be, db), db_ref, 1e-3, "dbeta");
}

TEST_F(Onednn, RmsNormMatchesNaive) {
  const int N = 5, D = 17;
  const auto xv = randn(N * D, 40), gv = randn(D, 41), dyv = randn(N * D, 42);
  Tensor x = make(*be, {N, D}, xv), g = make(*be, {D}, gv), y = be->empty({N, D}, DType::F32), rstd = be->empty({N}, DType::F32),
         dy = make(*be, {N, D}, dyv), dx = be->empty({N, D}, DType::F32), dg = be->empty({D}, DType::F32);
  be->rms_norm_forward(y, rstd, x, g, 1e-6f);
  be->fill(dx, 0.0f);
  be->fill(dg, 0.0f);
  be->rms_norm_backward(&dx, &dg, dy, x, rstd, g, GradStore::Add);
  std::vector<double> y_ref(N * D), dx_ref(N * D), dg_ref(D, 0.0);
  for (int r = 0; r < N; ++r) {
    double ms = 0;
    for (int j = 0; j < D; ++j) ms += double(xv[r * D + j]) * xv[r * D + j];
    const double rs = 1 / std::sqrt(ms / D + 1e-6);
    double dot = 0;
    for (int j = 0; j < D; ++j) {
      y_ref[r * D + j] = xv[r * D + j] * rs * gv[j];
      dot += dyv[r * D + j] * gv[j] * xv[r * D + j];
      dg_ref[j] += dyv[r * D + j] * xv[r * D + j] * rs;
    }
    for (int j = 0; j < D; ++j) dx_ref[r * D + j] = rs * dyv[r * D + j] * gv[j] - rs * rs * rs * xv[r * D + j] * dot / D;
  }
  expect_near(read(*be, y), y_ref, 1e-5, "y");
  expect_near(read(*be, dx), dx_ref, 1e-4, "dx");
  expect_near(read(*be, dg), dg_ref, 1e-4, "dgamma");
}

TEST_F(Onednn, CrossEntropyMatchesHandComputation) {
  const int N = 4, V = 5;
  const auto lv = randn(N * V, 50);
  const std::vector<std::int32_t> tg = {2, -100, 0, 4};
  const float ls = 0.1f;
  Tensor logits = make(*be, {N, V}, lv), targets = be->empty({N}, DType::I32), loss = be->empty({1}, DType::F32),
         dl = be->empty({N, V}, DType::F32), stats = be->empty({2}, DType::F32);
  be->copy_from_host(targets, tg.data());
  be->cross_entropy_forward(loss, dl, stats, logits, targets, -100, ls);
  double tot = 0;
  int cnt = 0, correct = 0;
  std::vector<double> dref(N * V, 0.0);
  for (int r = 0; r < N; ++r) {
    if (tg[r] == -100) continue;
    ++cnt;
  }
  for (int r = 0; r < N; ++r) {
    if (tg[r] == -100) continue;
    double mx = -INFINITY;
    int arg = 0;
    for (int c = 0; c < V; ++c)
      if (lv[r * V + c] > mx) {
        mx = lv[r * V + c];
        arg = c;
      }
    double s = 0;
    for (int c = 0; c < V; ++c) s += std::exp(lv[r * V + c] - mx);
    const double lse = mx + std::log(s);
    for (int c = 0; c < V; ++c) {
      const double qc = (c == tg[r] ? 1 - ls : 0) + ls / V;
      tot -= qc * (lv[r * V + c] - lse);
      dref[r * V + c] = (std::exp(lv[r * V + c] - lse) - qc) / cnt;
    }
    correct += arg == tg[r];
  }
  EXPECT_NEAR(read(*be, loss)[0], tot / cnt, 1e-5);
  expect_near(read(*be, dl), dref, 1e-5, "dlogits");
  const auto st = read(*be, stats);
  EXPECT_EQ(st[0], float(cnt));
  EXPECT_EQ(st[1], float(correct));
}

TEST_F(Onednn, AdamAndAdamWMatchTheFormula) {
  const int n = 37;
  const auto wv = randn(n, 60), mv = randn(n, 61, 0.1f), gv = randn(n, 63);
  std::vector<float> vv(n);
  for (int i = 0; i < n; ++i) vv[i] = std::fabs(randn(n, 62)[i]) * 0.01f;
  for (bool decoupled : {false, true}) {
    ablate::AdamParams p;
    p.lr = 1e-2f;
    p.weight_decay = 0.1f;
    p.decoupled = decoupled;
    p.step = 3;
    p.grad_scale = 0.5f;
    Tensor w = make(*be, {n}, wv), m = make(*be, {n}, mv), v = make(*be, {n}, vv), g = make(*be, {n}, gv),
           wl = be->empty({n}, DType::BF16);
    be->adam_update(w, m, v, &wl, g, p);
    const auto wr = read(*be, w), wlr = read(*be, wl);
    for (int i = 0; i < n; ++i) {
      double gr = double(gv[i]) * p.grad_scale;
      if (!decoupled) gr += p.weight_decay * wv[i];
      const double mm = p.beta1 * mv[i] + (1 - p.beta1) * gr, vvv = p.beta2 * vv[i] + (1 - p.beta2) * gr * gr;
      const double mh = mm / (1 - std::pow(double(p.beta1), 3)), vh = vvv / (1 - std::pow(double(p.beta2), 3));
      double upd = mh / (std::sqrt(vh) + p.eps);
      if (decoupled) upd += p.weight_decay * wv[i];
      EXPECT_NEAR(wr[i], wv[i] - p.lr * upd, 1e-6) << i;
      EXPECT_EQ(wlr[i], ablate::round_to_bf16(wr[i])) << i;
    }
  }
}

TEST_F(Onednn, ElementwiseEmbeddingHeadsCastAndSumSquares) {
  // add with a repeating b ([T, D] over [B, T, D]) and its backward (db sums the repeats).
  const int B = 3, T = 4, D = 5;
  const auto av = randn(B * T * D, 70), bv = randn(T * D, 71), dyv = randn(B * T * D, 72);
  Tensor a = make(*be, {B, T, D}, av), b = make(*be, {T, D}, bv), y = be->empty({B, T, D}, DType::F32);
  be->add_forward(y, a, b, 2.0f, -1.0f);
  std::vector<double> yr(B * T * D), dbr(T * D, 0.0);
  for (int i = 0; i < B * T * D; ++i) {
    yr[i] = 2.0 * av[i] - bv[i % (T * D)];
    dbr[i % (T * D)] += -1.0 * dyv[i];
  }
  expect_near(read(*be, y), yr, 1e-6, "add");
  Tensor dy = make(*be, {B, T, D}, dyv), da = be->empty({B, T, D}, DType::F32), db = be->empty({T, D}, DType::F32);
  be->fill(da, 0.0f);
  be->fill(db, 0.0f);
  be->add_backward(&da, &db, dy, 2.0f, -1.0f);
  std::vector<double> dar(dyv.begin(), dyv.end());
  for (auto& x : dar) x *= 2.0;
  expect_near(read(*be, da), dar, 1e-6, "da");
  expect_near(read(*be, db), dbr, 1e-5, "db");

  // embedding gather and deterministic scatter-add with repeated ids.
  const int V = 6, N = 7;
  const std::vector<std::int32_t> ids = {1, 3, 1, 0, 5, 1, 3};
  const auto tv = randn(V * D, 73), gv = randn(N * D, 74);
  Tensor table = make(*be, {V, D}, tv), idt = be->empty({N}, DType::I32), e = be->empty({N, D}, DType::F32);
  be->copy_from_host(idt, ids.data());
  be->embedding_forward(e, idt, table);
  std::vector<double> er(N * D), dtr(V * D, 0.0);
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < D; ++j) {
      er[r * D + j] = tv[ids[r] * D + j];
      dtr[ids[r] * D + j] += gv[r * D + j];
    }
  expect_near(read(*be, e), er, 0, "embedding");
  Tensor dt = be->empty({V, D}, DType::F32), ge = make(*be, {N, D}, gv);
  be->fill(dt, 0.0f);
  be->embedding_backward(dt, ge, idt);
  expect_near(read(*be, dt), dtr, 1e-6, "dtable");
  std::vector<std::int32_t> bad = {0, 9, 0, 0, 0, 0, 0};
  be->copy_from_host(idt, bad.data());
  EXPECT_THROW(be->embedding_forward(e, idt, table), ablate::Error);

  // split part 1 of 3 then merge back equals that slice of x.
  const int H = 2, Dh = 3;
  const auto xv = randn(B * T * 3 * H * Dh, 75);
  Tensor x = make(*be, {B, T, 3 * H * Dh}, xv), heads = be->empty({B, H, T, Dh}, DType::F32),
         merged = be->empty({B, T, H * Dh}, DType::F32);
  be->split_heads_forward(heads, x, 3, 1);
  be->merge_heads_forward(merged, heads);
  const auto hv = read(*be, heads), mv = read(*be, merged);
  for (int bb = 0; bb < B; ++bb)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < Dh; ++d) {
          const float src = xv[(bb * T + t) * 3 * H * Dh + 1 * H * Dh + h * Dh + d];
          ASSERT_EQ(hv[((bb * H + h) * T + t) * Dh + d], src);
          ASSERT_EQ(mv[(bb * T + t) * H * Dh + h * Dh + d], src);
        }
  Tensor dx = be->empty({B, T, 3 * H * Dh}, DType::F32);
  be->fill(dx, 0.0f);
  be->split_heads_backward(dx, heads, 3, 1);
  const auto dxv = read(*be, dx);
  for (int i = 0; i < B * T * 3 * H * Dh; ++i) ASSERT_EQ(dxv[i], (i / (H * Dh)) % 3 == 1 ? xv[i] : 0.0f) << i;

  // cast f32 -> bf16 rounds like ablate::float_to_bf16; sum_squares accumulates.
  Tensor xb = be->empty({B, T, 3 * H * Dh}, DType::BF16);
  be->cast(xb, x);
  std::vector<std::uint16_t> raw(xv.size());
  be->copy_to_host(raw.data(), xb);
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_EQ(raw[i], ablate::float_to_bf16(xv[i]));
  Tensor tot = make(*be, {1}, {1.0f});
  be->sum_squares(tot, x);
  double ss = 1.0;
  for (float f : xv) ss += double(f) * f;
  EXPECT_NEAR(read(*be, tot)[0], ss, 1e-4 * ss);
}

// bf16 values with f32 parameter gradients: close to the f32 result at bf16 precision.
TEST_F(Onednn, Bf16LinearAndAttentionTrackF32) {
  const int N = 16, I = 32, O = 24;
  const auto xv = randn(N * I, 80), wv = randn(O * I, 81, 0.2f), dyv = randn(N * O, 82);
  Tensor x = make(*be, {N, I}, xv, DType::BF16), w = make(*be, {O, I}, wv, DType::BF16), y = be->empty({N, O}, DType::BF16),
         pre = be->empty({N, O}, DType::BF16), dy = make(*be, {N, O}, dyv, DType::BF16);
  be->linear_forward(y, &pre, x, w, nullptr, Activation::GeluTanh);
  Tensor dw = be->empty({O, I}, DType::F32), dx = be->empty({N, I}, DType::BF16);
  be->fill(dw, 0.0f);
  be->fill(dx, 0.0f);
  be->linear_backward(&dx, &dw, nullptr, dy, x, w, &pre, y, Activation::GeluTanh, GradStore::Add);
  Tensor xf = make(*be, {N, I}, xv), wf = make(*be, {O, I}, wv), yf = be->empty({N, O}, DType::F32),
         pf = be->empty({N, O}, DType::F32), dyf = make(*be, {N, O}, dyv), dwf = be->empty({O, I}, DType::F32);
  be->linear_forward(yf, &pf, xf, wf, nullptr, Activation::GeluTanh);
  be->fill(dwf, 0.0f);
  be->linear_backward(nullptr, &dwf, nullptr, dyf, xf, wf, &pf, yf, Activation::GeluTanh, GradStore::Add);
  const auto a = read(*be, y), b = read(*be, yf), c = read(*be, dw), d = read(*be, dwf);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 0.03 * (1 + std::fabs(b[i]))) << i;
  for (std::size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], d[i], 0.05 * (1 + std::fabs(d[i]))) << i;
}

// Runs a small training-like op sequence; returns every output's bytes.
std::vector<float> op_sequence(Backend& be, DType dt) {
  const int B = 2, H = 2, T = 8, Dh = 8, D = H * Dh, F = 32;
  Tensor x = make(be, {B * T, D}, randn(B * T * D, 90), dt), w1 = make(be, {F, D}, randn(F * D, 91, 0.2f), dt),
         w2 = make(be, {3 * D, F}, randn(3 * D * F, 92, 0.2f), dt), b1 = make(be, {F}, randn(F, 93), dt);
  Tensor h = be.empty({B * T, F}, dt), pre = be.empty({B * T, F}, dt), qkv = be.empty({B, T, 3 * D}, dt);
  be.linear_forward(h, &pre, x, w1, &b1, Activation::GeluErf);
  Tensor qkv2 = qkv.reshaped({B * T, 3 * D});
  be.linear_forward(qkv2, nullptr, h, w2, nullptr, Activation::None);
  Tensor q = be.empty({B, H, T, Dh}, dt), k = be.empty({B, H, T, Dh}, dt), v = be.empty({B, H, T, Dh}, dt);
  be.split_heads_forward(q, qkv, 3, 0);
  be.split_heads_forward(k, qkv, 3, 1);
  be.split_heads_forward(v, qkv, 3, 2);
  ablate::AttentionParams p;
  p.causal = true;
  p.scale = 0.35f;
  p.dropout = 0.1f;
  p.rng = {1, 2, 3};
  Tensor o = be.empty({B, H, T, Dh}, dt), lse = be.empty({B, H, T}, DType::F32);
  be.attention_forward(o, lse, nullptr, q, k, v, p);
  Tensor dq = be.empty(q.shape(), dt), dk = be.empty(k.shape(), dt), dv = be.empty(v.shape(), dt);
  be.fill(dq, 0);
  be.fill(dk, 0);
  be.fill(dv, 0);
  be.attention_backward(&dq, &dk, &dv, o, o, lse, q, k, v, p);
  Tensor dqkv = be.empty({B, T, 3 * D}, dt), dh = be.empty({B * T, F}, dt), dw2 = be.empty({3 * D, F}, DType::F32),
         dw1 = be.empty({F, D}, DType::F32), db1 = be.empty({F}, DType::F32), dx = be.empty({B * T, D}, dt);
  for (Tensor* t : {&dqkv, &dh, &dw2, &dw1, &db1, &dx}) be.fill(*t, 0);
  be.split_heads_backward(dqkv, dq, 3, 0);
  be.split_heads_backward(dqkv, dk, 3, 1);
  be.split_heads_backward(dqkv, dv, 3, 2);
  be.linear_backward(&dh, &dw2, nullptr, dqkv.reshaped({B * T, 3 * D}), h, w2, nullptr, qkv2, Activation::None, GradStore::Add);
  be.linear_backward(&dx, &dw1, &db1, dh, x, w1, &pre, h, Activation::GeluErf, GradStore::Add);
  Tensor mean = be.empty({B * T}, DType::F32), rstd = be.empty({B * T}, DType::F32), ln = be.empty({B * T, D}, dt);
  Tensor gamma = make(be, {D}, randn(D, 94), dt), beta = make(be, {D}, randn(D, 95), dt);
  be.layer_norm_forward(ln, mean, rstd, dx, gamma, beta, 1e-5f);
  Tensor total = be.empty({1}, DType::F32);
  be.fill(total, 0);
  be.sum_squares(total, dw1);
  std::vector<float> all;
  for (const Tensor* t : {&o, &lse, &dq, &dk, &dv, &dw2, &dw1, &db1, &dx, &ln, &total}) {
    const auto r = read(be, *t);
    all.insert(all.end(), r.begin(), r.end());
  }
  return all;
}

TEST_F(Onednn, RepeatedRunsAreBitIdentical) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const auto a = op_sequence(*be, dt), b = op_sequence(*be, dt);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << ablate::dtype_name(dt);
    auto fresh = load_backend();
    const auto c = op_sequence(*fresh, dt);
    EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0) << "fresh backend, " << ablate::dtype_name(dt);
  }
}

TEST(OnednnCache, WarmSequenceCreatesNoPrimitiveAndAllocatesNothing) {
  auto be = linked_backend();
  for (DType dt : {DType::F32, DType::BF16}) {
    op_sequence(*be, dt);  // warm up
    const auto s0 = backend_onednn::cache_stats(*be);
    op_sequence(*be, dt);
    const auto s1 = backend_onednn::cache_stats(*be);
    EXPECT_EQ(s1.primitives_created, s0.primitives_created) << ablate::dtype_name(dt);
    EXPECT_GT(s1.hits, s0.hits);
    EXPECT_EQ(s1.system_allocations, s0.system_allocations) << ablate::dtype_name(dt);
  }
  EXPECT_GT(backend_onednn::cache_stats(*be).primitives_created, 0u);
}

}  // namespace

// Each Philox path (AVX-512: 8 groups of 16 blocks per step, then 16 at a time; AVX2: 8 groups of
// 8, then 8; and the dispatch that chains them at run time) equals ablate::philox_uniform4
// everywhere, including counters whose low word wraps inside a step, counters above 2^32, unaligned
// starts and tails; a path this CPU lacks is skipped.
TEST(OnednnKernels, VectorPhiloxEqualsScalarPhilox) {
  using Path = std::int64_t (*)(float*, const ablate::RngKey&, std::uint64_t, std::int64_t);
  const Path dispatch = [](float* u, const ablate::RngKey& k, std::uint64_t b, std::int64_t n) -> std::int64_t {
    backend_onednn::philox_uniforms(u, k, b, n);
    return n;
  };
  std::vector<std::pair<const char*, Path>> paths{{"dispatch", dispatch}};
#if defined(__x86_64__)
  if (backend_onednn::cpu_has_avx512()) paths.emplace_back("avx512", &backend_onednn::philox_uniforms_avx512);
  if (backend_onednn::cpu_has_avx2()) paths.emplace_back("avx2", &backend_onednn::philox_uniforms_avx2);
#endif
  const ablate::RngKey key{0xfedcba9876543210ULL, 0x3'0000'0011ULL, 0xabcdef};
  for (const auto& [name, path] : paths) {
    std::vector<float> u(4 * 173, -1.0f);
    for (std::uint64_t blk0 : {std::uint64_t{0}, std::uint64_t{5}, (std::uint64_t{1} << 32) - 3, std::uint64_t{1} << 40}) {
      const std::int64_t done = path(u.data(), key, blk0, 173);
      // the vector paths leave the tail (the dispatch: AVX-512 128 + 32 blocks, AVX2 8 more, then
      // one by one; AVX2 alone: 64 + 64 + 5 x 8)
      EXPECT_EQ(done, std::string(name) == "dispatch" ? 173 : std::string(name) == "avx512" ? 160 : 168) << name;
      for (std::int64_t i = 0; i < done; ++i) {
        float r[4];
        ablate::philox_uniform4(key, blk0 + static_cast<std::uint64_t>(i), r);
        for (int j = 0; j < 4; ++j) ASSERT_EQ(u[4 * i + j], r[j]) << name << " " << blk0 << " " << i << " " << j;
      }
    }
  }
}

// The attention tiles' AVX-512 GEMM block (small_gemm.hpp) against a double loop, for A read in
// either layout, every row and column remainder, K = 0, accumulate or not; it writes nothing
// outside C's [M, N]. And the register transpose, exactly, at every edge. Skipped without AVX-512.
TEST(OnednnKernels, SmallGemmAndTransposeMatchNaiveLoops) {
#if defined(__x86_64__)
  if (!backend_onednn::cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the fused attention tiles are not used";
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto random = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
  };
  for (std::int64_t M : {1, 5, 8, 13, 33})
    for (std::int64_t N : {1, 7, 16, 17, 32, 64, 65, 100})
      for (std::int64_t K : {0, 1, 9, 64})
        for (const bool trans_a : {false, true})
          for (const bool acc : {false, true}) {
            const std::vector<float> a = random(static_cast<std::size_t>(std::max<std::int64_t>(M * K, 1)));
            const std::vector<float> b = random(static_cast<std::size_t>(std::max<std::int64_t>(K * N, 1)));
            const std::int64_t ldc = N + 3, ai = trans_a ? 1 : K, ak = trans_a ? M : 1;
            std::vector<float> c = random(static_cast<std::size_t>(M * ldc));
            const std::vector<float> c0 = c;
            backend_onednn::small_gemm(M, N, K, a.data(), ai, ak, b.data(), N, c.data(), ldc, 0.5f, acc);
            for (std::int64_t i = 0; i < M; ++i)
              for (std::int64_t j = 0; j < ldc; ++j) {
                const std::size_t at = static_cast<std::size_t>(i * ldc + j);
                if (j >= N) {
                  ASSERT_EQ(c[at], c0[at]) << "wrote past N at " << i << "," << j;
                  continue;
                }
                double want = acc ? c0[at] : 0.0;
                for (std::int64_t k = 0; k < K; ++k)
                  want += 0.5 * double(a[static_cast<std::size_t>(i * ai + k * ak)]) * b[static_cast<std::size_t>(k * N + j)];
                ASSERT_NEAR(c[at], want, 1e-5 * (1.0 + std::fabs(want))) << "M " << M << " N " << N << " K " << K << " trans_a "
                                                                         << trans_a << " acc " << acc << " at " << i << "," << j;
              }
          }
  for (std::int64_t R : {1, 3, 16, 17, 31, 64, 100})
    for (std::int64_t C : {1, 5, 16, 33, 64}) {
      const std::vector<float> src = random(static_cast<std::size_t>(R * C));
      std::vector<float> dst(static_cast<std::size_t>(R * C + 16), 7.0f);
      backend_onednn::transpose_small(dst.data(), src.data(), R, C);
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t c = 0; c < C; ++c)
          ASSERT_EQ(dst[static_cast<std::size_t>(c * R + r)], src[static_cast<std::size_t>(r * C + c)]) << R << "x" << C;
      for (std::size_t i = static_cast<std::size_t>(R * C); i < dst.size(); ++i) ASSERT_EQ(dst[i], 7.0f) << "wrote past the end";
    }
#else
  GTEST_SKIP() << "not x86-64";
#endif
}

// The attention tiles' AVX-512 score rows (tile_rows.hpp) against double loops, for every key count
// up to S (a masked last chunk of 16, S past the keys): softmax with and without probs and keep
// (lse too), P recomputed from the lse, P' = P ⊙ keep, dS with and without keep; zeros on [n, S),
// nothing written past S. Skipped without AVX-512.
TEST(OnednnKernels, TileRowsMatchNaiveLoops) {
#if defined(__x86_64__)
  if (!backend_onednn::cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the fused attention tiles are not used";
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f), unit(0.0f, 1.0f);
  constexpr float kSentinel = 7.0f;
  for (std::int64_t S : {1, 16, 31, 33, 128})
    for (std::int64_t n = 1; n <= S; n += (S > 40 ? 7 : 1))
      for (const bool with_keep : {false, true}) {
        const auto near = [&](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
          for (std::int64_t j = 0; j < S; ++j)
            ASSERT_NEAR(got[j], j < n ? want[j] : 0.0, 2e-6 * (1.0 + std::fabs(want[j])))
                << what << " S " << S << " n " << n << " j " << j;
          ASSERT_EQ(got[S], kSentinel) << what << ": wrote past S";
        };
        std::vector<float> x(S + 1, kSentinel), keep(S), P(S + 1, kSentinel), probs(S + 1, kSentinel);
        for (std::int64_t j = 0; j < S; ++j) x[j] = dist(gen), keep[j] = unit(gen) < 0.2f ? 0.0f : 1.25f;
        double mx = -1e30, sum = 0;
        for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, double(x[j]));
        std::vector<double> p(S, 0.0), pk(S, 0.0);
        for (std::int64_t j = 0; j < n; ++j) sum += std::exp(double(x[j]) - mx);
        for (std::int64_t j = 0; j < n; ++j)
          p[j] = std::exp(double(x[j]) - mx) / sum, pk[j] = p[j] * (with_keep ? keep[j] : 1.0f);
        // softmax: row = P' (or P), probs = P, lse
        std::vector<float> row = x;
        float lse = 0;
        backend_onednn::softmax_row16(row.data(), lse, with_keep ? probs.data() : nullptr, n, S,
                                      with_keep ? keep.data() : nullptr);
        near(row, pk, "softmax");
        if (with_keep) near(probs, p, "probs");
        ASSERT_NEAR(lse, mx + std::log(sum), 1e-5 * (1.0 + std::fabs(mx))) << "lse S " << S << " n " << n;
        // P from the scores and the lse; P' = P ⊙ keep
        std::vector<float> pr = x;
        backend_onednn::probs_row16(pr.data(), n, S, lse);
        near(pr, p, "probs_row16");
        std::vector<float> pd(S + 1, kSentinel);
        backend_onednn::product_row16(pd.data(), keep.data(), pr.data(), n, S);
        std::vector<double> want_pd(S, 0.0);
        for (std::int64_t j = 0; j < n; ++j) want_pd[j] = double(keep[j]) * pr[j];
        near(pd, want_pd, "product_row16");
        // dS = P ⊙ (dP - sum_j P_j dP_j), dP = dP' ⊙ keep
        std::vector<float> g(S + 1, kSentinel);
        for (std::int64_t j = 0; j < S; ++j) g[j] = dist(gen);
        double dot = 0;
        std::vector<double> dp(S, 0.0), ds(S, 0.0);
        for (std::int64_t j = 0; j < n; ++j) dp[j] = double(g[j]) * (with_keep ? keep[j] : 1.0f), dot += double(pr[j]) * dp[j];
        for (std::int64_t j = 0; j < n; ++j) ds[j] = double(pr[j]) * (dp[j] - dot);
        backend_onednn::dscores_row16(g.data(), pr.data(), with_keep ? keep.data() : nullptr, n, S);
        near(g, ds, "dscores_row16");
      }
#else
  GTEST_SKIP() << "not x86-64";
#endif
}

// The branch-free exp / erfc / tanh behind softmax, cross-entropy and the activations stay within
// a few float ulps of the libm values; GELU's far negative tail keeps ~1e-5 relative accuracy
// (bounded by rounding the argument of exp(-x^2/2) to float).
TEST(OnednnKernels, FastMathMatchesLibm) {
  double worst_exp = 0;
  for (double x = -87.0; x <= 88.0; x += 0.01237) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(double(xf));
    worst_exp = std::max(worst_exp, std::fabs(backend_onednn::fast_exp(xf) - want) / want);
  }
  EXPECT_LT(worst_exp, 4e-7);
  EXPECT_EQ(backend_onednn::fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  for (double x = -12.0; x <= 12.0; x += 0.00731) {
    const float xf = static_cast<float>(x);
    const double cdf = 0.5 * std::erfc(-double(xf) / std::sqrt(2.0));
    const double gelu = double(xf) * cdf, dgelu = cdf + double(xf) * std::exp(-0.5 * double(xf) * xf) / std::sqrt(2 * M_PI);
    const double th = std::tanh(std::sqrt(2 / M_PI) * (double(xf) + 0.044715 * double(xf) * xf * xf));
    const double gelu_t = 0.5 * xf * (1 + th);
    const double sg = 1 / (1 + std::exp(-double(xf)));
    ASSERT_NEAR(backend_onednn::act_fwd<Activation::GeluErf>(xf), gelu, 1e-5 * std::fabs(gelu) + 1e-12) << x;
    ASSERT_NEAR(backend_onednn::act_bwd<Activation::GeluErf>(xf), dgelu, 2e-6 * (1 + std::fabs(dgelu))) << x;
    ASSERT_NEAR(backend_onednn::act_fwd<Activation::GeluTanh>(xf), gelu_t, 1e-6 * (1 + std::fabs(gelu_t))) << x;
    ASSERT_NEAR(backend_onednn::act_fwd<Activation::SiLU>(xf), xf * sg, 1e-6 * (1 + std::fabs(xf * sg))) << x;
  }
}
