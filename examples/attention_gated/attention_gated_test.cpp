// Tests of attention/gated written only with Ablate's plugin test kit (ablate/testing/kit.hpp),
// against the built plugin: a cached decode equals a full pass, and with its gate at zero weights it
// is attention/mha's output halved (the same projections, seeded by name).
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
  d.attention_dropout = 0.0f;
  return d;
}

std::vector<float> host(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  be.copy_to_host(v.data(), t);
  return v;
}

TEST(AttentionGated, ACachedDecodeEqualsAFullPassWithAndWithoutPositions) {
  auto be = kit::make_backend("reference");
  for (const char* pe : {"", "rotary"}) {
    auto gated = kit::make_component<Attention>("gated");
    auto positions = *pe ? kit::make_component<PositionalEncoding>(pe) : nullptr;
    const kit::CacheCheckResult r = kit::cache_equivalence(*be, *gated, positions.get(), dims());
    EXPECT_TRUE(r.ok) << pe << "\n" << r.report;
  }
}

TEST(AttentionGated, AClosedGateWeightIsHalfOfMultiHeadAttention) {
  auto be = kit::make_backend("reference");
  ParameterStore gs(*be), ms(*be);
  auto gated = kit::make_component<Attention>("gated");
  auto mha = kit::make_component<Attention>("mha");
  gated->build(ParamScope(gs, 3, "attn"), dims(), AttentionRole::Self);
  mha->build(ParamScope(ms, 3, "attn"), dims(), AttentionRole::Self);
  be->fill(gs.get("attn.gate.weight").value, 0.0f);  // sigmoid(0) = 1/2 everywhere
  std::vector<float> x(2 * 5 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3f * static_cast<float>(i));
  const auto output = [&](const Attention& a) {
    Graph g(*be, 1, 0, /*training=*/false, /*grad=*/false);
    Tensor t = be->empty({2, 5, 8}, DType::F32);
    be->copy_from_host(t, x.data());
    AttentionCall call;
    call.x = g.constant(t);
    call.mask.causal = true;
    return host(*be, a.forward(g, call).value());
  };
  const std::vector<float> y = output(*gated), m = output(*mha);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], 0.5f * m[i], 1e-5) << i;
}

}  // namespace
