// The FFN plugins (ffn/relu, gelu, swiglu, geglu, relu_squared): parameters, forward against a
// host reference, dropout in training only, and gradients by finite differences.
#include "plugins/components_test_util.hpp"

namespace ablate {
namespace {
using namespace component_test;  // NOLINT(google-build-using-namespace): the shared helpers
using component_test::Options;   // over ablate::Options

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

}  // namespace
}  // namespace ablate
