// Tests for the optimizer driver (ablate/optimizer.hpp) with the built-in adam/adamw/sgd rules:
// Adam's first step, clipping, one packed update equal to per-parameter updates, AdamW's decay,
// parameter roles and globs, and groups (decay off, lr scaled, packed side by side, unmatched).
#include "ablate/optimizer.hpp"

#include <cmath>

#include "ablate/testing/kit.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::host;
using testing::reference_backend;

std::shared_ptr<Optimizer> rule(const std::string& name, const testing::OptionOverrides& options = {}) {
  return testing::make_component<Optimizer>(name, options);
}

TEST(OptimizerDriver, AdamsFirstStepMovesEachWeightByLrAgainstItsGradient) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("w", {3}, Init::ones(), 1);
  be.copy_from_host(w.grad, std::vector<float>{0.5f, -2.0f, 0.0f}.data());
  OptimizerDriver adam(be, rule("adam"), 0.0);
  const double norm = adam.step(store, 0.1, 0.0);
  EXPECT_NEAR(norm, std::sqrt(0.25 + 4.0), 1e-6);
  const auto v = host(be, w.value);
  // Bias-corrected m/sqrt(v) = g/|g| on step 1 (up to eps).
  EXPECT_NEAR(v[0], 0.9f, 1e-6);
  EXPECT_NEAR(v[1], 1.1f, 1e-6);
  EXPECT_NEAR(v[2], 1.0f, 1e-6);
  EXPECT_EQ(adam.steps_taken(), 1);
}

TEST(OptimizerDriver, ClippingScalesGradientsToTheClipNorm) {
  Backend& be = reference_backend();
  auto run = [&](const std::vector<float>& grad, double clip) {
    ParameterStore store(be);
    Parameter& w = store.add("w", {2}, Init::ones(), 1);
    be.copy_from_host(w.grad, grad.data());
    OptimizerDriver adam(be, rule("adam"), 0.0);
    adam.step(store, 0.01, clip);  // step 1: direction only
    be.copy_from_host(w.grad, grad.data());
    adam.step(store, 0.01, clip);  // step 2: magnitudes matter through m and v history
    return host(be, w.value);
  };
  // Gradient (6, 8) has norm 10: clipped to 1 it behaves as (0.6, 0.8) unclipped.
  const auto clipped = run({6.0f, 8.0f}, 1.0);
  const auto scaled = run({0.6f, 0.8f}, 0.0);
  EXPECT_NEAR(clipped[0], scaled[0], 1e-6);
  EXPECT_NEAR(clipped[1], scaled[1], 1e-6);
  EXPECT_EQ(run({0.6f, 0.8f}, 5.0), scaled);  // below the threshold: untouched
}

TEST(OptimizerDriver, OneAdamWUpdateOverThePackedStoreEqualsOneUpdatePerParameter) {
  Backend& be = reference_backend();
  ParameterStore store(be, DType::BF16);
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{{"w", {5, 7}}, {"b", {7}}, {"g", {64}}})
    store.add(name, shape, Init::uniform(0.5f), 3);
  // The expected: adam_update per parameter on tensors of their own, as a per-parameter optimizer would.
  struct Own {
    Tensor w, m, v, low, grad;
  };
  std::vector<Own> own;
  AdamParams prm;  // its defaults are the plugin's option defaults (OptimizerPlugins.AdamDefaultsAreTheBackendOpsDefaults)
  prm.lr = 0.01f;
  prm.weight_decay = 0.1f;
  prm.decoupled = true;
  OptimizerDriver adamw(be, rule("adamw"), prm.weight_decay);
  for (Parameter* p : store.all()) {
    Own o{be.empty(p->value.shape(), DType::F32), be.empty(p->value.shape(), DType::F32), be.empty(p->value.shape(), DType::F32),
          be.empty(p->value.shape(), DType::BF16), be.empty(p->value.shape(), DType::F32)};
    be.copy(o.w, p->value);
    be.fill(o.m, 0.0f);
    be.fill(o.v, 0.0f);
    own.push_back(o);
  }
  for (int step = 1; step <= 3; ++step) {
    store.zero_grad();
    for (std::size_t i = 0; i < own.size(); ++i) {
      const std::vector<float> g = testing::ramp(own[i].w.numel(), static_cast<float>(step + 3 * static_cast<int>(i)));
      be.copy_from_host(store.all()[i]->grad, g.data());
      be.copy_from_host(own[i].grad, g.data());
    }
    adamw.step(store, prm.lr, 0.0);
    prm.step = step;
    for (Own& o : own) be.adam_update(o.w, o.m, o.v, &o.low, o.grad, prm);
  }
  for (std::size_t i = 0; i < own.size(); ++i) {
    const Parameter& p = *store.all()[i];
    EXPECT_EQ(host(be, p.value), host(be, own[i].w)) << p.name;
    EXPECT_EQ(host(be, p.m), host(be, own[i].m)) << p.name;
    EXPECT_EQ(host(be, p.v), host(be, own[i].v)) << p.name;
    EXPECT_EQ(host(be, p.compute), host(be, own[i].low)) << p.name;
  }
  EXPECT_EQ(host(be, store.packed().value)[40], 0.0f) << "the gap after w stays zero under weight decay";
}

