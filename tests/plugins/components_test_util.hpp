// What the component plugin tests (tests/plugins/*components_test.cpp) share: small dims,
// deterministic parameter values, the finite-difference checks as gtest assertions, the fixture
// with the built-in plugins, and a block's layer run with stand-in sublayers.
#pragma once

#include "ablate/components.hpp"

#include "ablate/attention.hpp"

#include <cmath>
#include <functional>
#include <sstream>

#include "ablate/ops.hpp"
#include "ablate/testing/gradcheck.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "framework/core/backend_fixture.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace ablate::component_test {
using testing::f32_tensor;
using testing::host;
using testing::ramp;
using testing::reference_backend;

using Options = std::map<std::string, std::string>;

inline Tensor values(const Shape& s, float phase = 0.0f) { return f32_tensor(reference_backend(), s, ramp(s.numel(), phase)); }

inline ModelDims small_dims(float dropout = 0.0f) {
  ModelDims d;
  d.d_model = 6;
  d.heads = 2;
  d.d_ff = 10;
  d.dropout = dropout;
  d.attention_dropout = 0.0f;
  d.norm_eps = 1e-5f;
  return d;
}

// Overwrites every parameter of `store` with deterministic non-trivial values (norm gammas of
// ones and zero biases would hide a wrong gradient term).
inline void randomize(ParameterStore& store) {
  float phase = 0.3f;
  for (Parameter* p : store.all()) {
    std::vector<float> v = ramp(p->value.numel(), phase += 0.7f);
    for (float& x : v) x = 0.5f + 0.5f * x;  // (0.05, 0.95): keeps norm gammas away from 0
    reference_backend().copy_from_host(p->value, v.data());
  }
}

// Gradients of L = sum(r ⊙ f) w.r.t. every parameter of `store` against central differences (the
// public ablate::testing::parameter_gradcheck), on up to `per_param` elements of each, as a gtest assertion.
inline ::testing::AssertionResult parameter_gradcheck(ParameterStore& store, const std::function<Var(Graph&)>& f,
                                                      double eps = 1e-2, std::int64_t per_param = 24) {
  testing::GradcheckOptions o;
  o.eps = eps;
  o.seed = 11;
  o.max_elements_per_input = per_param;
  const testing::GradcheckResult r = testing::parameter_gradcheck(reference_backend(), store, f, o);
  if (!r.ok) return ::testing::AssertionFailure() << r.report;
  return ::testing::AssertionSuccess();
}

inline void expect_input_gradcheck(const testing::GradcheckFn& fn, const Tensor& x, double eps = 1e-2) {
  testing::GradcheckOptions o;
  o.eps = eps;
  const auto r = testing::gradcheck(reference_backend(), fn, {x}, o);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

inline std::vector<std::string> names(ParameterStore& store) {
  std::vector<std::string> out;
  for (Parameter* p : store.all()) out.push_back(p->name);
  return out;
}

class Components : public ::testing::Test {
 protected:
  PluginRegistry& registry = testing::builtin_registry();  // the built plugins, loaded once
  ParameterStore store{reference_backend()};
};

// --- blocks: the layer with stand-in sublayers

inline constexpr SublayerRole kSelf = SublayerRole::SelfAttention, kCross = SublayerRole::CrossAttention,
                              kFfn = SublayerRole::FeedForward;
using Roles = std::vector<SublayerRole>;

// The block's layer with the stand-in sublayers `f` (one function for every role).
inline std::vector<float> run_block(Block& block, const Roles& roles, const Tensor& x, const SublayerFunctions::Function& f) {
  Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
  return host(reference_backend(), block.forward(g, g.constant(x), SublayerFunctions(roles, f)).value());
}
// One stand-in function for every role.
inline SublayerFunctions::Function every_role(const std::function<Var(Graph&, const Var&)>& f) {
  return [f](Graph& g, SublayerRole, const Var& h) { return f(g, h); };
}

// Row means and (biased) variances of [N, D] values.
inline void expect_normalised_rows(const std::vector<float>& y, std::int64_t d) {
  for (std::size_t r = 0; r * static_cast<std::size_t>(d) < y.size(); ++r) {
    double mean = 0.0, var = 0.0;
    for (std::int64_t j = 0; j < d; ++j) mean += y[r * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)];
    mean /= static_cast<double>(d);
    for (std::int64_t j = 0; j < d; ++j) {
      const double c = y[r * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)] - mean;
      var += c * c;
    }
    var /= static_cast<double>(d);
    EXPECT_NEAR(mean, 0.0, 1e-5) << "row " << r;
    EXPECT_NEAR(var, 1.0, 1e-3) << "row " << r;
  }
}

}  // namespace ablate::component_test
