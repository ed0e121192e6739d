// Tests for the component plugins (ffn/relu, ffn/gelu, positional_encoding/sinusoidal and
// learned, block/post_norm and pre_norm) and ParamScope: gradients w.r.t. inputs and parameters
// by finite differences on the reference backend, known values, parameter names, errors, and
// the options `ablate plugins` prints. Plugins are loaded from the built-in plugin dir.
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

namespace ablate {
namespace {
using testing::f32_tensor;
using testing::host;
using testing::ramp;
using testing::reference_backend;

using Options = std::map<std::string, std::string>;

Tensor values(const Shape& s, float phase = 0.0f) { return f32_tensor(reference_backend(), s, ramp(s.numel(), phase)); }

ModelDims small_dims(float dropout = 0.0f) {
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
void randomize(ParameterStore& store) {
  float phase = 0.3f;
  for (Parameter* p : store.all()) {
    std::vector<float> v = ramp(p->value.numel(), phase += 0.7f);
    for (float& x : v) x = 0.5f + 0.5f * x;  // (0.05, 0.95): keeps norm gammas away from 0
    reference_backend().copy_from_host(p->value, v.data());
  }
}

// Gradients of L = sum(r ⊙ f) w.r.t. every parameter of `store` against central differences (the
// public ablate::testing::parameter_gradcheck), on up to `per_param` elements of each, as a gtest assertion.
::testing::AssertionResult parameter_gradcheck(ParameterStore& store, const std::function<Var(Graph&)>& f, double eps = 1e-2,
                                               std::int64_t per_param = 24) {
  testing::GradcheckOptions o;
  o.eps = eps;
  o.seed = 11;
  o.max_elements_per_input = per_param;
  const testing::GradcheckResult r = testing::parameter_gradcheck(reference_backend(), store, f, o);
  if (!r.ok) return ::testing::AssertionFailure() << r.report;
  return ::testing::AssertionSuccess();
}

void expect_input_gradcheck(const testing::GradcheckFn& fn, const Tensor& x, double eps = 1e-2) {
  testing::GradcheckOptions o;
  o.eps = eps;
  const auto r = testing::gradcheck(reference_backend(), fn, {x}, o);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

std::vector<std::string> names(ParameterStore& store) {
  std::vector<std::string> out;
  for (Parameter* p : store.all()) out.push_back(p->name);
  return out;
}

class Components : public ::testing::Test {
 protected:
  PluginRegistry& registry = testing::builtin_registry();  // the built plugins, loaded once
  ParameterStore store{reference_backend()};
};

// The helper itself must catch a wrong parameter gradient: y = 2 w with a backward claiming 3.
TEST_F(Components, ParameterGradcheckRejectsAWrongGradient) {
  Parameter& w = ParamScope(store, 1, "wrong").param("weight", {5}, Init::uniform(1.0f));
  auto twice = [&w](float claimed) {
    return [&w, claimed](Graph& g) {
      const Var in = g.parameter(w);
      Tensor y = g.backend().empty(in.shape(), DType::F32);
      g.backend().fill(y, 0.0f);
      g.backend().axpy(y, in.value(), 2.0f);
      Var out = g.result(y, {&in});
      g.record(out, [&g, in, claimed](const Tensor& dy) { g.backend().axpy(*g.grad_buffer(in), dy, claimed); });
      return out;
    };
  };
  EXPECT_TRUE(parameter_gradcheck(store, twice(2.0f)));
  EXPECT_FALSE(parameter_gradcheck(store, twice(3.0f)));
}

// --- ParamScope

TEST_F(Components, ParamScopeNamesFollowTheScope) {
  const ParamScope root(store, 3);
  const ParamScope ffn = root.child("encoder").child("layers").child("1").child("ffn");
  EXPECT_EQ(ffn.prefix(), "encoder.layers.1.ffn");
  Parameter& w = ffn.param("in.weight", {4, 2}, Init::ones());
  EXPECT_EQ(w.name, "encoder.layers.1.ffn.in.weight");
  EXPECT_EQ(&store.get("encoder.layers.1.ffn.in.weight"), &w);
  EXPECT_EQ(root.param("bias", {2}, Init::zeros()).name, "bias");  // empty prefix: the leaf alone
  EXPECT_EQ(ffn.seed(), 3u);
  const std::string dup = testing::error_of([&] { ffn.param("in.weight", {4, 2}, Init::ones()); });
  EXPECT_NE(dup.find("encoder.layers.1.ffn.in.weight"), std::string::npos) << dup;
  EXPECT_THROW(ffn.param("", {1}, Init::ones()), Error);
}

// --- ffn/relu and ffn/gelu

// y[n, out] = x[n, in] W^T + b on the host, in doubles, with the weight "<scope>.<name>.weight" [out, in]
// and bias "<scope>.<name>.bias" [out] read from the store.
std::vector<double> host_linear(ParameterStore& store, const std::string& scope, const std::string& name,
                                const std::vector<double>& x, std::int64_t n, std::int64_t in, std::int64_t out) {
  Backend& be = reference_backend();
  const auto w = host(be, store.get(scope + "." + name + ".weight").value),
             b = host(be, store.get(scope + "." + name + ".bias").value);
  std::vector<double> y(static_cast<std::size_t>(n * out));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double v = b[static_cast<std::size_t>(o)];
      for (std::int64_t k = 0; k < in; ++k)
        v += x[static_cast<std::size_t>(r * in + k)] * w[static_cast<std::size_t>(o * in + k)];
      y[static_cast<std::size_t>(r * out + o)] = v;
    }
  return y;
}

std::vector<float> to_floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// y = act(x W_in^T + b_in) W_out^T + b_out on the host, from the store's values.
std::vector<float> ffn_reference(ParameterStore& store, const std::string& scope, const std::vector<float>& x, std::int64_t n,
                                 std::int64_t d, std::int64_t f, const std::function<double(double)>& act) {
  std::vector<double> h = host_linear(store, scope, "in", {x.begin(), x.end()}, n, d, f);  // [n, F]
  for (double& v : h) v = act(v);
  return to_floats(host_linear(store, scope, "out", h, n, f, d));  // [n, D]
}

TEST_F(Components, FfnParametersAreNamedShapedAndInitialised) {
  const ModelDims dims = small_dims();
  auto ffn = registry.create<FeedForward>("relu");
  ffn->build(ParamScope(store, 1, "layers.0.ffn"), dims);
  EXPECT_EQ(names(store), (std::vector<std::string>{"layers.0.ffn.in.weight", "layers.0.ffn.in.bias", "layers.0.ffn.out.weight",
                                                    "layers.0.ffn.out.bias"}));
  EXPECT_EQ(store.get("layers.0.ffn.in.weight").value.shape(), Shape({10, 6}));   // [F, D]
  EXPECT_EQ(store.get("layers.0.ffn.out.weight").value.shape(), Shape({6, 10}));  // [D, F]
  const float bound = std::sqrt(6.0f / 16.0f);                                    // Xavier: sqrt(6 / (F + D))
  for (const char* w : {"layers.0.ffn.in.weight", "layers.0.ffn.out.weight"}) {
    float max_abs = 0.0f;
    for (float v : host(reference_backend(), store.get(w).value)) max_abs = std::max(max_abs, std::abs(v));
    EXPECT_LE(max_abs, bound) << w;
    EXPECT_GT(max_abs, 0.3f * bound) << w;
  }
  for (const char* b : {"layers.0.ffn.in.bias", "layers.0.ffn.out.bias"})
    for (float v : host(reference_backend(), store.get(b).value)) EXPECT_EQ(v, 0.0f) << b;
  EXPECT_THROW(ffn->build(ParamScope(store, 1, "layers.0.ffn"), dims), Error);  // names taken
}

TEST_F(Components, FfnForwardMatchesAHostReferenceForEachActivation) {
  const ModelDims dims = small_dims();
  const Shape xs{2, 3, 6};
  const std::vector<float> xv = ramp(xs.numel(), 0.2f);
  struct Case {
    const char* plugin;
    Options options;
    std::function<double(double)> act;
  };
  const double kPi = std::acos(-1.0);
  const std::vector<Case> cases = {
      {"relu", {}, [](double v) { return std::max(v, 0.0); }},
      {"gelu", {}, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {"gelu",
       {{"approximation", "tanh"}},
       [kPi](double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v))); }},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.plugin + std::string(c.options.empty() ? "" : " tanh"));
    const std::string scope = "ffn" + std::to_string(i++);
    auto ffn = registry.create<FeedForward>(c.plugin, c.options);
    ffn->build(ParamScope(store, 5, scope), dims);
    randomize(store);  // non-zero biases too
    Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
    const std::vector<float> y =
        host(reference_backend(), ffn->forward(g, g.constant(f32_tensor(reference_backend(), xs, xv))).value());
    const std::vector<float> want = ffn_reference(store, scope, xv, 6, 6, 10, c.act);
    ASSERT_EQ(y.size(), want.size());
    for (std::size_t k = 0; k < y.size(); ++k) EXPECT_NEAR(y[k], want[k], 1e-4f) << k;
  }
  EXPECT_THROW(registry.create<FeedForward>("gelu", {{"approximation", "sigmoid"}}), UsageError);
}

