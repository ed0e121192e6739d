// Forward known-value tests of the reference backend: attention probabilities (rows sum to 1,
// masked keys exactly 0, causal/offset/padding), layer norm statistics, cross entropy and
// Adam/AdamW against hand-computed formulas, dropout masks against dropout_keep(), and the
// KV-cache time-slice write against a host copy (other rows untouched, bad arguments rejected).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ablate/philox.hpp"
#include "reference_test_util.hpp"

namespace ablate::testing {
namespace {

std::vector<float> ramp(std::int64_t n, float a, float b) {  // deterministic, varied values
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = a * std::sin(b * static_cast<float>(i) + 0.3f);
  return v;
}

TEST(ReferenceBackend, LoadsAsAPluginWithDocumentedCaps) {
  const BackendCaps c = reference_backend()->caps();
  EXPECT_EQ(c.device, "cpu");
  EXPECT_TRUE(c.host_addressable);
  EXPECT_TRUE(c.bf16);
  EXPECT_TRUE(c.deterministic);
  EXPECT_EQ(c.threads, 1);
}

TEST(ReferenceBackend, ErrorsNameTheOpAndTheTensors) {
  Backend& be = *reference_backend();
  Tensor x = be.empty(Shape{3, 7}, DType::F32), w = be.empty(Shape{5, 6}, DType::F32), y = be.empty(Shape{3, 5}, DType::F32);
  try {
    be.linear_forward(y, nullptr, x, w, nullptr, Activation::None);
    FAIL() << "no error for mismatched shapes";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("linear_forward"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[5, 6]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[3, 7]"), std::string::npos) << m;
  }
  Tensor ids = i32_tensor(be, Shape{2}, {0, 9});
  Tensor table = be.empty(Shape{4, 3}, DType::F32), e = be.empty(Shape{2, 3}, DType::F32);
  be.fill(table, 1.0f);
  EXPECT_THROW(be.embedding_forward(e, ids, table), Error);
  Tensor bf = be.empty(Shape{3, 5}, DType::BF16);
  EXPECT_THROW(be.mul_forward(bf, y, y), Error);  // mixed dtypes
  EXPECT_THROW(be.linear_forward(y, nullptr, x, w, nullptr, Activation::GeluErf), Error);
}

// probs of a [B=3, H=2, T=6, S=5] attention with the given mask, and lse/out.
struct AttentionRun {
  std::vector<float> probs, lse, out;
};
AttentionRun run_attention(bool causal, std::vector<std::int32_t> lengths, std::int64_t offset, float dropout = 0) {
  Backend& be = *reference_backend();
  const std::int64_t B = 3, H = 2, T = 6, S = 5, Dh = 4;
  Tensor q = f32_tensor(be, Shape{B, H, T, Dh}, ramp(B * H * T * Dh, 1.5f, 0.7f));
  Tensor k = f32_tensor(be, Shape{B, H, S, Dh}, ramp(B * H * S * Dh, 1.2f, 1.3f));
  Tensor v = f32_tensor(be, Shape{B, H, S, Dh}, ramp(B * H * S * Dh, 1.0f, 0.4f));
  Tensor out = be.empty(Shape{B, H, T, Dh}, DType::F32), lse = be.empty(Shape{B, H, T}, DType::F32);
  Tensor probs = be.empty(Shape{B, H, T, S}, DType::F32);
  Tensor len;
  AttentionParams p;
  p.causal = causal;
  p.query_offset = offset;
  p.scale = 0.5f;
  p.dropout = dropout;
  p.rng = RngKey{1, 2, 3};
  if (!lengths.empty()) {
    len = i32_tensor(be, Shape{B}, lengths);
    p.key_lengths = &len;
  }
  be.attention_forward(out, lse, &probs, q, k, v, p);
  return {host(be, probs), host(be, lse), host(be, out)};
}

TEST(ReferenceAttention, RowsSumToOneAndMaskedKeysGetExactlyZero) {
  const std::int64_t B = 3, H = 2, T = 6, S = 5, Dh = 4;
  struct M {
    bool causal;
    std::vector<std::int32_t> lengths;
    std::int64_t offset;
  };
  for (const M& m : {M{false, {}, 0}, M{true, {}, 0}, M{true, {}, 2}, M{false, {5, 2, 0}, 0}, M{true, {3, 5, 0}, 1}}) {
    const AttentionRun r = run_attention(m.causal, m.lengths, m.offset);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t t = 0; t < T; ++t) {
          const std::int64_t row = (b * H + h) * T + t;
          double sum = 0;
          int visible = 0;
          for (std::int64_t s = 0; s < S; ++s) {
            const bool vis =
                (!m.causal || s <= t + m.offset) && (m.lengths.empty() || s < m.lengths[static_cast<std::size_t>(b)]);
            const float p = r.probs[static_cast<std::size_t>(row * S + s)];
            if (vis) {
              ++visible;
              EXPECT_GT(p, 0.0f);
            } else {
              EXPECT_EQ(p, 0.0f) << "masked key " << s << " of row " << row << " has probability " << p;
            }
            sum += p;
          }
          if (visible > 0) {
            EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << row;
            EXPECT_TRUE(std::isfinite(r.lse[static_cast<std::size_t>(row)]));
          } else {  // no visible key: out = 0, lse = -inf
            EXPECT_EQ(sum, 0.0);
            EXPECT_EQ(r.lse[static_cast<std::size_t>(row)], -std::numeric_limits<float>::infinity());
            for (std::int64_t e = 0; e < Dh; ++e) EXPECT_EQ(r.out[static_cast<std::size_t>(row * Dh + e)], 0.0f);
          }
        }
  }
}

TEST(ReferenceAttention, CausalMaskHidesTheFuture) {
  const AttentionRun r = run_attention(true, {}, 0);
  const std::int64_t S = 5;
  // Query 0 sees only key 0; query 3 sees keys 0..3; query 5 (T > S) sees all 5.
  EXPECT_FLOAT_EQ(r.probs[0], 1.0f);
  for (std::int64_t s = 1; s < S; ++s) EXPECT_EQ(r.probs[static_cast<std::size_t>(s)], 0.0f);
  EXPECT_GT(r.probs[3 * S + 3], 0.0f);
  EXPECT_EQ(r.probs[3 * S + 4], 0.0f);
  EXPECT_GT(r.probs[5 * S + 4], 0.0f);
  // With query_offset 2, query 0 sees keys 0..2.
  const AttentionRun o = run_attention(true, {}, 2);
  EXPECT_GT(o.probs[2], 0.0f);
  EXPECT_EQ(o.probs[3], 0.0f);
}

TEST(ReferenceAttention, DropoutChangesOutputButNotTheLoggedProbabilities) {
  const AttentionRun a = run_attention(false, {}, 0, 0.0f), d = run_attention(false, {}, 0, 0.5f);
  EXPECT_EQ(a.probs, d.probs);
  EXPECT_EQ(a.lse, d.lse);
  EXPECT_NE(a.out, d.out);
}

TEST(ReferenceLayerNorm, RowsHaveMeanZeroAndVarianceOne) {
  Backend& be = *reference_backend();
  const std::int64_t N = 5, D = 33;
  std::vector<float> xv = ramp(N * D, 3.0f, 0.37f);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] += static_cast<float>(i / D);  // different row means
  Tensor x = f32_tensor(be, Shape{N, D}, xv);
  Tensor gamma = f32_tensor(be, Shape{D}, std::vector<float>(D, 1.0f)),
         beta = f32_tensor(be, Shape{D}, std::vector<float>(D, 0.0f));
  Tensor y = be.empty(Shape{N, D}, DType::F32), mean = be.empty(Shape{N}, DType::F32), rstd = be.empty(Shape{N}, DType::F32);
  be.layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-6f);
  const std::vector<float> yv = host(be, y), mv = host(be, mean), rv = host(be, rstd);
  for (std::int64_t n = 0; n < N; ++n) {
    double m = 0, v = 0, xm = 0;
    for (std::int64_t j = 0; j < D; ++j)
      m += yv[static_cast<std::size_t>(n * D + j)], xm += xv[static_cast<std::size_t>(n * D + j)];
    m /= D;
    xm /= D;
    for (std::int64_t j = 0; j < D; ++j) v += std::pow(yv[static_cast<std::size_t>(n * D + j)] - m, 2);
    v /= D;
    EXPECT_NEAR(m, 0.0, 1e-6);
    EXPECT_NEAR(v, 1.0, 1e-4);
    EXPECT_NEAR(mv[static_cast<std::size_t>(n)], xm, 1e-5);
    EXPECT_GT(rv[static_cast<std::size_t>(n)], 0.0f);
  }
}

