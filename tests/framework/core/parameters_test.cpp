// Tests for the parameter store: names, deterministic initialisation keyed by (seed, name),
// init distributions, mixed-precision compute copies, and gradient norm.
#include "ablate/parameters.hpp"

#include <cmath>
#include <numeric>

#include "ablate/bf16.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::reference_backend;
using testing::host;

TEST(ParameterStore, NamesAreUniqueAndKeptInCreationOrder) {
  ParameterStore store(reference_backend());
  store.add("encoder.layers.0.attn.q.weight", {4, 4}, Init::xavier_uniform(), 1);
  store.add("encoder.layers.0.attn.q.bias", {4}, Init::zeros(), 1);
  EXPECT_THROW(store.add("encoder.layers.0.attn.q.bias", {4}, Init::zeros(), 1), Error);
  EXPECT_THROW(store.get("encoder.layers.1.attn.q.bias"), Error);
  ASSERT_EQ(store.all().size(), 2u);
  EXPECT_EQ(store.all()[0]->name, "encoder.layers.0.attn.q.weight");
  EXPECT_EQ(store.numel(), 20);
}

TEST(ParameterStore, InitialisationDependsOnSeedAndNameOnly) {
  const auto a = init_values(Init::normal(0.02f), {64}, 5, "embed.weight");
  EXPECT_EQ(a, init_values(Init::normal(0.02f), {64}, 5, "embed.weight"));
  EXPECT_NE(a, init_values(Init::normal(0.02f), {64}, 6, "embed.weight"));
  EXPECT_NE(a, init_values(Init::normal(0.02f), {64}, 5, "other.weight"));
  ParameterStore one(reference_backend()), two(reference_backend());
  one.add("first", {8}, Init::uniform(1.0f), 3);
  Parameter& p1 = one.add("second", {8}, Init::uniform(1.0f), 3);
  Parameter& p2 = two.add("second", {8}, Init::uniform(1.0f), 3);  // created first here
  EXPECT_EQ(host(reference_backend(), p1.value), host(reference_backend(), p2.value));
}

TEST(ParameterStore, InitDistributionsHaveTheirDocumentedRanges) {
  const auto xavier = init_values(Init::xavier_uniform(), {300, 200}, 1, "w");
  const double bound = std::sqrt(6.0 / 500.0);
  double lo = 0, hi = 0;
  for (float v : xavier) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  EXPECT_LE(hi, bound);
  EXPECT_GE(lo, -bound);
  EXPECT_GT(hi, 0.95 * bound);  // fills the range
  const auto normal = init_values(Init::normal(0.5f), {20000}, 1, "n");
  const double mean = std::accumulate(normal.begin(), normal.end(), 0.0) / normal.size();
  double var = 0;
  for (float v : normal) var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(var / normal.size()), 0.5, 0.02);
  EXPECT_EQ(init_values(Init::ones(), {3}, 1, "o"), std::vector<float>(3, 1.0f));
}

TEST(ParameterStore, MixedPrecisionKeepsABf16ComputeCopy) {
  Backend& be = reference_backend();
  ASSERT_TRUE(be.caps().bf16);
  ParameterStore store(be, DType::BF16);
  Parameter& p = store.add("w", {4}, Init::uniform(1.0f), 9);
  EXPECT_EQ(p.value.dtype(), DType::F32);
  EXPECT_EQ(p.grad.dtype(), DType::F32);
  EXPECT_EQ(p.compute.dtype(), DType::BF16);
  std::vector<std::uint16_t> low(4);
  be.copy_to_host(low.data(), p.compute);
  const auto master = host(be, p.value);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(low[i], float_to_bf16(master[i]));
}

}  // namespace
}  // namespace ablate
