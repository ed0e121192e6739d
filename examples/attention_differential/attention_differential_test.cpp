// Tests of attention/differential written only with Ablate's plugin test kit (ablate/testing/kit.hpp),
// against the built plugin: a cached decode equals a full pass; with q's and k's halves made equal
// (A1 = A2, so a head is (1 - λ) A v), λ moved across 1 negates the output, and λ_init follows the
// layer index; the gradients of its own parameters match finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ablate/testing/gradcheck.hpp"
#include "ablate/testing/kit.hpp"

namespace {

using namespace ablate;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

ModelDims dims(std::int64_t layer = 0) {
  ModelDims d;
  d.d_model = 8;
  d.heads = 2;  // Dh 4: halves of 2
  d.dropout = 0.0f;
  d.attention_dropout = 0.0f;
  d.layer = layer;
  return d;
}

std::vector<float> host(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  be.copy_to_host(v.data(), t);
  return v;
}

void set(Backend& be, Tensor& t, const std::vector<float>& v) { be.copy_from_host(t, v.data()); }

TEST(AttentionDifferential, ACachedDecodeEqualsAFullPassWithAndWithoutPositions) {
  auto be = kit::make_backend("reference");
  for (const char* pe : {"", "rotary"}) {
    auto attention = kit::make_component<Attention>("differential");
    auto positions = *pe ? kit::make_component<PositionalEncoding>(pe) : nullptr;
    const kit::CacheCheckResult r = kit::cache_equivalence(*be, *attention, positions.get(), dims());
    EXPECT_TRUE(r.ok) << pe << "\n" << r.report;
  }
}

// One causal forward of x [2, 5, 8] through `a`, built at `layer` in `store` (seed 3, scope "attn")
// with q's and k's second halves copied from their first (qkv.weight rows, head by head), v's rows
// scaled by 30 and the λ vectors set to `lq1` (lambda_q1 and lambda_k1) and 0 (lambda_q2, lambda_k2).
std::vector<float> equal_halves_output(Backend& be, std::int64_t layer, float lq1) {
  ParameterStore store(be);
  auto a = kit::make_component<Attention>("differential");
  a->build(ParamScope(store, 3, "attn"), dims(layer), AttentionRole::Self);
  Tensor& w = store.get("attn.qkv.weight").value;  // [3D, D]: q rows, k rows, v rows
  std::vector<float> wv = host(be, w);
  for (int block = 0; block < 2; ++block)  // q, k
    for (int head = 0; head < 2; ++head)
      for (int j = 0; j < 2; ++j)
        for (int c = 0; c < 8; ++c)
          wv[static_cast<std::size_t>(((block * 8 + head * 4 + 2 + j) * 8) + c)] =
              wv[static_cast<std::size_t>(((block * 8 + head * 4 + j) * 8) + c)];
  for (std::size_t i = 16 * 8; i < wv.size(); ++i) wv[i] *= 30.0f;  // v rows: a large A v, so the norm's eps is negligible
  set(be, w, wv);
  for (const char* name : {"attn.lambda_q1", "attn.lambda_k1"}) set(be, store.get(name).value, {lq1, lq1});
  for (const char* name : {"attn.lambda_q2", "attn.lambda_k2"}) set(be, store.get(name).value, {0.0f, 0.0f});
  std::vector<float> x(2 * 5 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3f * static_cast<float>(i));
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  Tensor t = be.empty({2, 5, 8}, DType::F32);
  set(be, t, x);
  AttentionCall call;
  call.x = g.constant(t);
  call.mask.causal = true;
  return host(be, a->forward(g, call).value());
}

TEST(AttentionDifferential, EqualHalvesMakeTheSignOfOneMinusLambdaAndLambdaInitByLayerVisible) {
  auto be = kit::make_backend("reference");
  const std::vector<float> base = equal_halves_output(*be, 0, 0.0f);     // λ = λ_init(0) = 0.2: 1 - λ > 0
  const std::vector<float> flipped = equal_halves_output(*be, 0, 1.5f);  // λ = e^4.5 - 1 + 0.2 > 1
  const std::vector<float> deeper = equal_halves_output(*be, 3, 0.0f);   // λ = λ_init(3)
  const double init3 = 0.8 - 0.6 * std::exp(-0.9);
  // The norm's eps (1e-5 in the mean square) keeps its scale invariance from being exact: 2e-3 relative
  // (v scaled by 30 above keeps the mean squares far above eps).
  const auto near = [](double got, double want) { return std::fabs(got - want) <= 2e-3 * std::fabs(want) + 1e-5; };
  double largest = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    largest = std::max(largest, static_cast<double>(std::fabs(base[i])));
    EXPECT_TRUE(near(flipped[i], -base[i])) << i << ": " << flipped[i] << " vs " << -base[i];  // only 1 - λ's sign
    const double scaled = base[i] * (1.0 - init3) / (1.0 - 0.2);                               // scaled by 1 - λ_init
    EXPECT_TRUE(near(deeper[i], scaled)) << i << ": " << deeper[i] << " vs " << scaled;
  }
  EXPECT_GT(largest, 1e-2) << "the outputs compared are not all ~0";
}

TEST(AttentionDifferential, ItsParametersGradientsMatchFiniteDifferences) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  auto a = kit::make_component<Attention>("differential");
  a->build(ParamScope(store, 5, "attn"), dims(1), AttentionRole::Self);
  std::vector<float> x(1 * 4 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
  Tensor t = be->empty({1, 4, 8}, DType::F32);
  set(*be, t, x);
  const kit::GradcheckResult r = kit::parameter_gradcheck(*be, store, [&](Graph& g) {
    AttentionCall call;
    call.x = g.constant(t);
    call.mask.causal = true;
    return a->forward(g, call);
  });
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

}  // namespace
