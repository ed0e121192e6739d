// The block plugins (post_norm, pre_norm, parallel, sandwich_norm, rezero) and their norms: one
// norm per sublayer under the scope, sublayers called once in order, what each normalises, and
// gradients by finite differences; one layer in bf16 against f32.
#include "plugins/components_test_util.hpp"

namespace ablate {
namespace {
using namespace component_test;  // NOLINT(google-build-using-namespace): the shared helpers
using component_test::Options;   // over ablate::Options

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

}  // namespace
}  // namespace ablate
