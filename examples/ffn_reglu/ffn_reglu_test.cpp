// Tests of ffn/reglu written only with Ablate's plugin test kit (ablate/testing/kit.hpp): ctest runs
// them against the built ffn_reglu.so (ablate_add_plugin(... TESTS ...) puts its directory on
// ABLATE_PLUGIN_PATH), created by name with its declared defaults, as `ablate run` would.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ablate/testing/kit.hpp"

namespace {

using namespace ablate;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

ModelDims dims(std::int64_t d_model, std::int64_t d_ff) {
  ModelDims d;
  d.d_model = d_model;
  d.d_ff = d_ff;
  d.dropout = 0.0f;
  return d;
}

Tensor tensor(Backend& be, const Shape& shape, const std::vector<float>& values) {
  Tensor t = be.empty(shape, DType::F32);
  be.copy_from_host(t, values.data());
  return t;
}

TEST(FfnReglu, DeclaredDefaultsGiveTheMatchedHiddenWidthWithBiases) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  kit::make_component<FeedForward>("reglu")->build(ParamScope(store, 1, "ffn"), dims(6, 12));
  EXPECT_EQ(store.get("ffn.gate.weight").value.shape(), Shape({8, 6}));  // [F', D], F' = floor(2 * 12 / 3)
  EXPECT_EQ(store.get("ffn.up.weight").value.shape(), Shape({8, 6}));
  EXPECT_EQ(store.get("ffn.out.weight").value.shape(), Shape({6, 8}));  // [D, F']
  EXPECT_TRUE(store.contains("ffn.gate.bias") && store.contains("ffn.out.bias"));
}

TEST(FfnReglu, OptionsOverrideTheDefaultsAndUnknownOnesAreRefused) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  kit::make_component<FeedForward>("reglu", {{"hidden", "4"}, {"bias", "false"}})
      ->build(ParamScope(store, 1, "ffn"), dims(6, 12));
  EXPECT_EQ(store.get("ffn.gate.weight").value.shape(), Shape({4, 6}));
  EXPECT_EQ(store.all().size(), 3u);  // the three weights, no biases
  try {
    kit::make_component<FeedForward>("reglu", {{"hiden", "4"}});
    FAIL() << "an unknown option was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'hidden'"), std::string::npos) << e.what();
  }
}

TEST(FfnReglu, GatesTheUpProjectionWithReluOfTheGate) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  auto ffn = kit::make_component<FeedForward>("reglu");
  ffn->build(ParamScope(store, 1, "ffn"), dims(2, 3));  // F' = floor(2 * 3 / 3) = 2
  const auto set = [&](const std::string& name, const std::vector<float>& v) {
    be->copy_from_host(store.get("ffn." + name).value, v.data());
  };
  set("gate.weight", {1, 0, 0, -1});   // [F', D]: gate = (x0, -x1)
  set("up.weight", {2, 0, 0, 3});      // up = (2 x0, 3 x1)
  set("out.weight", {1, 1, 0.5f, 0});  // [D, F']: y = (h0 + h1, h0 / 2) + out.bias
  set("out.bias", {0.5f, -0.5f});
  // x = (1, 2): gate (1, -2) -> relu (1, 0), up (2, 6), h (2, 0), y (2.5, 0.5);
  // x = (-1, -1): gate (-1, 1) -> (0, 1), up (-2, -3), h (0, -3), y (-2.5, -0.5).
  Graph g(*be, 1, 0, /*training=*/false, /*grad=*/false);
  const Var y = ffn->forward(g, g.constant(tensor(*be, {1, 2, 2}, {1, 2, -1, -1})));  // x: [B 1, T 2, D 2]
  const std::vector<float> got = host_floats(*be, y.value());
  const std::vector<float> want = {2.5f, 0.5f, -2.5f, -0.5f};
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
}

TEST(FfnReglu, GradientsMatchFiniteDifferences) {
  auto be = kit::make_backend("reference");
  ParameterStore store(*be);
  auto ffn = kit::make_component<FeedForward>("reglu");
  ffn->build(ParamScope(store, 3, "ffn"), dims(6, 12));
  std::vector<float> xv(2 * 3 * 6);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = 0.9f * std::sin(0.7f * static_cast<float>(i) + 0.4f);
  const Tensor x = tensor(*be, {2, 3, 6}, xv);  // x: [B, T, D]
  kit::GradcheckOptions o;
  o.eps = 2e-3;  // ReLU's kink: a small step keeps the differences on one side of it
  const auto inputs = kit::gradcheck(
      *be, [&](Graph& g, const std::vector<Var>& in) { return ffn->forward(g, in[0]); }, {x}, o);
  EXPECT_TRUE(inputs.ok) << inputs.report;
  EXPECT_GT(inputs.checked, 0);
  const auto params = kit::parameter_gradcheck(
      *be, store, [&](Graph& g) { return ffn->forward(g, g.constant(x)); }, o);
  EXPECT_TRUE(params.ok) << params.report;
  EXPECT_GT(params.checked, 0);
}

}  // namespace