TEST(ReferenceCrossEntropy, EqualsHandComputedNegativeLogSoftmax) {
  Backend& be = *reference_backend();
  const std::int64_t N = 4, V = 3;
  const std::vector<float> z = {1.0f,  2.0f,  0.5f,   // target 1 (argmax: correct)
                                0.0f,  0.0f,  3.0f,   // ignored
                                -1.0f, 0.5f,  0.25f,  // target 2 (argmax 1: wrong)
                                2.0f,  -2.0f, 0.0f};  // target 0 (correct)
  const std::vector<std::int32_t> t = {1, -1, 2, 0};
  Tensor logits = f32_tensor(be, Shape{N, V}, z), targets = i32_tensor(be, Shape{N}, t);
  for (const float ls : {0.0f, 0.1f}) {
    Tensor loss = be.empty(Shape{1}, DType::F32), dl = be.empty(Shape{N, V}, DType::F32), stats = be.empty(Shape{2}, DType::F32);
    be.cross_entropy_forward(loss, dl, stats, logits, targets, -1, ls);
    // By hand: per counted row, -sum_c q_c log softmax_c with q = (1 - ls) onehot + ls / V.
    double expected = 0;
    std::vector<double> grad(static_cast<std::size_t>(N * V), 0.0);
    const int counted = 3;
    for (std::int64_t n = 0; n < N; ++n) {
      if (t[static_cast<std::size_t>(n)] == -1) continue;
      double e[3], sum = 0;
      for (int c = 0; c < 3; ++c) sum += e[c] = std::exp(static_cast<double>(z[static_cast<std::size_t>(n * V + c)]));
      for (int c = 0; c < 3; ++c) {
        const double q = (c == t[static_cast<std::size_t>(n)] ? 1.0 - ls : 0.0) + ls / 3.0;
        expected -= q * std::log(e[c] / sum);
        grad[static_cast<std::size_t>(n * V + c)] = (e[c] / sum - q) / counted;
      }
    }
    expected /= counted;
    EXPECT_NEAR(host(be, loss)[0], expected, 1e-6) << "label smoothing " << ls;
    const std::vector<float> g = host(be, dl);
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], grad[i], 1e-6) << i;
    for (std::size_t i = 3; i < 6; ++i) EXPECT_EQ(g[i], 0.0f);  // the ignored row
    EXPECT_EQ(host(be, stats), (std::vector<float>{3.0f, 2.0f}));
  }
}