TEST_F(Components, FfnDropoutActsInTrainingOnly) {
  auto ffn = registry.create<FeedForward>("relu");
  ffn->build(ParamScope(store, 5, "ffn"), small_dims(/*dropout=*/0.5f));
  const Tensor x = values({2, 3, 6});
  auto run = [&](bool training) {
    Graph g(reference_backend(), 1, 0, training, /*grad=*/false);
    return host(reference_backend(), ffn->forward(g, g.constant(x)).value());
  };
  EXPECT_EQ(run(false), run(false));
  EXPECT_NE(run(true), run(false));
}

TEST_F(Components, FfnGradientsMatchFiniteDifferences) {
  for (const auto& [plugin, options] :
       std::vector<std::pair<std::string, Options>>{{"relu", {}}, {"gelu", {}}, {"gelu", {{"approximation", "tanh"}}}}) {
    SCOPED_TRACE(plugin);
    ParameterStore params(reference_backend());
    auto ffn = registry.create<FeedForward>(plugin, options);
    ffn->build(ParamScope(params, 9, "ffn"), small_dims(/*dropout=*/0.2f));  // dropout on: same masks each call
    // ReLU's kink: a smaller step keeps the differences on one side of it.
    const double eps = plugin == "relu" ? 2e-3 : 1e-2;
    expect_input_gradcheck([&](Graph& g, const std::vector<Var>& in) { return ffn->forward(g, in[0]); }, values({2, 3, 6}, 0.4f),
                           eps);
    const Tensor x = values({2, 3, 6}, 0.4f);
    EXPECT_TRUE(parameter_gradcheck(
        params, [&](Graph& g) { return ffn->forward(g, g.constant(x)); }, eps));
  }
}

std::vector<float> encode(PositionalEncoding& pe, const Tensor& x, std::int64_t offset) {
  Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
  return host(reference_backend(), pe.forward(g, g.constant(x), offset).value());
}

// --- ffn/swiglu, ffn/geglu (gated) and ffn/relu_squared

// y = Linear_out(act(Linear_gate x) * Linear_up x) on the host, from the store's values (biases present).
std::vector<float> gated_reference(ParameterStore& store, const std::string& scope, const std::vector<float>& x, std::int64_t n,
                                   std::int64_t d, std::int64_t f, const std::function<double(double)>& act) {
  const std::vector<double> xd(x.begin(), x.end());
  std::vector<double> h = host_linear(store, scope, "gate", xd, n, d, f);  // [n, F']
  const std::vector<double> up = host_linear(store, scope, "up", xd, n, d, f);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = act(h[i]) * up[i];
  return to_floats(host_linear(store, scope, "out", h, n, f, d));  // [n, D]
}