TEST(OptimizerDriver, AdamWDecaysWeightsWithZeroGradient) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("w", {1}, Init::ones(), 1);
  OptimizerDriver adamw(be, rule("adamw"), 0.1);
  adamw.step(store, 0.5, 0.0);
  EXPECT_NEAR(host(be, w.value)[0], 1.0f - 0.5f * 0.1f, 1e-6);
}

TEST(OptimizerDriver, ParameterRolesFollowTheModelsNames) {
  EXPECT_EQ(parameter_role("decoder.layers.0.self_attn.qkv.weight", {96, 32}), ParameterRole::matrix);
  EXPECT_EQ(parameter_role("decoder.layers.0.self_attn.qkv.bias", {96}), ParameterRole::vector);
  EXPECT_EQ(parameter_role("decoder.layers.0.ffn.in.weight", {64, 32}), ParameterRole::matrix);
  EXPECT_EQ(parameter_role("decoder.layers.0.norm0.gamma", {32}), ParameterRole::norm);
  EXPECT_EQ(parameter_role("decoder.final_norm.beta", {32}), ParameterRole::norm);
  EXPECT_EQ(parameter_role("decoder.layers.0.self_attn.q_norm.gamma", {8}), ParameterRole::norm);
  EXPECT_EQ(parameter_role("decoder.layers.1.alpha", {1}), ParameterRole::norm);  // rezero's gate
  EXPECT_EQ(parameter_role("decoder.embedding.weight", {12, 32}), ParameterRole::embedding);
  EXPECT_EQ(parameter_role("decoder.positions.weight", {64, 32}), ParameterRole::embedding);
  EXPECT_EQ(parameter_role("decoder.output.weight", {12, 32}), ParameterRole::output);
  EXPECT_EQ(parameter_role("classifier.bias", {3}), ParameterRole::vector);
  for (ParameterRole r : kParameterRoles) EXPECT_STRNE(parameter_role_name(r), "?");
}

TEST(OptimizerDriver, GlobsMatchWholeNames) {
  EXPECT_TRUE(glob_match("*.bias", "decoder.layers.0.ffn.in.bias"));
  EXPECT_FALSE(glob_match("*.bias", "decoder.layers.0.ffn.in.bias2"));
  EXPECT_TRUE(glob_match("decoder.layers.?.ffn.*", "decoder.layers.3.ffn.out.weight"));
  EXPECT_FALSE(glob_match("decoder.layers.?.ffn.*", "decoder.layers.10.ffn.out.weight"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "axxbyybc"));
  EXPECT_FALSE(glob_match("a*b*c", "axxbyyb"));
}

// Plain SGD moves a weight by exactly lr * lr_scale * (g + wd * w): groups change both.
TEST(OptimizerDriver, GroupsSetDecayAndScaleTheLearningRateAndPackSideBySide) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("enc.ffn.in.weight", {2, 3}, Init::ones(), 1);
  Parameter& b = store.add("enc.ffn.in.bias", {2}, Init::ones(), 1);
  Parameter& n = store.add("enc.layers.0.norm0.gamma", {3}, Init::ones(), 1);
  Parameter& e = store.add("enc.embedding.weight", {4, 3}, Init::ones(), 1);
  std::vector<OptimizerGroupRule> rules = {
      {"no_decay", {ParameterRole::vector, ParameterRole::norm}, "", std::nullopt, 0.0},
      {"slow_embeddings", {}, "*.embedding.*", 0.5, std::nullopt},
      {"nothing", {ParameterRole::output}, "", std::nullopt, std::nullopt},
  };
  OptimizerDriver sgd(be, rule("sgd"), 0.1, rules);
  for (Parameter* p : store.all()) be.fill(p->grad, 1.0f);
  sgd.step(store, 0.5, 0.0);
  auto expect_all = [&](const Parameter& p, double want) {
    for (float v : host(be, p.value)) EXPECT_NEAR(v, want, 1e-6) << p.name;
  };
  expect_all(w, 1.0 - 0.5 * (1.0 + 0.1));   // default: decay 0.1
  expect_all(b, 1.0 - 0.5);                 // no_decay
  expect_all(n, 1.0 - 0.5);                 // no_decay
  expect_all(e, 1.0 - 0.25 * (1.0 + 0.1));  // lr x 0.5, decay 0.1
  ASSERT_EQ(sgd.groups().size(), 3u);
  EXPECT_EQ(sgd.groups()[0].name, "no_decay");
  EXPECT_EQ(sgd.groups()[0].parameters, (std::vector<Parameter*>{&b, &n}));
  EXPECT_EQ(sgd.groups()[2].name, "default");
  EXPECT_EQ(sgd.unmatched_rules(), std::vector<std::string>{"nothing"});
  // Side by side: the no_decay group's span starts at the bias and ends after the gain.
  EXPECT_EQ(sgd.groups()[0].packed.value.raw(), b.value.raw());
  EXPECT_EQ(sgd.groups()[0].packed.value.numel(), 2 * PackedParameters::kAlign);
  EXPECT_EQ(n.state, OptimizerState::none) << "SGD without momentum keeps no state";
  EXPECT_FALSE(n.m.defined());
}

TEST(OptimizerDriver, ARuleNamedDefaultIsRefused) {
  Backend& be = reference_backend();
  EXPECT_THROW(OptimizerDriver(be, rule("adam"), 0.0, {{"default", {}, "*", std::nullopt, std::nullopt}}), Error);
}

}  // namespace
}  // namespace ablate
