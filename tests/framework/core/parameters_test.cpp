// Tests for the parameter store: names, deterministic initialisation keyed by (seed, name),
// init distributions, mixed-precision compute copies, and packing (one tensor per role).
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

TEST(ParameterStore, ScaleValueScalesTheElementsFromFirstOn) {
  ParameterStore store(reference_backend());
  Parameter& w = store.add("w", {3, 2}, Init::uniform(1.0f), 4);
  const std::vector<float> before = host(reference_backend(), w.value);
  store.scale_value(w, 0.5f, 4);  // the last row of [3, 2]
  const std::vector<float> after = host(reference_backend(), w.value);
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_FLOAT_EQ(after[i], i >= 4 ? 0.5f * before[i] : before[i]) << i;
  store.scale_value(w, 2.0f);
  EXPECT_FLOAT_EQ(host(reference_backend(), w.value)[0], 2.0f * before[0]);
  EXPECT_THROW(store.scale_value(w, 2.0f, 7), Error);
  EXPECT_THROW(store.scale_value(w, 2.0f, -1), Error);
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

// The parameters' own tensors after packing: views at 64-element offsets into one tensor per role.
void expect_views(const PackedParameters& all, ParameterStore& store) {
  std::int64_t offset = 0;
  for (Parameter* p : store.all()) {
    auto at = [&](const Tensor& flat) {
      return static_cast<char*>(flat.raw()) + offset * static_cast<std::int64_t>(dtype_size(flat.dtype()));
    };
    EXPECT_EQ(p->value.raw(), at(all.value)) << p->name;
    EXPECT_EQ(p->grad.raw(), at(all.grad)) << p->name;
    EXPECT_EQ(p->compute.raw(), at(all.compute)) << p->name;
    if (all.m.defined()) {
      EXPECT_EQ(p->m.raw(), at(all.m)) << p->name;
      EXPECT_EQ(p->v.raw(), at(all.v)) << p->name;
    }
    offset += (p->value.numel() + 63) / 64 * 64;
  }
  EXPECT_EQ(all.value.shape(), Shape{offset});
}

TEST(ParameterStore, PackingKeepsEveryValueAndGradientAndLeavesTheGapsZero) {
  Backend& be = reference_backend();
  ParameterStore store(be, DType::BF16);
  Parameter& a = store.add("a", {3}, Init::uniform(1.0f), 2);
  Parameter& b = store.add("b", {5, 7}, Init::uniform(1.0f), 2);
  Parameter& c = store.add("c", {64}, Init::uniform(1.0f), 2);
  std::vector<std::vector<float>> values, grads;
  for (Parameter* p : store.all()) {
    values.push_back(host(be, p->value));
    grads.push_back(testing::ramp(p->value.numel(), static_cast<float>(grads.size())));
    be.copy_from_host(p->grad, grads.back().data());  // a gradient accumulated before packing
  }
  const PackedParameters& all = store.packed();
  expect_views(all, store);
  EXPECT_FALSE(all.m.defined());
  EXPECT_FALSE(a.m.defined());
  EXPECT_EQ(all.compute.dtype(), DType::BF16);
  const std::vector<float> flat_value = host(be, all.value), flat_grad = host(be, all.grad);
  ASSERT_EQ(flat_value.size(), 192u);  // 3, 35 and 64 elements at offsets 0, 64 and 128
  for (std::size_t i = 0; i < 192; ++i) {
    const std::size_t param = i / 64, j = i % 64;
    const std::size_t size = values[param].size();
    EXPECT_EQ(flat_value[i], j < size ? values[param][j] : 0.0f) << i;
    EXPECT_EQ(flat_grad[i], j < size ? grads[param][j] : 0.0f) << i;
  }
  EXPECT_EQ(host(be, b.value), values[1]);
  EXPECT_EQ(host(be, c.grad), grads[2]);
  std::vector<std::uint16_t> low(35);
  be.copy_to_host(low.data(), b.compute);
  for (std::size_t i = 0; i < 35; ++i) EXPECT_EQ(low[i], float_to_bf16(values[1][i]));

  store.zero_grad();  // one fill: every parameter's gradient
  for (Parameter* p : store.all()) EXPECT_EQ(host(be, p->grad), std::vector<float>(p->value.numel(), 0.0f)) << p->name;
  EXPECT_EQ(&store.packed(), &all);
  EXPECT_EQ(store.packed().value.raw(), all.value.raw()) << "packing twice moves nothing";
}

TEST(ParameterStore, AddingAfterPackingPacksAgainAndKeepsEveryTensor) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& a = store.add("a", {3}, Init::uniform(1.0f), 4);
  const PackedParameters& first = store.packed(/*with_moments=*/true);
  const std::vector<float> moment = {0.25f, -0.5f, 1.0f};
  be.copy_from_host(a.m, moment.data());
  const std::vector<float> value = host(be, a.value);

  Parameter& b = store.add("b", {70}, Init::uniform(1.0f), 4);
  const std::vector<float> b_value = host(be, b.value);
  const PackedParameters& again = store.packed(/*with_moments=*/true);
  expect_views(again, store);
  EXPECT_EQ(again.value.shape(), Shape{64 + 128});
  EXPECT_EQ(host(be, a.value), value);
  EXPECT_EQ(host(be, a.m), moment);
  EXPECT_EQ(host(be, b.value), b_value);
  EXPECT_EQ(host(be, b.m), std::vector<float>(70, 0.0f)) << "a new parameter's moments start at zero";
  (void)first;

  // A tensor replaced since (as a checkpoint's moments are) is copied in and becomes a view again.
  b.v = be.empty({70}, DType::F32);
  be.copy_from_host(b.v, testing::ramp(70).data());
  a.m = Tensor();  // and one dropped is zero
  expect_views(store.packed(/*with_moments=*/true), store);
  EXPECT_EQ(host(be, b.v), testing::ramp(70));
  EXPECT_EQ(host(be, a.m), std::vector<float>(3, 0.0f));
  EXPECT_EQ(host(be, store.packed().v), [&] {
    std::vector<float> flat(192, 0.0f);
    const std::vector<float> r = testing::ramp(70);
    std::copy(r.begin(), r.end(), flat.begin() + 64);
    return flat;
  }());
}

}  // namespace
}  // namespace ablate