TEST_F(Components, GatedFfnsMatchAHostReferenceAndThePlainFfnsWeightCount) {
  const ModelDims dims = small_dims();  // D 6, d_ff 10: hidden floor(20 / 3) = 6
  const Shape xs{2, 3, 6};
  const std::vector<float> xv = ramp(xs.numel(), 0.2f);
  const std::map<std::string, std::function<double(double)>> acts = {
      {"swiglu", [](double v) { return v / (1.0 + std::exp(-v)); }},
      {"geglu", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }}};
  for (const auto& [plugin, act] : acts) {
    SCOPED_TRACE(plugin);
    ParameterStore params(reference_backend());
    auto ffn = registry.create<FeedForward>(plugin);
    ffn->build(ParamScope(params, 5, "ffn"), dims);
    EXPECT_EQ(names(params), (std::vector<std::string>{"ffn.gate.weight", "ffn.up.weight", "ffn.out.weight", "ffn.gate.bias",
                                                       "ffn.up.bias", "ffn.out.bias"}));
    EXPECT_EQ(params.get("ffn.gate.weight").value.shape(), Shape({6, 6}));  // [F', D]
    EXPECT_EQ(params.get("ffn.out.weight").value.shape(), Shape({6, 6}));   // [D, F']
    randomize(params);
    Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
    const std::vector<float> y =
        host(reference_backend(), ffn->forward(g, g.constant(f32_tensor(reference_backend(), xs, xv))).value());
    const std::vector<float> want = gated_reference(params, "ffn", xv, 6, 6, 6, act);
    for (std::size_t k = 0; k < y.size(); ++k) EXPECT_NEAR(y[k], want[k], 1e-4f) << k;
  }
  // Matched weights: three [F', D] matrices with F' = floor(2 d_ff / 3) hold the two [d_ff, D] of ffn/relu.
  ModelDims wide = small_dims();
  wide.d_ff = 12;
  const auto weights = [&](const std::string& plugin, const Options& o) {
    ParameterStore params(reference_backend());
    registry.create<FeedForward>(plugin, o)->build(ParamScope(params, 1, "ffn"), wide);
    std::int64_t n = 0;
    for (Parameter* p : params.all())
      if (p->name.find("weight") != std::string::npos) n += p->value.numel();
    return std::make_pair(n, params.all().size());
  };
  EXPECT_EQ(weights("swiglu", {}).first, weights("relu", {}).first);  // 3 * 8 * 6 = 2 * 12 * 6
  EXPECT_EQ(weights("geglu", {{"hidden", "4"}}).first, 3 * 4 * 6);
  EXPECT_EQ(weights("swiglu", {{"bias", "false"}}).second, 3u);  // the weights alone
  const std::string e = testing::error_of([&] {
    ModelDims tiny = small_dims();
    tiny.d_ff = 1;  // floor(2 / 3) = 0
    ParameterStore params(reference_backend());
    registry.create<FeedForward>("swiglu")->build(ParamScope(params, 1, "ffn"), tiny);
  });
  EXPECT_NE(e.find("ffn/swiglu in 'ffn'"), std::string::npos) << e;
}

TEST_F(Components, ReluSquaredSquaresTheActivationOfAPlainFfn) {
  auto ffn = registry.create<FeedForward>("relu_squared");
  ffn->build(ParamScope(store, 5, "ffn"), small_dims());
  EXPECT_EQ(names(store), (std::vector<std::string>{"ffn.in.weight", "ffn.in.bias", "ffn.out.weight", "ffn.out.bias"}));
  randomize(store);
  const Shape xs{2, 3, 6};
  const std::vector<float> xv = ramp(xs.numel(), 0.2f);
  Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
  const std::vector<float> y =
      host(reference_backend(), ffn->forward(g, g.constant(f32_tensor(reference_backend(), xs, xv))).value());
  const std::vector<float> want = ffn_reference(store, "ffn", xv, 6, 6, 10, [](double v) { return v > 0.0 ? v * v : 0.0; });
  for (std::size_t k = 0; k < y.size(); ++k) EXPECT_NEAR(y[k], want[k], 1e-4f) << k;
}

TEST_F(Components, NewFfnGradientsMatchFiniteDifferences) {
  for (const auto& [plugin, options] :
       std::vector<std::pair<std::string, Options>>{{"swiglu", {}}, {"geglu", {{"bias", "false"}}}, {"relu_squared", {}}}) {
    SCOPED_TRACE(plugin);
    ParameterStore params(reference_backend());
    auto ffn = registry.create<FeedForward>(plugin, options);
    ffn->build(ParamScope(params, 9, "ffn"), small_dims(/*dropout=*/0.2f));
    randomize(params);
    const double eps = plugin == "relu_squared" ? 2e-3 : 1e-2;
    expect_input_gradcheck([&](Graph& g, const std::vector<Var>& in) { return ffn->forward(g, in[0]); }, values({2, 3, 6}, 0.4f),
                           eps);
    const Tensor x = values({2, 3, 6}, 0.4f);
    EXPECT_TRUE(parameter_gradcheck(
        params, [&](Graph& g) { return ffn->forward(g, g.constant(x)); }, eps));
  }
}

// --- positional_encoding/none

TEST_F(Components, NoPositionsPassEmbeddingsUnchangedAtAnyOffset) {
  auto pe = registry.create<PositionalEncoding>("none");
  pe->build(ParamScope(store, 1, "encoder.positions"), small_dims());
  EXPECT_TRUE(store.all().empty());
  const PositionCapabilities caps = capabilities_of(*pe);
  EXPECT_EQ(caps.max_positions, 0);
  EXPECT_FALSE(caps.rotates);
  EXPECT_FALSE(caps.biases_logits);
  const Tensor x = values({2, 3, 6}, 0.5f);
  EXPECT_EQ(encode(*pe, x, 100000), host(reference_backend(), x));
}

// --- positional_encoding/sinusoidal

