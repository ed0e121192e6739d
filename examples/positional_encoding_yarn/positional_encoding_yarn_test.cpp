// Tests of positional_encoding/yarn written only with Ablate's plugin test kit (ablate/testing/kit.hpp),
// against the built plugin: a cached decode equals a full pass; at scale 1 it is the built-in
// rotary; at scale 4 each pair turns at its frequency by parts (kept, blended or interpolated by
// 1/4, as its wavelengths per trained context say) and q, k are scaled by 0.1 ln 4 + 1.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ablate/testing/kit.hpp"

namespace {

using namespace ablate;
namespace kit = ablate::testing;  // (plain `testing` is GoogleTest's)

ModelDims dims(std::int64_t d_model = 8) {
  ModelDims d;
  d.d_model = d_model;
  d.heads = 2;
  d.dropout = 0.0f;
  d.context = 16;
  return d;
}

// pe's rotation of x [1, 1, 1, Dh] at `position`, built in a store of its own.
std::vector<float> turned(Backend& be, PositionalEncoding& pe, const ModelDims& d, const std::vector<float>& x,
                          std::int64_t position) {
  ParameterStore store(be);
  pe.build(ParamScope(store, 1, "pe"), d);
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  Tensor t = be.empty({1, 1, 1, static_cast<std::int64_t>(x.size())}, DType::F32);
  be.copy_from_host(t, x.data());
  const Var y = pe.rotate(g, g.constant(t), EncodingPositions::range(be, position, 1));
  std::vector<float> out(x.size());
  be.copy_to_host(out.data(), y.value());
  return out;
}

TEST(PositionalEncodingYarn, ACachedDecodeEqualsAFullPass) {
  auto be = kit::make_backend("reference");
  for (const char* scale : {"1", "4"}) {
    auto yarn = kit::make_component<PositionalEncoding>("yarn", {{"scale", scale}});
    auto mha = kit::make_component<Attention>("mha");
    const kit::CacheCheckResult r = kit::cache_equivalence(*be, *mha, yarn.get(), dims());
    EXPECT_TRUE(r.ok) << "scale " << scale << "\n" << r.report;
  }
}

TEST(PositionalEncodingYarn, AtScaleOneItIsRotary) {
  auto be = kit::make_backend("reference");
  auto yarn = kit::make_component<PositionalEncoding>("yarn");
  auto rotary = kit::make_component<PositionalEncoding>("rotary");
  const std::vector<float> x = {0.3f, -1.2f, 0.8f, 0.5f};
  for (const std::int64_t position : {0, 3, 40}) {
    const std::vector<float> a = turned(*be, *yarn, dims(), x, position), b = turned(*be, *rotary, dims(), x, position);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << position << " " << i;
  }
}

// Dh 16 (8 pairs), trained context 1024: wavelengths per context r_i = 1024 theta_i / (2 pi) are
// 163, 51.5 (kept: > 32), 16.3, 5.15, 1.63 (blended), 0.515, 0.163, 0.0515 (interpolated: < 1).
TEST(PositionalEncodingYarn, EachPairTurnsAtItsFrequencyByParts) {
  auto be = kit::make_backend("reference");
  auto yarn = kit::make_component<PositionalEncoding>("yarn", {{"scale", "4"}, {"context", "1024"}});
  const double temperature = 0.1 * std::log(4.0) + 1.0;
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    std::vector<float> e(16, 0.0f);
    e[static_cast<std::size_t>(i)] = 1.0f;  // pair (i, i + 8) starts at angle 0
    const std::vector<float> y = turned(*be, *yarn, dims(32), e, 1);
    const double angle = std::atan2(y[static_cast<std::size_t>(i + 8)], y[static_cast<std::size_t>(i)]);
    const double theta = std::pow(10000.0, -2.0 * i / 16.0), r = 1024.0 * theta / (2.0 * M_PI);
    EXPECT_NEAR(std::hypot(y[static_cast<std::size_t>(i)], y[static_cast<std::size_t>(i + 8)]), temperature, 1e-5);
    if (r > 32.0)
      EXPECT_NEAR(angle, theta, 1e-6 * theta) << "kept";
    else if (r < 1.0)
      EXPECT_NEAR(angle, theta / 4.0, 1e-6 * theta) << "interpolated";
    else {
      EXPECT_GT(angle, theta / 4.0 * (1.0 + 1e-6)) << "blended";
      EXPECT_LT(angle, theta * (1.0 - 1e-6)) << "blended";
    }
  }
}

TEST(PositionalEncodingYarn, BadOptionsAreRefused) {
  EXPECT_THROW(kit::make_component<PositionalEncoding>("yarn", {{"scale", "0.5"}}), Error);
  EXPECT_THROW(kit::make_component<PositionalEncoding>("yarn", {{"alpha", "40"}}), Error);
  auto be = kit::make_backend("reference");
  ModelDims no_context = dims();
  no_context.context = 0;
  auto yarn = kit::make_component<PositionalEncoding>("yarn");
  ParameterStore store(*be);
  EXPECT_THROW(yarn->build(ParamScope(store, 1, "pe"), no_context), Error) << "no trained length to scale from";
}

}  // namespace
