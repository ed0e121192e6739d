// End-to-end checks of the compute core on every backend plugin found: a tiny encoder layer
// (embedding, layer norm, fused-QKV attention with padding and dropout, GELU FFN, cross entropy)
// trained for a few Adam steps gives bit-identical losses when run twice (deterministic mode),
// the loss falls, and every backend's loss curve matches the reference backend's.
#include "ablate/ops.hpp"
#include "ablate/optimizer.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::i32_tensor;

struct TinyLayer {
  static constexpr int kVocab = 11, kD = 16, kHeads = 2, kF = 32, kB = 3, kT = 6;

  explicit TinyLayer(Backend& be, DType compute = DType::F32) : be(be), store(be, compute) {
    store.add("embed.weight", {kVocab, kD}, Init::normal(0.5f), 1);
    store.add("ln.weight", {kD}, Init::ones(), 1);
    store.add("ln.bias", {kD}, Init::zeros(), 1);
    store.add("attn.qkv.weight", {3 * kD, kD}, Init::xavier_uniform(), 1);
    store.add("attn.out.weight", {kD, kD}, Init::xavier_uniform(), 1);
    store.add("ffn.in.weight", {kF, kD}, Init::xavier_uniform(), 1);
    store.add("ffn.in.bias", {kF}, Init::zeros(), 1);
    store.add("ffn.out.weight", {kD, kF}, Init::xavier_uniform(), 1);
    store.add("head.weight", {kVocab, kD}, Init::xavier_uniform(), 1);
    ids = i32_tensor(be, {kB, kT}, {1, 5, 3, 7, 2, 9, 4, 4, 8, 1, 0, 0, 6, 2, 10, 3, 5, 0});
    targets = i32_tensor(be, {kB, kT}, {5, 3, 7, 2, 9, 1, 4, 8, 1, -100, -100, -100, 2, 10, 3, 5, -100, -100});
    lengths = i32_tensor(be, {kB}, {6, 3, 4});
  }

  // One training step; returns the loss.
  float step(std::uint64_t step) {
    Graph g(be, /*seed=*/42, step);
    auto P = [&](const char* name) { return g.parameter(store.get(name)); };
    Var x = ops::embedding(g, ids, P("embed.weight"));
    Var h = ops::layer_norm(g, x, P("ln.weight"), P("ln.bias"));
    Var qkv = ops::linear(g, h, P("attn.qkv.weight"), Var());
    ops::AttentionOptions o;
    o.key_lengths = &lengths;
    o.dropout = 0.1f;
    Var a = ops::attention(g, ops::split_heads(g, qkv, kHeads, 3, 0), ops::split_heads(g, qkv, kHeads, 3, 1),
                           ops::split_heads(g, qkv, kHeads, 3, 2), o);
    x = ops::add(g, x, ops::dropout(g, ops::linear(g, ops::merge_heads(g, a), P("attn.out.weight"), Var()), 0.1f));
    Var f =
        ops::linear(g, ops::linear(g, x, P("ffn.in.weight"), P("ffn.in.bias"), Activation::GeluErf), P("ffn.out.weight"), Var());
    x = ops::add(g, x, ops::dropout(g, f, 0.1f));
    Var logits = ops::cast(g, ops::linear(g, x, P("head.weight"), Var()), DType::F32);
    const auto ce = ops::cross_entropy(g, logits, targets, -100, 0.1f);
    float loss = 0.0f;
    be.copy_to_host(&loss, ce.loss.value());
    store.zero_grad();
    g.backward(ce.loss);
    adam.step(store, 1e-2, 1.0);
    return loss;
  }

  std::vector<float> train(int steps) {
    std::vector<float> losses;
    for (int s = 1; s <= steps; ++s) losses.push_back(step(static_cast<std::uint64_t>(s)));
    return losses;
  }

  Backend& be;
  ParameterStore store;
  OptimizerDriver adam{be, testing::builtin_registry().create<Optimizer>("adam"), 0.0};
  Tensor ids, targets, lengths;
};

using testing::builtin_backend;
using testing::builtin_backend_names;

class EveryBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryBackend, TrainingIsBitIdenticalRunToRunAndLearns) {
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
  auto be = builtin_backend(GetParam());
  const std::vector<float> first = TinyLayer(*be).train(8);
  const std::vector<float> second = TinyLayer(*be).train(8);
  EXPECT_EQ(first, second);  // bit-identical, dropout included
  EXPECT_LT(first.back(), 0.8f * first.front());
}

TEST_P(EveryBackend, LossCurveMatchesTheReferenceBackend) {
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
  auto be = builtin_backend(GetParam());
  const std::vector<float> mine = TinyLayer(*be).train(8);
  const std::vector<float> reference = TinyLayer(*builtin_backend("reference")).train(8);
  for (std::size_t i = 0; i < mine.size(); ++i) EXPECT_NEAR(mine[i], reference[i], 2e-3f * reference[i]) << "step " << i + 1;
}

TEST_P(EveryBackend, MixedPrecisionFollowsTheF32Curve) {
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
  auto be = builtin_backend(GetParam());
  if (!be->caps().bf16) GTEST_SKIP() << GetParam() << " has no bf16 support";
  const std::vector<float> f32 = TinyLayer(*be).train(8);
  const std::vector<float> bf16 = TinyLayer(*be, DType::BF16).train(8);
  for (std::size_t i = 0; i < f32.size(); ++i) EXPECT_NEAR(bf16[i], f32[i], 0.05f * f32[i]) << "step " << i + 1;
}

INSTANTIATE_TEST_SUITE_P(Backends, EveryBackend, ::testing::ValuesIn(builtin_backend_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace ablate