TEST_F(Components, SinusoidalAddsThePaperFormulaAndOffsetShiftsPositions) {
  const ModelDims dims = small_dims();  // D = 6
  auto pe = registry.create<PositionalEncoding>("sinusoidal");
  pe->build(ParamScope(store, 1, "encoder.positions"), dims);
  EXPECT_TRUE(store.all().empty());  // no parameters
  const std::int64_t t = 5, d = 6;
  const std::vector<float> y = encode(*pe, f32_tensor(reference_backend(), {2, t, d}, std::vector<float>(60, 0.0f)), 0);
  auto formula = [d](std::int64_t pos, std::int64_t j) {
    const double angle = static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(2 * (j / 2)) / static_cast<double>(d));
    return j % 2 == 0 ? std::sin(angle) : std::cos(angle);
  };
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t pos = 0; pos < t; ++pos)
      for (std::int64_t j = 0; j < d; ++j)
        EXPECT_NEAR(y[static_cast<std::size_t>((b * t + pos) * d + j)], formula(pos, j), 1e-6) << pos << ", " << j;
  EXPECT_FLOAT_EQ(y[0], 0.0f);                                                    // sin(0)
  EXPECT_FLOAT_EQ(y[1], 1.0f);                                                    // cos(0)
  EXPECT_NEAR(y[1 * d + 0], std::sin(1.0), 1e-6);                                 // pos 1, i 0: wavelength 2*pi
  EXPECT_NEAR(y[3 * d + 3], std::cos(3.0 / std::pow(10000.0, 2.0 / 6.0)), 1e-6);  // pos 3, 2i+1 = 3

  // x is added; offset 3 gives positions 3.. (incremental decoding); far positions work too.
  const Tensor x = values({1, 2, d}, 0.5f);
  const std::vector<float> xv = host(reference_backend(), x);
  for (std::int64_t offset : {3, 4999}) {
    const std::vector<float> shifted = encode(*pe, x, offset);
    for (std::int64_t pos = 0; pos < 2; ++pos)
      for (std::int64_t j = 0; j < d; ++j) {
        const auto k = static_cast<std::size_t>(pos * d + j);
        EXPECT_NEAR(shifted[k], xv[k] + formula(offset + pos, j), 2e-6) << offset << ", " << pos << ", " << j;
      }
  }
  EXPECT_EQ(encode(*pe, x, 3), encode(*pe, x, 3));  // cached table, same values
}

TEST_F(Components, SinusoidalBaseOptionOddWidthAndBf16Inputs) {
  ModelDims dims = small_dims();
  dims.d_model = 5;  // odd: the last column is a sine alone
  auto pe = registry.create<PositionalEncoding>("sinusoidal", {{"base", "100"}});
  pe->build(ParamScope(store, 1, "pe"), dims);
  const std::vector<float> y = encode(*pe, f32_tensor(reference_backend(), {1, 3, 5}, std::vector<float>(15, 0.0f)), 0);
  EXPECT_NEAR(y[2 * 5 + 4], std::sin(2.0 / std::pow(100.0, 4.0 / 5.0)), 1e-6);
  EXPECT_NEAR(y[2 * 5 + 3], std::cos(2.0 / std::pow(100.0, 2.0 / 5.0)), 1e-6);
  EXPECT_THROW(registry.create<PositionalEncoding>("sinusoidal", {{"base", "1"}}), PluginError);

  Backend& be = reference_backend();
  Tensor x16 = be.empty({1, 3, 5}, DType::BF16);
  be.fill(x16, 0.0f);
  Graph g(be, 1, 0, false, false);
  const Var out = pe->forward(g, g.constant(x16), 0);
  EXPECT_EQ(out.dtype(), DType::BF16);
  const std::vector<float> y16 = host(be, out.value());
  for (std::size_t k = 0; k < y.size(); ++k) EXPECT_NEAR(y16[k], y[k], 1e-2f) << k;

  const std::string wrong = testing::error_of([&] { encode(*pe, values({1, 3, 4}), 0); });
  EXPECT_NE(wrong.find("[B, T, 5]"), std::string::npos) << wrong;
}

TEST_F(Components, SinusoidalGradientPassesThrough) {
  auto pe = registry.create<PositionalEncoding>("sinusoidal");
  pe->build(ParamScope(store, 1, "pe"), small_dims());
  expect_input_gradcheck([&](Graph& g, const std::vector<Var>& in) { return pe->forward(g, in[0], 2); }, values({2, 3, 6}));
}

// --- positional_encoding/learned

TEST_F(Components, LearnedAddsTableRowsAtTheOffset) {
  auto pe = registry.create<PositionalEncoding>("learned", {{"max_len", "8"}});
  pe->build(ParamScope(store, 1, "encoder.positions"), small_dims());
  ASSERT_EQ(names(store), std::vector<std::string>{"encoder.positions.weight"});
  const Parameter& table = store.get("encoder.positions.weight");
  EXPECT_EQ(table.value.shape(), Shape({8, 6}));  // [max_len, D]
  const std::vector<float> tv = host(reference_backend(), table.value);
  double sq = 0.0;
  for (float v : tv) sq += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(tv.size())), 0.02, 0.008);  // normal(0.02)

  const Tensor x = values({2, 3, 6});
  const std::vector<float> xv = host(reference_backend(), x);
  const std::vector<float> y = encode(*pe, x, 5);  // rows 5, 6, 7: the last ones
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t t = 0; t < 3; ++t)
      for (std::int64_t j = 0; j < 6; ++j) {
        const auto k = static_cast<std::size_t>((b * 3 + t) * 6 + j);
        EXPECT_FLOAT_EQ(y[k], xv[k] + tv[static_cast<std::size_t>((5 + t) * 6 + j)]);
      }
  const std::vector<float> y0 = encode(*pe, x, 0);  // another offset, same instance: rows 0, 1, 2
  for (std::size_t k = 0; k < 18; ++k) EXPECT_FLOAT_EQ(y0[k], xv[k] + tv[k]) << k;
}

TEST_F(Components, LearnedRejectsPositionsPastMaxLenWithAHint) {
  auto pe = registry.create<PositionalEncoding>("learned", {{"max_len", "8"}});
  pe->build(ParamScope(store, 1, "decoder.positions"), small_dims());
  const std::string e = testing::error_of([&] { encode(*pe, values({1, 9, 6}), 0); });
  EXPECT_NE(e.find("position 8"), std::string::npos) << e;
  EXPECT_NE(e.find("max_len 8"), std::string::npos) << e;
  EXPECT_NE(e.find("decoder.positions.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("raise the option max_len"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 9"), std::string::npos) << e;
  const std::string decoding = testing::error_of([&] { encode(*pe, values({1, 1, 6}), 8); });  // step 9 of a decode
  EXPECT_NE(decoding.find("position 8"), std::string::npos) << decoding;
  EXPECT_NO_THROW(encode(*pe, values({1, 1, 6}), 7));
  EXPECT_THROW(registry.create<PositionalEncoding>("learned", {{"max_len", "0"}}), PluginError);
}