TEST(ReferenceAdam, OneStepEqualsTheTextbookFormula) {
  Backend& be = *reference_backend();
  const std::vector<float> w0 = {0.5f, -1.0f, 2.0f}, m0 = {0.1f, 0.0f, -0.2f}, v0 = {0.01f, 0.0f, 0.04f}, g = {0.3f, -0.6f, 0.0f};
  for (const bool decoupled : {false, true}) {
    AdamParams p;
    p.lr = 0.01f;
    p.beta1 = 0.9f;
    p.beta2 = 0.99f;
    p.eps = 1e-8f;
    p.weight_decay = 0.1f;
    p.decoupled = decoupled;
    p.step = 3;
    p.grad_scale = 0.5f;
    Tensor w = f32_tensor(be, Shape{3}, w0), m = f32_tensor(be, Shape{3}, m0), v = f32_tensor(be, Shape{3}, v0);
    Tensor grad = f32_tensor(be, Shape{3}, g), low = be.empty(Shape{3}, DType::BF16);
    be.adam_update(w, m, v, &low, grad, p);
    const std::vector<float> wv = host(be, w), mv = host(be, m), vv = host(be, v), lv = host(be, low);
    for (std::size_t i = 0; i < 3; ++i) {
      // Textbook (Kingma & Ba 2015, alg. 1; AdamW: Loshchilov & Hutter 2019, alg. 2), by hand:
      const double wd = 0.1, lr = 0.01, b1 = 0.9, b2 = 0.99;
      double gi = 0.5 * g[i];
      if (!decoupled) gi += wd * w0[i];
      const double mi = b1 * m0[i] + (1 - b1) * gi, vi = b2 * v0[i] + (1 - b2) * gi * gi;
      const double mhat = mi / (1 - b1 * b1 * b1), vhat = vi / (1 - b2 * b2 * b2);
      double wi = w0[i] - lr * mhat / (std::sqrt(vhat) + 1e-8);
      if (decoupled) wi -= lr * wd * w0[i];
      EXPECT_NEAR(mv[i], mi, 1e-7);
      EXPECT_NEAR(vv[i], vi, 1e-8);
      EXPECT_NEAR(wv[i], wi, 1e-6) << (decoupled ? "adamw" : "adam") << " element " << i;
      EXPECT_EQ(lv[i], round_to_bf16(wv[i]));
    }
  }
}

