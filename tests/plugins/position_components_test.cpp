// The positional-encoding plugins that add to the embeddings (none, sinusoidal, learned): the
// paper's formula, offsets, limits with a hint, bf16 inputs, and gradients by finite differences.
#include "plugins/components_test_util.hpp"

namespace ablate {
namespace {
using namespace component_test;  // NOLINT(google-build-using-namespace): the shared helpers
using component_test::Options;   // over ablate::Options

std::vector<float> encode(PositionalEncoding& pe, const Tensor& x, std::int64_t offset) {
  Graph g(reference_backend(), 1, 0, /*training=*/false, /*grad=*/false);
  return host(reference_backend(), pe.forward(g, g.constant(x), offset).value());
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

}  // namespace
}  // namespace ablate