TEST_F(Components, LearnedGradientsMatchFiniteDifferences) {
  auto pe = registry.create<PositionalEncoding>("learned", {{"max_len", "6"}});
  pe->build(ParamScope(store, 1, "pe"), small_dims());
  expect_input_gradcheck([&](Graph& g, const std::vector<Var>& in) { return pe->forward(g, in[0], 1); }, values({2, 3, 6}));
  const Tensor x = values({2, 3, 6});
  EXPECT_TRUE(parameter_gradcheck(
      store, [&](Graph& g) { return pe->forward(g, g.constant(x), 1); }, 1e-2, 36));
  // Rows outside offset .. offset+T-1 get no gradient; used rows get the sum over the batch.
  const std::vector<float> grad = host(reference_backend(), store.get("pe.weight").grad);
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(grad[k], 0.0f);          // row 0
  for (std::size_t k = 4 * 6; k < 6 * 6; ++k) EXPECT_EQ(grad[k], 0.0f);  // rows 4, 5
}

// --- block/post_norm and block/pre_norm

constexpr SublayerRole kSelf = SublayerRole::SelfAttention, kCross = SublayerRole::CrossAttention,
                       kFfn = SublayerRole::FeedForward;
using Roles = std::vector<SublayerRole>;

// The block's layer with the stand-in sublayers `f` (one function for every role).
std::vector<float> run_block(Block& block, const Roles& roles, const Tensor& x, const SublayerFunctions::Function& f) {
  Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
  return host(reference_backend(), block.forward(g, g.constant(x), SublayerFunctions(roles, f)).value());
}
// One stand-in function for every role.
SublayerFunctions::Function every_role(const std::function<Var(Graph&, const Var&)>& f) {
  return [f](Graph& g, SublayerRole, const Var& h) { return f(g, h); };
}

// Row means and (biased) variances of [N, D] values.
void expect_normalised_rows(const std::vector<float>& y, std::int64_t d) {
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

TEST_F(Components, BlocksMakeOneNormPerSublayerUnderTheScope) {
  auto post = registry.create<Block>("post_norm");
  post->build(ParamScope(store, 1, "decoder.layers.0"), small_dims(), {kSelf, kCross, kFfn});
  EXPECT_EQ(names(store), (std::vector<std::string>{"decoder.layers.0.norm0.gamma", "decoder.layers.0.norm0.beta",
                                                    "decoder.layers.0.norm1.gamma", "decoder.layers.0.norm1.beta",
                                                    "decoder.layers.0.norm2.gamma", "decoder.layers.0.norm2.beta"}));
  for (float v : host(reference_backend(), store.get("decoder.layers.0.norm1.gamma").value)) EXPECT_EQ(v, 1.0f);
  for (float v : host(reference_backend(), store.get("decoder.layers.0.norm1.beta").value)) EXPECT_EQ(v, 0.0f);
  auto pre = registry.create<Block>("pre_norm", {{"norm", "rms_norm"}});
  pre->build(ParamScope(store, 1, "encoder.layers.1"), small_dims(), {kSelf, kFfn});
  EXPECT_TRUE(store.contains("encoder.layers.1.norm1.gamma"));
  EXPECT_FALSE(store.contains("encoder.layers.1.norm0.beta"));  // RMSNorm: gamma only
  EXPECT_EQ(store.all().size(), 8u);
  EXPECT_FALSE(post->wants_final_norm());
  EXPECT_TRUE(pre->wants_final_norm());
  EXPECT_EQ(post->norm_kind(), NormKind::LayerNorm);
  EXPECT_EQ(pre->norm_kind(), NormKind::RMSNorm);  // the model's final norm follows the block's
  // A layer with a role the block was not built for: the error names the block and the role.
  const auto id = every_role([](Graph&, const Var& h) { return h; });
  const std::string e = testing::error_of([&] { run_block(*pre, {kSelf, kCross, kFfn}, values({1, 2, 6}), id); });
  EXPECT_NE(e.find("block/pre_norm: no norm for the cross_attention sublayer"), std::string::npos) << e;

  EXPECT_THROW(registry.create<Block>("post_norm", {{"norm", "batch_norm"}}), UsageError);
}

// Each block calls every sublayer of the layer once, in the layer's order, and only those.
TEST_F(Components, BlocksCallEachSublayerOnceInOrder) {
  for (const char* plugin : {"post_norm", "pre_norm", "sandwich_norm", "parallel", "rezero"}) {
    SCOPED_TRACE(plugin);
    for (const Roles& roles : {Roles{kSelf, kFfn}, Roles{kSelf, kCross, kFfn}}) {
      ParameterStore params(reference_backend());
      auto block = registry.create<Block>(plugin);
      block->build(ParamScope(params, 1, "layers.0"), small_dims(), roles);
      Roles called;
      run_block(*block, roles, values({1, 2, 6}), [&](Graph& g, SublayerRole r, const Var& h) {
        called.push_back(r);
        return ops::scale(g, h, 0.5f);
      });
      EXPECT_EQ(called, roles);
    }
  }
}

// block/parallel (GPT-J: x + attn(Norm x) + ffn(Norm x)): every sublayer reads the same
// normalised input, with one shared norm or one norm per sublayer (GPT-NeoX).
TEST_F(Components, ParallelBlockFeedsEverySublayerTheSameNormalisedInput) {
  for (const Roles& roles : {Roles{kSelf, kFfn}, Roles{kSelf, kCross, kFfn}})
    for (const char* shared : {"true", "false"}) {
      SCOPED_TRACE(std::string("shared_norm ") + shared + ", " + std::to_string(roles.size()) + " sublayers");
      ParameterStore params(reference_backend());
      auto block = registry.create<Block>("parallel", {{"shared_norm", shared}});
      block->build(ParamScope(params, 1, "layers.0"), small_dims(), roles);
      EXPECT_EQ(params.all().size(), std::string(shared) == "true" ? 2u : 2 * roles.size());
      EXPECT_TRUE(params.contains("layers.0.norm0.gamma"));
      EXPECT_TRUE(block->wants_final_norm());
      const Tensor x = values({2, 3, 6}, 0.3f);
      std::map<SublayerRole, std::vector<float>> seen;
      const std::vector<float> y = run_block(*block, roles, x, [&](Graph& g, SublayerRole r, const Var& h) {
        seen[r] = host(reference_backend(), h.value());
        return ops::scale(g, h, 2.0f + static_cast<float>(r));  // 2, 3, 4 by role
      });
      ASSERT_EQ(seen.size(), roles.size());
      for (const SublayerRole r : roles) EXPECT_EQ(seen[r], seen[kSelf]);  // all read Norm(x)
      expect_normalised_rows(seen[kSelf], 6);
      float sum = 0.0f;
      for (const SublayerRole r : roles) sum += 2.0f + static_cast<float>(r);
      const std::vector<float> xv = host(reference_backend(), x);
      for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], xv[i] + sum * seen[kSelf][i], 1e-5f) << i;
    }
}

