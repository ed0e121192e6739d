// Tests of positional_encoding/xpos written only with Ablate's plugin test kit
// (ablate/testing/kit.hpp), against the built plugin: a cached decode equals a full pass, q.k
// depends on the distance only and decays with it as zeta^((n-m)/s), and bad options are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ablate/testing/kit.hpp"

namespace {

using namespace ablate;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

ModelDims dims() {
  ModelDims d;
  d.d_model = 8;
  d.heads = 2;
  d.dropout = 0.0f;
  return d;
}

// q.k of one head (Dh 4) with q at position n and k at m, through `pe`'s query and key sides.
double score(Backend& be, const PositionalEncoding& pe, std::int64_t n, std::int64_t m, const std::vector<float>& q,
             const std::vector<float>& k) {
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  const auto var = [&](const std::vector<float>& v) {
    Tensor t = be.empty({1, 1, 1, 4}, DType::F32);
    be.copy_from_host(t, v.data());
    return g.constant(t);
  };
  const Var rq = pe.rotate_queries(g, var(q), EncodingPositions::range(be, n, 1));
  const Var rk = pe.rotate_keys(g, var(k), EncodingPositions::range(be, m, 1));
  std::vector<float> a(4), b(4);
  be.copy_to_host(a.data(), rq.value());
  be.copy_to_host(b.data(), rk.value());
  double dot = 0;
  for (std::size_t i = 0; i < 4; ++i) dot += static_cast<double>(a[i]) * b[i];
  return dot;
}

TEST(PositionalEncodingXpos, ACachedDecodeEqualsAFullPass) {
  auto be = kit::make_backend("reference");
  auto xpos = kit::make_component<PositionalEncoding>("xpos");
  auto mha = kit::make_component<Attention>("mha");
  const kit::CacheCheckResult r = kit::cache_equivalence(*be, *mha, xpos.get(), dims());
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(PositionalEncodingXpos, QueryKeyScoresDependOnTheDistanceAndDecayWithIt) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  auto xpos = kit::make_component<PositionalEncoding>("xpos", {{"scale_base", "4"}});
  auto rotary = kit::make_component<PositionalEncoding>("rotary");
  xpos->build(ParamScope(store, 1, "xpos"), dims());
  rotary->build(ParamScope(store, 1, "rotary"), dims());
  const std::vector<float> q = {0.3f, -1.2f, 0.8f, 0.5f}, k = {1.1f, 0.4f, -0.7f, 0.9f};
  EXPECT_NEAR(score(*be, *xpos, 9, 2, q, k), score(*be, *xpos, 17, 10, q, k), 1e-5) << "the same distance, the same score";
  EXPECT_NEAR(score(*be, *xpos, 6, 6, q, k), score(*be, *rotary, 6, 6, q, k), 1e-5) << "distance 0: rotary's";
  // On one pair of dims (pair i: dims i and i + 2), the score is rotary's times zeta_i^((n-m)/s),
  // zeta_0 = (0 + 0.4) / 1.4 and zeta_1 = (2/4 + 0.4) / 1.4, here at n - m = 7, s = 4.
  const std::vector<float> q0 = {0.3f, 0.0f, 0.8f, 0.0f}, k0 = {1.1f, 0.0f, -0.7f, 0.0f};
  const std::vector<float> q1 = {0.0f, -1.2f, 0.0f, 0.5f}, k1 = {0.0f, 0.4f, 0.0f, 0.9f};
  const double plain0 = score(*be, *rotary, 9, 2, q0, k0), plain1 = score(*be, *rotary, 9, 2, q1, k1);
  ASSERT_GT(std::abs(plain0), 0.1);
  ASSERT_GT(std::abs(plain1), 0.1);
  EXPECT_NEAR(score(*be, *xpos, 9, 2, q0, k0), plain0 * std::pow(0.4 / 1.4, 7.0 / 4.0), 1e-5);
  EXPECT_NEAR(score(*be, *xpos, 9, 2, q1, k1), plain1 * std::pow(0.9 / 1.4, 7.0 / 4.0), 1e-5);
}

TEST(PositionalEncodingXpos, BadOptionsAndHeadWidthsAreRefused) {
  EXPECT_THROW(kit::make_component<PositionalEncoding>("xpos", {{"gamma", "-0.1"}}), Error);
  EXPECT_THROW(kit::make_component<PositionalEncoding>("xpos", {{"scale_base", "0"}}), Error);
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  ModelDims odd = dims();
  odd.d_model = 6;  // Dh 3
  EXPECT_THROW(kit::make_component<PositionalEncoding>("xpos")->build(ParamScope(store, 1, "x"), odd), Error);
}

}  // namespace