TEST(ReferenceDropout, MaskFollowsDropoutKeepAndScalesKeptElements) {
  Backend& be = *reference_backend();
  const std::int64_t n = 20000;
  const float p = 0.3f;
  Tensor x = f32_tensor(be, Shape{4, n / 4}, ramp(n, 2.0f, 0.01f));
  const std::vector<float> xv = host(be, x);
  Tensor y = be.empty(x.shape(), DType::F32), y2 = be.empty(x.shape(), DType::F32);
  const RngKey key{42, 7, 9};
  be.dropout_forward(y, x, p, key);
  be.dropout_forward(y2, x, p, key);
  const std::vector<float> yv = host(be, y);
  EXPECT_EQ(yv, host(be, y2)) << "the same RngKey must give the same mask";
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(key, static_cast<std::uint64_t>(i), p);
    const float expect = keep ? xv[static_cast<std::size_t>(i)] / (1.0f - p) : 0.0f;
    ASSERT_FLOAT_EQ(yv[static_cast<std::size_t>(i)], expect) << "element " << i;
    kept += keep;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.015);
  // Another step or another op id draws another mask.
  for (const RngKey other : {RngKey{42, 8, 9}, RngKey{42, 7, 10}, RngKey{43, 7, 9}}) {
    be.dropout_forward(y2, x, p, other);
    const std::vector<float> ov = host(be, y2);
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < n; ++i)
      differ += (ov[static_cast<std::size_t>(i)] == 0.0f) != (yv[static_cast<std::size_t>(i)] == 0.0f);
    EXPECT_GT(differ, n / 5) << "seed " << other.seed << " step " << other.step << " op " << other.op_id;
  }
  // Backward: dx += dy * mask / (1 - p), the same mask.
  Tensor dx = f32_tensor(be, x.shape(), std::vector<float>(static_cast<std::size_t>(n), 1.0f));
  be.dropout_backward(dx, x, p, key);
  const std::vector<float> dv = host(be, dx);
  for (std::int64_t i = 0; i < n; i += 97)
    EXPECT_FLOAT_EQ(dv[static_cast<std::size_t>(i)], 1.0f + yv[static_cast<std::size_t>(i)]);
}

TEST(ReferenceBackend, BackwardAccumulatesAndNullGradientsAreSkipped) {
  Backend& be = *reference_backend();
  Tensor x = f32_tensor(be, Shape{2, 3}, {1, 2, 3, 4, 5, 6}), w = f32_tensor(be, Shape{1, 3}, {1, 1, 1});
  Tensor y = be.empty(Shape{2, 1}, DType::F32), dy = f32_tensor(be, Shape{2, 1}, {1, 1});
  be.linear_forward(y, nullptr, x, w, nullptr, Activation::None);
  Tensor dw = f32_tensor(be, Shape{1, 3}, {10, 10, 10});
  be.linear_backward(nullptr, &dw, nullptr, dy, x, w, nullptr, y, Activation::None, GradStore::Add);
  EXPECT_EQ(host(be, dw), (std::vector<float>{15, 17, 19}));
  be.linear_backward(nullptr, &dw, nullptr, dy, x, w, nullptr, y, Activation::None, GradStore::Add);
  EXPECT_EQ(host(be, dw), (std::vector<float>{20, 24, 28}));
}

}  // namespace
}  // namespace ablate::testing