// block/sandwich_norm: a second norm on each sublayer's output, before the residual add.
TEST_F(Components, SandwichNormNormalisesEachSublayerOutputBeforeTheResidualAdd) {
  auto block = registry.create<Block>("sandwich_norm");
  block->build(ParamScope(store, 1, "layers.0"), small_dims(), {kSelf, kFfn});
  EXPECT_EQ(names(store), (std::vector<std::string>{"layers.0.norm0.gamma", "layers.0.norm0.beta", "layers.0.norm1.gamma",
                                                    "layers.0.norm1.beta", "layers.0.out.norm0.gamma", "layers.0.out.norm0.beta",
                                                    "layers.0.out.norm1.gamma", "layers.0.out.norm1.beta"}));
  EXPECT_TRUE(block->wants_final_norm());
  const Tensor x = values({2, 3, 6}, 0.1f);
  const std::vector<float> xv = host(reference_backend(), x);
  const auto gelu3 =
      every_role([](Graph& g, const Var& h) { return ops::scale(g, ops::activation(g, h, Activation::GeluTanh), 3.0f); });
  const std::vector<float> y = run_block(*block, {kFfn}, x, gelu3);  // the FFN alone: y - x = Norm'(f(Norm(x)))
  std::vector<float> delta(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) delta[i] = y[i] - xv[i];
  expect_normalised_rows(delta, 6);
}

// block/rezero: gates from 0 make every layer the identity at the start; LayerScale by options.
TEST_F(Components, ReZeroStartsAsTheIdentityAndGatesEachBranch) {
  auto rezero = registry.create<Block>("rezero");
  rezero->build(ParamScope(store, 1, "layers.0"), small_dims(), {kSelf, kFfn});
  EXPECT_EQ(names(store), (std::vector<std::string>{"layers.0.alpha0", "layers.0.alpha1"}));  // no norms
  EXPECT_EQ(host(reference_backend(), store.get("layers.0.alpha0").value), std::vector<float>{0.0f});
  EXPECT_FALSE(rezero->wants_final_norm());
  const Tensor x = values({2, 3, 6}, 0.1f);
  const std::vector<float> xv = host(reference_backend(), x);
  const auto twice = every_role([](Graph& g, const Var& h) { return ops::scale(g, h, 2.0f); });
  EXPECT_EQ(run_block(*rezero, {kSelf, kFfn}, x, twice), xv);
  // alpha 0.5, f(h) = 2h: each sublayer doubles x (x + 0.5 * 2x), two of them: 4x.
  ParameterStore half_params(reference_backend());
  auto half = registry.create<Block>("rezero", {{"init", "0.5"}});
  half->build(ParamScope(half_params, 1, "layers.0"), small_dims(), {kSelf, kFfn});
  const std::vector<float> y = run_block(*half, {kSelf, kFfn}, x, twice);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], 4.0f * xv[i], 1e-6f) << i;
  // LayerScale: pre-norm, a per-channel gate of 1e-4, a final norm.
  ParameterStore ls_params(reference_backend());
  auto ls = registry.create<Block>("rezero", {{"norm", "layer_norm"}, {"gate", "channel"}, {"init", "1e-4"}});
  ls->build(ParamScope(ls_params, 1, "layers.0"), small_dims(), {kFfn});
  EXPECT_EQ(names(ls_params), (std::vector<std::string>{"layers.0.norm0.gamma", "layers.0.norm0.beta", "layers.0.alpha0"}));
  EXPECT_EQ(host(reference_backend(), ls_params.get("layers.0.alpha0").value), std::vector<float>(6, 1e-4f));
  EXPECT_TRUE(ls->wants_final_norm());
}

// ScaleNorm (any block's norm: scale_norm): g x / ||x|| with one scalar g, initially sqrt(D).
TEST_F(Components, ScaleNormGivesRowsOfNormGWithOneScalarParameter) {
  auto block = registry.create<Block>("pre_norm", {{"norm", "scale_norm"}});
  block->build(ParamScope(store, 1, "layers.0"), small_dims(), {kFfn});
  EXPECT_EQ(names(store), std::vector<std::string>{"layers.0.norm0.g"});
  EXPECT_EQ(block->norm_kind(), NormKind::ScaleNorm);
  const std::vector<float> g0 = host(reference_backend(), store.get("layers.0.norm0.g").value);
  ASSERT_EQ(g0.size(), 1u);
  EXPECT_FLOAT_EQ(g0[0], std::sqrt(6.0f));
  std::vector<float> seen;
  run_block(*block, {kFfn}, values({2, 3, 6}, 0.2f), every_role([&](Graph&, const Var& h) {
    seen = host(reference_backend(), h.value());
    return h;
  }));
  for (std::size_t r = 0; r < 6; ++r) {
    double sq = 0.0;
    for (std::size_t j = 0; j < 6; ++j) sq += static_cast<double>(seen[r * 6 + j]) * seen[r * 6 + j];
    EXPECT_NEAR(std::sqrt(sq), std::sqrt(6.0), 1e-4) << "row " << r;
  }
}

