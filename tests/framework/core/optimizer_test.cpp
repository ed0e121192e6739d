// Tests for the Adam driver: the first step moves each weight by lr (Adam's normalised
// update), clipping rescales gradients by clip / norm, and AdamW decays the weights.
#include "ablate/optimizer.hpp"

#include <cmath>

#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::f32_tensor;
using testing::reference_backend;
using testing::host;

TEST(Adam, FirstStepMovesEachWeightByLrAgainstItsGradient) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("w", {3}, Init::ones(), 1);
  be.copy_from_host(w.grad, std::vector<float>{0.5f, -2.0f, 0.0f}.data());
  Adam adam(be, AdamConfig{});
  const double norm = adam.step(store, 0.1, 0.0);
  EXPECT_NEAR(norm, std::sqrt(0.25 + 4.0), 1e-6);
  const auto v = host(be, w.value);
  // Bias-corrected m/sqrt(v) = g/|g| on step 1 (up to eps).
  EXPECT_NEAR(v[0], 0.9f, 1e-6);
  EXPECT_NEAR(v[1], 1.1f, 1e-6);
  EXPECT_NEAR(v[2], 1.0f, 1e-6);
  EXPECT_EQ(adam.steps_taken(), 1);
}

TEST(Adam, ClippingScalesGradientsToTheClipNorm) {
  Backend& be = reference_backend();
  auto run = [&](const std::vector<float>& grad, double clip) {
    ParameterStore store(be);
    Parameter& w = store.add("w", {2}, Init::ones(), 1);
    be.copy_from_host(w.grad, grad.data());
    Adam adam(be, AdamConfig{});
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

TEST(Adam, OneUpdateOverThePackedStoreEqualsOneUpdatePerParameter) {
  Backend& be = reference_backend();
  ParameterStore store(be, DType::BF16);
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{{"w", {5, 7}}, {"b", {7}}, {"g", {64}}})
    store.add(name, shape, Init::uniform(0.5f), 3);
  // The expected: adam_update per parameter on tensors of their own, as a per-parameter optimizer would.
  struct Own {
    Tensor w, m, v, low, grad;
  };
  std::vector<Own> own;
  AdamParams prm;
  prm.lr = 0.01f;
  prm.weight_decay = 0.1f;
  prm.decoupled = true;
  Adam adam(be, AdamConfig{prm.beta1, prm.beta2, prm.eps, prm.weight_decay, prm.decoupled});
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
    adam.step(store, prm.lr, 0.0);
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

TEST(Adam, AdamWDecaysWeightsWithZeroGradient) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("w", {1}, Init::ones(), 1);
  AdamConfig c;
  c.weight_decay = 0.1f;
  c.decoupled = true;
  Adam adam(be, c);
  adam.step(store, 0.5, 0.0);
  EXPECT_NEAR(host(be, w.value)[0], 1.0f - 0.5f * 0.1f, 1e-6);
}

}  // namespace
}  // namespace ablate
