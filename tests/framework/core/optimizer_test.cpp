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