TEST_F(Components, PostNormNormalisesTheResidualSum) {
  auto block = registry.create<Block>("post_norm");
  block->build(ParamScope(store, 1, "layers.0"), small_dims(/*dropout=*/0.3f), {kFfn});  // eval: dropout off
  const Tensor x = values({2, 3, 6}, 0.1f);
  const std::vector<float> xv = host(reference_backend(), x);
  const auto twice =
      every_role([](Graph& g, const Var& h) { return ops::scale(g, ops::activation(g, h, Activation::GeluTanh), 2.0f); });
  expect_normalised_rows(run_block(*block, {kFfn}, x, twice), 6);
  // f = 0: LayerNorm(x) itself.
  const std::vector<float> y =
      run_block(*block, {kFfn}, x, every_role([](Graph& g, const Var& h) { return ops::scale(g, h, 0.0f); }));
  expect_normalised_rows(y, 6);
  // ... which preserves the order of each row's values.
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t j = 1; j < 6; ++j) EXPECT_EQ(xv[r * 6 + j] > xv[r * 6 + j - 1], y[r * 6 + j] > y[r * 6 + j - 1]);

  auto rms = registry.create<Block>("post_norm", {{"norm", "rms_norm"}});
  rms->build(ParamScope(store, 1, "layers.1"), small_dims(), {kFfn});
  const std::vector<float> yr = run_block(*rms, {kFfn}, x, twice);
  for (std::size_t r = 0; r < 6; ++r) {
    double ms = 0.0;
    for (std::size_t j = 0; j < 6; ++j) ms += static_cast<double>(yr[r * 6 + j]) * yr[r * 6 + j];
    EXPECT_NEAR(ms / 6.0, 1.0, 1e-3) << "row " << r;
  }
}

TEST_F(Components, PreNormKeepsTheResidualStreamAndNormalisesTheSublayerInput) {
  for (const char* norm : {"layer_norm", "rms_norm"}) {
    SCOPED_TRACE(norm);
    ParameterStore params(reference_backend());
    auto block = registry.create<Block>("pre_norm", {{"norm", norm}});
    block->build(ParamScope(params, 1, "layers.0"), small_dims(/*dropout=*/0.3f), {kFfn});
    const Tensor x = values({2, 3, 6}, 0.1f);
    const std::vector<float> xv = host(reference_backend(), x);
    // f returns 0: x passes through unchanged.
    std::vector<float> seen;
    const std::vector<float> y = run_block(*block, {kFfn}, x, every_role([&](Graph& g, const Var& h) {
      seen = host(reference_backend(), h.value());
      return ops::scale(g, h, 0.0f);
    }));
    EXPECT_EQ(y, xv);
    if (std::string(norm) == "layer_norm") expect_normalised_rows(seen, 6);
    // f = identity: y = x + Norm(x).
    const std::vector<float> y2 = run_block(*block, {kFfn}, x, every_role([](Graph&, const Var& h) { return h; }));
    for (std::size_t k = 0; k < y2.size(); ++k) EXPECT_NEAR(y2[k], xv[k] + seen[k], 1e-6f) << k;
  }
}

TEST_F(Components, BlockGradientsMatchFiniteDifferences) {
  const std::vector<std::pair<std::string, Options>> cases = {
      {"post_norm", {{"norm", "layer_norm"}}},
      {"post_norm", {{"norm", "rms_norm"}}},
      {"pre_norm", {{"norm", "layer_norm"}}},
      {"pre_norm", {{"norm", "rms_norm"}}},
      {"pre_norm", {{"norm", "scale_norm"}}},
      {"sandwich_norm", {{"norm", "layer_norm"}}},
      {"sandwich_norm", {{"norm", "scale_norm"}}},
      {"parallel", {}},
      {"parallel", {{"shared_norm", "false"}, {"norm", "rms_norm"}}},
      {"rezero", {{"init", "0.5"}}},
      {"rezero", {{"norm", "layer_norm"}, {"gate", "channel"}, {"init", "0.3"}}}};
  for (const auto& [plugin, options] : cases) {
    SCOPED_TRACE(plugin + " " + (options.empty() ? std::string() : options.begin()->second));
    ParameterStore params(reference_backend());
    auto block = registry.create<Block>(plugin, options);
    block->build(ParamScope(params, 1, "layers.0"), small_dims(/*dropout=*/0.25f), {kSelf, kFfn});  // residual dropout on
    randomize(params);
    const SublayerFunctions f({kSelf, kFfn}, every_role([](Graph& g, const Var& h) {
                                return ops::activation(g, ops::scale(g, h, 1.5f), Activation::GeluTanh);
                              }));
    // Two sublayers in sequence, as a layer has them.
    auto layer = [&](Graph& g, const Var& x) { return block->forward(g, x, f); };
    expect_input_gradcheck([&](Graph& g, const std::vector<Var>& in) { return layer(g, in[0]); }, values({2, 3, 6}, 0.2f));
    const Tensor x = values({2, 3, 6}, 0.2f);
    EXPECT_TRUE(parameter_gradcheck(params, [&](Graph& g) { return layer(g, g.constant(x)); }));
  }
}

