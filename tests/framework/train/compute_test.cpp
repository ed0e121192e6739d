// Tests for the compute accounting (framework/train/compute, Graph::flops): a model's forward FLOPs
// against hand-computed counts for the menu's components (encoder-decoder, GQA, gated FFN, rotary,
// untied output), parameter counts by kind against the shapes, and a trained run's run.h5 record.
#include "train/compute.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/backend_fixture.hpp"
#include "framework/model/model_test_util.hpp"
#include "results/run_file.hpp"
#include "train/shape_backend.hpp"

namespace ablate::train {
namespace {
using ablate::testing::reference_backend;
using model::Arch;
namespace mt = model::test;

// Two examples, src 3 tokens (none for a decoder-only model), tgt 4 (+ bos: T 5), in the tiny
// model's vocabulary of 11.
std::vector<Example> two_examples(Arch arch) {
  if (arch == Arch::Decoder) return {{{}, {7, 8, 9, 4}}, {{}, {9, 8, 7, 5}}};
  return {{{4, 5, 6}, {7, 8, 9, 4}}, {{6, 5, 4}, {9, 8, 7, 5}}};
}

double forward_flops(const mt::Built& b, const model::ModelConfig& c) {
  Backend& be = reference_backend();
  const model::DeviceBatch batch = mt::batch_of(be, two_examples(c.arch), c);
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  b.model->logits(g, batch);
  return g.flops();
}

// Hand counts, 2 per multiply-add. B 2, S 3, T 5, D 8, H 2, Dh 4, F 16, V 11, two layers per stack.
constexpr double B = 2, S = 3, T = 5, D = 8, F = 16, V = 11, L = 2;
double linear(double rows, double in, double out) { return 2 * rows * in * out; }
double attention(double queries, double keys) { return 2 * 2 * B * queries * keys * D; }  // q k^T and p v, all heads

TEST(ComputeFlops, EncoderDecoderCountsEveryProductOnce) {
  const model::ModelConfig c = mt::tiny(Arch::EncoderDecoder);
  const double encoder_layer = 4 * linear(B * S, D, D) + attention(S, S) + linear(B * S, D, F) + linear(B * S, F, D);
  const double decoder_layer = 4 * linear(B * T, D, D) + attention(T, T)                              // self
                               + 2 * linear(B * T, D, D) + 2 * linear(B * S, D, D) + attention(T, S)  // cross
                               + linear(B * T, D, F) + linear(B * T, F, D);
  EXPECT_DOUBLE_EQ(forward_flops(mt::build(reference_backend(), c), c),
                   L * encoder_layer + L * decoder_layer + linear(B * T, D, V));
}

TEST(ComputeFlops, GroupedKeysGatedFfnRotaryAndAnUntiedOutput) {
  model::ModelConfig c = mt::tiny(Arch::Decoder);
  c.tie_embeddings = false;
  // One k/v head (Dh 4), SwiGLU of width floor(2 F / 3) = 10 (three matrices), rotary (no products).
  const mt::Built b = mt::build(reference_backend(), c, "pre_norm", "rotary", "swiglu", 7, {{"kv_heads", "1"}});
  const double layer = 2 * linear(B * T, D, D) + 2 * linear(B * T, D, 4) + attention(T, T) + 3 * linear(B * T, D, 10);
  EXPECT_DOUBLE_EQ(forward_flops(b, c), L * layer + linear(B * T, D, V));
}

// Every block, positional encoding and FFN of the menu against the hand count of a decoder layer:
// blocks and positions add no matrix product (norms, rotations and logit biases are elementwise),
// the plain FFNs two F-wide products, the gated ones three of width floor(2 F / 3) = 10.
TEST(ComputeFlops, EveryMenuComponentAgainstTheHandCount) {
  const model::ModelConfig c = mt::tiny(Arch::Decoder);
  const auto expected = [&](bool gated) {
    const double ffn = gated ? 3 * linear(B * T, D, 10) : linear(B * T, D, F) + linear(B * T, F, D);
    return L * (4 * linear(B * T, D, D) + attention(T, T) + ffn) + linear(B * T, D, V);
  };
  for (const char* block : {"post_norm", "pre_norm", "sandwich_norm", "parallel", "rezero"})
    EXPECT_DOUBLE_EQ(forward_flops(mt::build(reference_backend(), c, block), c), expected(false)) << block;
  for (const char* pe : {"sinusoidal", "learned", "none", "rotary", "alibi", "t5_relative_bias", "t5_per_layer"})
    EXPECT_DOUBLE_EQ(forward_flops(mt::build(reference_backend(), c, "pre_norm", pe), c), expected(false)) << pe;
  for (const char* ffn : {"relu", "gelu", "relu_squared", "swiglu", "geglu"}) {
    const bool gated = std::string(ffn).find("glu") != std::string::npos;
    EXPECT_DOUBLE_EQ(forward_flops(mt::build(reference_backend(), c, "pre_norm", "sinusoidal", ffn), c), expected(gated)) << ffn;
  }
}

TEST(ComputeParameters, KindsAddUpToTheStoreAndFollowTheShapes) {
  model::ModelConfig c = mt::tiny(Arch::Decoder);
  c.tie_embeddings = false;
  const mt::Built b = mt::build(reference_backend(), c, "pre_norm", "learned", "relu");
  const ParameterCounts counts = count_parameters(*b.store);
  ASSERT_EQ(counts.kinds.size(), counts.counts.size());
  EXPECT_EQ(counts.of("total"), b.store->numel());
  const std::int64_t d = 8, f = 16, v = 11, layers = 2;
  EXPECT_EQ(counts.of("embeddings"), v * d);
  EXPECT_EQ(counts.of("positions"), 32 * d);  // learned, max_len 32
  EXPECT_EQ(counts.of("ffn"), layers * (d * f + f + f * d + d));
  EXPECT_EQ(counts.of("output"), v * d + v);
  // attention (with or without biases) and the norms: whatever is left, each non-zero
  EXPECT_GT(counts.of("attention"), layers * 4 * d * d - 1);
  EXPECT_GT(counts.of("norms"), 0);
  EXPECT_EQ(counts.of("other"), 0);
  std::int64_t kinds = 0;
  for (std::size_t k = 2; k < counts.kinds.size(); ++k) kinds += counts.counts[k];
  EXPECT_EQ(kinds, counts.of("total"));
  EXPECT_EQ(counts.of("non_embedding"), counts.of("total") - v * d - 32 * d);
  EXPECT_EQ(counts.kinds[0], "total");
  EXPECT_EQ(counts.kinds[1], "non_embedding");
}

// The dry build (train/shape_backend.hpp): a model built on the ShapeBackend has the parameters of
// a real build, name for name and shape for shape, and their bytes counted (value and gradient,
// f32), with nothing allocated or computed.
TEST(ComputeParameters, ADryBuildHasTheRealBuildsParametersAndAllocatesNothing) {
  model::ModelConfig c = mt::tiny(Arch::EncoderDecoder);
  const mt::Built real = mt::build(reference_backend(), c, "pre_norm", "rotary", "swiglu", 7, {{"kv_heads", "1"}});
  ShapeBackend shapes;
  const mt::Built dry = mt::build(shapes, c, "pre_norm", "rotary", "swiglu", 7, {{"kv_heads", "1"}});
  EXPECT_FALSE(shapes.caps().computes);
  const std::vector<Parameter*> a = real.store->all(), b = dry.store->all();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->name, b[i]->name);
    EXPECT_EQ(a[i]->value.shape(), b[i]->value.shape()) << a[i]->name;
    EXPECT_EQ(b[i]->value.raw(), nullptr) << b[i]->name;  // no memory behind it
  }
  EXPECT_EQ(count_parameters(*dry.store).counts, count_parameters(*real.store).counts);
  EXPECT_GE(shapes.bytes(), 2 * 4 * dry.store->numel());  // values and gradients at least
}

TEST(ComputeParameters, KindFromTheScopeName) {
  EXPECT_EQ(parameter_kind("decoder.embedding.weight"), "embeddings");
  EXPECT_EQ(parameter_kind("decoder.embedding_norm.gamma"), "norms");
  EXPECT_EQ(parameter_kind("encoder.positions.table"), "positions");
  EXPECT_EQ(parameter_kind("decoder.layers.1.cross_attn.q.weight"), "attention");
  EXPECT_EQ(parameter_kind("decoder.layers.0.self_attn.q_norm.gamma"), "attention");
  EXPECT_EQ(parameter_kind("decoder.layers.0.ffn.in.weight"), "ffn");
  EXPECT_EQ(parameter_kind("decoder.layers.0.norm1.gamma"), "norms");
  EXPECT_EQ(parameter_kind("decoder.layers.0.alpha0"), "norms");  // a block's own gate
  EXPECT_EQ(parameter_kind("decoder.final_norm.beta"), "norms");
  EXPECT_EQ(parameter_kind("output.weight"), "output");
  EXPECT_EQ(parameter_kind("classifier.bias"), "output");
  EXPECT_EQ(parameter_kind("something.else"), "other");
}

}  // namespace
}  // namespace ablate::train
