// Tests for the spec-to-config mapping of framework/train/experiment.cpp: every field of the model
// and optimizer configs comes from the spec, and the configs' own initial values (public structs a
// plugin author may construct) are the spec's defaults, so the two can never disagree unseen; and the
// run's wrapper of its backend plugin (HostedBackend) forwards the optional ops.
#include "train/experiment.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ablate/ops.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::train {
namespace {

spec::ExperimentSpec defaults() { return spec::parse_spec("name: x\ntask: copy\ntrain: {steps: 1}\n", "t.yaml"); }

TEST(SpecDefaults, ModelDimsAndModelConfigStartAtTheSpecsDefaults) {
  const model::ModelConfig from_spec = model_config(defaults(), TaskInfo{TaskType::Seq2Seq, 50, 16, 16});
  EXPECT_EQ(from_spec.source_context, 16) << "the task's longest source";
  EXPECT_EQ(from_spec.target_context, 17) << "its longest target and bos";
  const ModelDims d = ModelDims{};
  EXPECT_EQ(d.d_model, from_spec.dims.d_model);
  EXPECT_EQ(d.heads, from_spec.dims.heads);
  EXPECT_EQ(d.d_ff, from_spec.dims.d_ff);
  EXPECT_EQ(d.dropout, from_spec.dims.dropout);
  EXPECT_EQ(d.attention_dropout, from_spec.dims.attention_dropout);
  EXPECT_EQ(d.norm_eps, from_spec.dims.norm_eps);
  EXPECT_EQ(d.qkv_bias, from_spec.dims.qkv_bias);
  EXPECT_EQ(d.out_bias, from_spec.dims.out_bias);
  const model::ModelConfig c;
  EXPECT_EQ(c.arch, from_spec.arch);
  EXPECT_EQ(c.encoder_layers, from_spec.encoder_layers);
  EXPECT_EQ(c.decoder_layers, from_spec.decoder_layers);
  EXPECT_EQ(c.embedding_dropout, from_spec.embedding_dropout);
  EXPECT_EQ(c.scale_embedding, from_spec.scale_embedding);
  EXPECT_EQ(c.embedding_norm, from_spec.embedding_norm);
  EXPECT_EQ(c.embedding_norm_eps, from_spec.embedding_norm_eps);
  EXPECT_EQ(c.fixnorm, from_spec.fixnorm);
  EXPECT_EQ(c.causal, from_spec.causal);
  EXPECT_EQ(c.final_norm, from_spec.final_norm);
  EXPECT_EQ(c.tie_embeddings, from_spec.tie_embeddings);
  EXPECT_EQ(c.pooling, from_spec.pooling);
}

TEST(SpecDefaults, EveryConfigFieldFollowsTheSpec) {
  // Every value away from its default: a field the mapping forgot keeps its default and fails here.
  const spec::ExperimentSpec s = spec::parse_spec(
      "name: x\ntask: copy\ntrain: {steps: 1, optimizer: {plugin: adamw, weight_decay: 0.1,\n"
      "  groups: [{name: g, roles: [norm, output], match: '*.gamma', lr_scale: 2, weight_decay: 0}]}}\n"
      "model: {arch: decoder, d_model: 48, heads: 3, d_ff: 96, dropout: 0.2, attention_dropout: 0.3, norm_eps: 1e-6,\n"
      "        qkv_bias: false, out_bias: false, encoder_layers: 2, decoder_layers: 3, embedding_dropout: 0.4,\n"
      "        scale_embedding: false, embedding_norm: true, embedding_norm_eps: 1e-7, causal: false, final_norm: false,\n"
      "        tie_embeddings: false, pooling: first, fixnorm: 2.5}\n",
      "t.yaml");
  const model::ModelConfig c = model_config(s, TaskInfo{TaskType::LanguageModel, 50, 16, 16});
  const model::ModelConfig d;
  EXPECT_NE(c.arch, d.arch);
  EXPECT_NE(c.dims.d_model, d.dims.d_model);
  EXPECT_NE(c.dims.heads, d.dims.heads);
  EXPECT_NE(c.dims.d_ff, d.dims.d_ff);
  EXPECT_NE(c.dims.dropout, d.dims.dropout);
  EXPECT_NE(c.dims.attention_dropout, d.dims.attention_dropout);
  EXPECT_NE(c.dims.norm_eps, d.dims.norm_eps);
  EXPECT_NE(c.dims.qkv_bias, d.dims.qkv_bias);
  EXPECT_NE(c.dims.out_bias, d.dims.out_bias);
  EXPECT_NE(c.encoder_layers, d.encoder_layers);
  EXPECT_NE(c.decoder_layers, d.decoder_layers);
  EXPECT_NE(c.embedding_dropout, d.embedding_dropout);
  EXPECT_NE(c.scale_embedding, d.scale_embedding);
  EXPECT_NE(c.embedding_norm, d.embedding_norm);
  EXPECT_NE(c.embedding_norm_eps, d.embedding_norm_eps);
  EXPECT_NE(c.fixnorm, d.fixnorm);
  EXPECT_NE(c.causal, d.causal);
  EXPECT_NE(c.final_norm, d.final_norm);
  EXPECT_NE(c.tie_embeddings, d.tie_embeddings);
  EXPECT_NE(c.pooling, d.pooling);
  const std::vector<OptimizerGroupRule> rules = optimizer_group_rules(s);
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].name, "g");
  EXPECT_EQ(rules[0].roles, (std::vector<ParameterRole>{ParameterRole::norm, ParameterRole::output}));
  EXPECT_EQ(rules[0].match, "*.gamma");
  EXPECT_EQ(rules[0].lr_scale, 2.0);
  EXPECT_EQ(rules[0].weight_decay, 0.0);
}

}  // namespace
}  // namespace ablate::train

namespace ablate::train {
namespace {

// The run's wrapper of its backend plugin forwards the optional ops too: it announces what the
// plugin announces, and rope and slice_last run through it (a rotary run trains on it).
TEST(HostedBackend, ForwardsTheOptionalOps) {
  auto profile = std::make_shared<OpProfile>();
  HostedBackend hosted(testing::builtin_registry().create<Backend>("reference"), profile);
  ASSERT_TRUE(hosted.supports(OptionalOp::rope));
  ASSERT_TRUE(hosted.supports(OptionalOp::slice_last));
  Tensor x = hosted.empty({1, 1, 2, 2}, DType::F32);
  const std::vector<float> xv = {1.0f, 0.0f, 1.0f, 0.0f};  // pairs (x0, x1) at positions 0 and 1
  hosted.copy_from_host(x, xv.data());
  Tensor positions = hosted.empty({2}, DType::I32);
  const std::vector<std::int32_t> pv = {0, 1};
  hosted.copy_from_host(positions, pv.data());
  Graph g(hosted, 1, 0, /*training=*/false, /*grad=*/false);
  const std::vector<float> y = testing::host(hosted, ops::rope(g, g.constant(x), positions, 2, 10000.0f).value());
  EXPECT_FLOAT_EQ(y[0], 1.0f);            // position 0: not turned
  EXPECT_FLOAT_EQ(y[2], std::cos(1.0f));  // position 1: turned by 1 radian (i = 0)
  EXPECT_FLOAT_EQ(y[3], std::sin(1.0f));
  const std::vector<float> s = testing::host(hosted, ops::slice_last(g, g.constant(x), 1, 1).value());
  EXPECT_EQ(s, (std::vector<float>{0.0f, 0.0f}));
}

}  // namespace
}  // namespace ablate::train