// Under mixed precision (BF16 compute copies) one layer keeps BF16 activations end to end and
// stays close to the F32 result.
TEST_F(Components, OneLayerRunsInBf16CloseToF32) {
  Backend& be = reference_backend();
  auto run = [&](DType dtype, const std::string& positions) {
    ParameterStore params(be, dtype);
    auto pe = registry.create<PositionalEncoding>(positions, positions == "learned" ? Options{{"max_len", "8"}} : Options{});
    auto block = registry.create<Block>("pre_norm");
    auto ffn = registry.create<FeedForward>("gelu");
    pe->build(ParamScope(params, 1, "positions"), small_dims());
    block->build(ParamScope(params, 1, "layers.0"), small_dims(), {kFfn});
    ffn->build(ParamScope(params, 1, "layers.0.ffn"), small_dims());
    Tensor x = values({2, 3, 6});
    if (dtype == DType::BF16) {
      Tensor x16 = be.empty(x.shape(), DType::BF16);
      be.cast(x16, x);
      x = x16;
    }
    Graph g(be, 1, 0, false, false);
    const Var h = pe->forward(g, g.constant(x), 2);
    const Var y =
        block->forward(g, h, SublayerFunctions({kFfn}, every_role([&](Graph& gg, const Var& v) { return ffn->forward(gg, v); })));
    EXPECT_EQ(y.dtype(), dtype);
    return host(be, y.value());
  };
  for (const char* positions : {"sinusoidal", "learned"}) {
    SCOPED_TRACE(positions);
    const std::vector<float> full = run(DType::F32, positions), half = run(DType::BF16, positions);
    ASSERT_EQ(full.size(), half.size());
    for (std::size_t k = 0; k < full.size(); ++k) EXPECT_NEAR(half[k], full[k], 0.05f + 0.02f * std::abs(full[k])) << k;
  }
}

// --- KeyValueCache (ablate/attention.hpp)

// Appends land at the rows after the previous ones; the rows not yet written are zeros (the
// reference backend's new tensors are NaN: a masked NaN key would still poison a kernel that
// multiplies it by a zero probability); past capacity, or keys of another shape, are refused.
TEST_F(Components, KeyValueCacheAppendsRowsAndKeepsTheRestZero) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  KeyValueCache cache(4);
  const Var k1 = g.constant(values({1, 2, 3, 2}, 0.1f)), v1 = g.constant(values({1, 2, 3, 2}, 0.4f));
  KeyValues kv = cache.append(g, k1, v1);
  EXPECT_EQ(cache.length(), 3);
  ASSERT_EQ(kv.k.shape(), Shape({1, 2, 4, 2}));
  const Var k2 = g.constant(values({1, 2, 1, 2}, 0.7f));
  kv = cache.append(g, k2, k2);
  EXPECT_EQ(cache.length(), 4);
  const std::vector<float> k = host(be, kv.k.value()), a = host(be, k1.value()), b = host(be, k2.value());
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t d = 0; d < 2; ++d)
        EXPECT_EQ(k[(h * 4 + t) * 2 + d], t < 3 ? a[(h * 3 + t) * 2 + d] : b[h * 2 + d]) << h << " " << t << " " << d;
  KeyValueCache fresh(5);
  const std::vector<float> z = host(be, fresh.append(g, k2, k2).v.value());
  for (std::size_t i = 0; i < z.size(); ++i) {
    const bool unwritten = i % 10 >= 2;  // rows 1..4 of each head
    EXPECT_TRUE(!unwritten || z[i] == 0.0f) << i << ": " << z[i];
  }
  EXPECT_NE(testing::error_of([&] { cache.append(g, k2, k2); }).find("exceed its capacity of 4"), std::string::npos);
  const Var wide = g.constant(values({1, 2, 1, 3}));
  EXPECT_NE(testing::error_of([&] { fresh.append(g, wide, wide); }).find("do not fit the cache"), std::string::npos);
}

// --- the loaded libraries and `ablate plugins`

TEST(ComponentPlugins, LoadedLibrariesBuildAndRun) {
  PluginRegistry& loaded = testing::builtin_registry();
  ParameterStore store(reference_backend());
  const ParamScope layer(store, 1, "layers.0");
  auto block = loaded.create<Block>("pre_norm");
  auto ffn = loaded.create<FeedForward>("gelu");
  auto pe = loaded.create<PositionalEncoding>("learned", {{"max_len", "4"}});
  block->build(layer, small_dims(), {kFfn});
  ffn->build(layer.child("ffn"), small_dims());
  pe->build(ParamScope(store, 1, "positions"), small_dims());
  EXPECT_TRUE(store.contains("layers.0.ffn.in.weight"));
  Graph g(reference_backend(), 1, 0, false, false);
  const Var x = pe->forward(g, g.constant(values({2, 3, 6})), 0);
  const Var y =
      block->forward(g, x, SublayerFunctions({kFfn}, every_role([&](Graph& gg, const Var& h) { return ffn->forward(gg, h); })));
  EXPECT_EQ(y.shape(), Shape({2, 3, 6}));
  EXPECT_NO_THROW(loaded.create<PositionalEncoding>("sinusoidal"));
  EXPECT_NO_THROW(loaded.create<FeedForward>("relu"));
  EXPECT_NO_THROW(loaded.create<Block>("post_norm"));
}

std::string plugins_listing(const std::string& kind) {
  std::ostringstream out, err;
  EXPECT_EQ(cli::run({"plugins", "--kind", kind}, out, err), cli::kExitOk) << err.str();
  return out.str();
}

TEST(ComponentPlugins, AblatePluginsPrintsTheirOptions) {
  const std::string ffn = plugins_listing("ffn");
  for (const char* s : {"ffn/relu", "ffn/gelu", "approximation  string {erf|tanh}, default erf: GELU form", "ffn/swiglu",
                        "ffn/geglu", "ffn/relu_squared", "hidden  int, default 0"})
    EXPECT_NE(ffn.find(s), std::string::npos) << s << "\n" << ffn;
  EXPECT_EQ(ffn.find("block/"), std::string::npos);
  const std::string pe = plugins_listing("positional_encoding");
  for (const char* s : {"positional_encoding/sinusoidal", "base  float, default 10000", "positional_encoding/none",
                        "positional_encoding/learned", "max_len  int, default 512"})
    EXPECT_NE(pe.find(s), std::string::npos) << s << "\n" << pe;
  const std::string block = plugins_listing("block");
  for (const char* s : {"block/post_norm", "block/pre_norm", "block/sandwich_norm", "block/parallel", "block/rezero",
                        "norm  string {layer_norm|rms_norm|scale_norm}, default layer_norm", "shared_norm  bool, default true"})
    EXPECT_NE(block.find(s), std::string::npos) << s << "\n" << block;
}

}  // namespace
}  // namespace ablate
