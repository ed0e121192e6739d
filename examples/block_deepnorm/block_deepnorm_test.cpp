// Tests of block/deepnorm written only with Ablate's plugin test kit (ablate/testing/kit.hpp),
// against the built plugin: its beta init scales exactly the sublayer weights DeepNet names, and
// its forward is post-norm over alpha x.
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
  d.d_ff = 16;
  d.dropout = 0.0f;
  d.layers = 4;  // alpha = 8^(1/4), beta = 32^(-1/4)
  return d;
}

std::vector<float> host(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  be.copy_to_host(v.data(), t);
  return v;
}

// One layer built as the model builds it (block, then its sublayers); init_sublayers when `init`.
void build_layer(ParameterStore& store, Block& block, bool init) {
  const ParamScope scope(store, 7, "layers.0");
  const std::vector<SublayerRole> roles = {SublayerRole::SelfAttention, SublayerRole::FeedForward};
  block.build(scope, dims(), roles);
  kit::make_component<Attention>("mha")->build(scope.child("self_attn"), dims(), AttentionRole::Self);
  kit::make_component<FeedForward>("relu")->build(scope.child("ffn"), dims());
  if (init) block.init_sublayers(scope, dims(), roles);
}

TEST(BlockDeepnorm, BetaScalesTheFfnAndTheValueAndOutputProjectionsOnly) {
  auto be = kit::make_backend("reference");
  ParameterStore plain(*be), deep(*be);
  build_layer(plain, *kit::make_component<Block>("deepnorm"), false);
  build_layer(deep, *kit::make_component<Block>("deepnorm"), true);
  const double beta = std::pow(32.0, -0.25);
  for (Parameter* p : plain.all()) {
    const std::vector<float> a = host(*be, p->value), b = host(*be, deep.get(p->name).value);
    const bool scaled_whole =
        p->name == "layers.0.ffn.in.weight" || p->name == "layers.0.ffn.out.weight" || p->name == "layers.0.self_attn.out.weight";
    for (std::size_t i = 0; i < a.size(); ++i) {
      // qkv.weight [24, 8]: rows 0-7 q, 8-15 k, 16-23 v.
      const bool v_row = p->name == "layers.0.self_attn.qkv.weight" && i >= 16 * 8;
      EXPECT_NEAR(b[i], a[i] * (scaled_whole || v_row ? beta : 1.0), 1e-6) << p->name << "[" << i << "]";
    }
  }
}

TEST(BlockDeepnorm, ItIsPostNormOverAlphaTimesTheResidual) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  auto deep = kit::make_component<Block>("deepnorm");
  auto post = kit::make_component<Block>("post_norm");
  const std::vector<SublayerRole> roles = {SublayerRole::FeedForward};
  deep->build(ParamScope(store, 1, "deep"), dims(), roles);
  post->build(ParamScope(store, 1, "post"), dims(), roles);
  Graph g(*be, 1, 0, /*training=*/false, /*grad=*/false);
  std::vector<float> x(2 * 3 * 8), ones(x.size(), 1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
  const auto var = [&](const std::vector<float>& v) {
    Tensor t = be->empty({2, 3, 8}, DType::F32);
    be->copy_from_host(t, v.data());
    return g.constant(t);
  };
  const SublayerFunctions plus_one(roles, [&](Graph&, SublayerRole, const Var&) { return var(ones); });
  const float alpha = static_cast<float>(std::pow(8.0, 0.25));
  std::vector<float> scaled = x;
  for (float& v : scaled) v *= alpha;
  const std::vector<float> a = host(*be, deep->forward(g, var(x), plus_one).value());
  const std::vector<float> b = host(*be, post->forward(g, var(scaled), plus_one).value());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

}  // namespace
