// Tests for the per-layer statistics (framework/train/layer_stats): layer names from parameter
// names, per-layer gradient norms against a host computation, residual norms over valid
// positions only, and attention entropy of known distributions.
#include "train/layer_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend_test_util.hpp"

namespace ablate::train {
namespace {
using testing::builtin_backend;
using testing::f32_tensor;

Backend& be() { return *builtin_backend("reference"); }

TEST(LayerStats, LayerOfAParameterName) {
  EXPECT_EQ(layer_of("encoder.layers.3.ffn.in.weight"), "encoder.layers.3");
  EXPECT_EQ(layer_of("decoder.layers.12.norm0.gamma"), "decoder.layers.12");
  EXPECT_EQ(layer_of("decoder.embedding.weight"), "");
  EXPECT_EQ(layer_of("encoder.final_norm.gamma"), "");
}

TEST(LayerStats, GradientNormPerLayer) {
  ParameterStore store(be());
  Parameter& a = store.add("encoder.embedding.weight", {2}, Init::zeros(), 1);
  Parameter& b = store.add("encoder.layers.0.x", {2}, Init::zeros(), 1);
  Parameter& c = store.add("encoder.layers.0.y", {1}, Init::zeros(), 1);
  Parameter& d = store.add("encoder.layers.1.x", {2}, Init::zeros(), 1);
  const float ga[2] = {9, 9}, gb[2] = {1, 2}, gc[1] = {2}, gd[2] = {3, 4};
  be().copy_from_host(a.grad, ga);
  be().copy_from_host(b.grad, gb);
  be().copy_from_host(c.grad, gc);
  be().copy_from_host(d.grad, gd);
  const std::vector<std::string> layers = layer_names(store);
  ASSERT_EQ(layers, (std::vector<std::string>{"encoder.layers.0", "encoder.layers.1"}));
  const std::vector<double> n = layer_grad_norms(store, layers);
  EXPECT_NEAR(n[0], 3.0, 1e-6);  // sqrt(1 + 4 + 4)
  EXPECT_NEAR(n[1], 5.0, 1e-6);
}

TEST(LayerStats, ResidualNormCountsOnlyValidPositions) {
  model::ForwardCapture capture;
  // [B 2, T 2, D 2]: item 0 has 2 valid positions (norms 5 and 1), item 1 one (norm 2) + padding (norm 100).
  capture.residuals.push_back({"encoder", 0, f32_tensor(be(), {2, 2, 2}, {3, 4, 1, 0, 0, 2, 60, 80})});
  capture.residuals.push_back({"decoder", 0, f32_tensor(be(), {2, 2, 2}, {3, 4, 1, 0, 0, 2, 60, 80})});
  const std::vector<double> n = residual_norms(be(), capture, {2, 1}, {2, 2});
  ASSERT_EQ(n.size(), 2u);
  EXPECT_NEAR(n[0], (5.0 + 1.0 + 2.0) / 3.0, 1e-9);
  EXPECT_NEAR(n[1], (5.0 + 1.0 + 2.0 + 100.0) / 4.0, 1e-9);  // the decoder lengths count position 1 of item 1
}

TEST(LayerStats, AttentionEntropyOfKnownDistributions) {
  // [B 1, H 2, T 2, S 4]: head 0 uniform over 4 keys (ln 4), head 1 one-hot (0) and uniform over 2 (ln 2).
  const std::vector<float> p = {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f,
                                1.0f,  0.0f,  0.0f,  0.0f,  0.5f,  0.5f,  0.0f,  0.0f};
  const std::vector<double> e = attention_entropy(p, {1, 2, 2, 4}, {2});
  EXPECT_NEAR(e[0], std::log(4.0), 1e-6);
  EXPECT_NEAR(e[1], std::log(2.0) / 2.0, 1e-6);
  const std::vector<double> first_only = attention_entropy(p, {1, 2, 2, 4}, {1});  // query 1 is padding
  EXPECT_NEAR(first_only[1], 0.0, 1e-9);
  EXPECT_THROW(attention_entropy(p, {1, 2, 2, 3}, {2}), Error);
}

}  // namespace
}  // namespace ablate::train
