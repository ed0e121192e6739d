// Tests for the plugin test kit (framework/core/testing_kit.cpp, ablate/testing/kit.hpp): backends and
// components by name with their declared defaults, errors that name what is available, and the
// cache-equivalence check passing the built-in positions with attention/mha and rejecting broken ones.
#include "ablate/testing/kit.hpp"

#include <gtest/gtest.h>

#include "ablate/ops.hpp"
#include "ablate/schedule.hpp"
#include "ablate/task.hpp"
#include "fixture_echo.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate {
namespace {

using testing::cache_equivalence;
using testing::make_backend;
using testing::make_component;

// The message of the ablate::Error `f` throws, without its hint: what() is all a failing test shows,
// so the kit puts the hint (what is available) there too.
std::string message_of(const std::function<void()>& f) {
  const std::string what_and_hint = testing::error_of(f);  // "what | hint"
  return what_and_hint.substr(0, what_and_hint.rfind(" | "));
}

ModelDims small_dims(std::int64_t heads = 2) {
  ModelDims d;
  d.d_model = 8;
  d.heads = heads;
  d.d_ff = 12;
  d.dropout = 0.0f;
  return d;
}

TEST(TestingKit, UnknownPluginsAndOptionsAreErrorsNamingWhatIsAvailable) {
  std::string e = message_of([] { make_backend("refrence"); });
  EXPECT_NE(e.find("unknown backend plugin 'refrence'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'reference'"), std::string::npos) << e;
  e = message_of([] { make_backend("reference", {{"optional_op", "none"}}); });
  EXPECT_NE(e.find("no option 'optional_op'"), std::string::npos) << e;
  EXPECT_NE(e.find("its options are: optional_ops"), std::string::npos) << e;
  e = message_of([] { make_component<FeedForward>("reglu_nope"); });
  EXPECT_NE(e.find("unknown ffn plugin 'reglu_nope'"), std::string::npos) << e;
  for (const char* name : {"relu", "gelu", "swiglu", "geglu"}) EXPECT_NE(e.find(name), std::string::npos) << e;
  e = message_of([] { make_component<Attention>("mha", {{"kv_heads", "many"}}); });
  EXPECT_NE(e.find("kv_heads"), std::string::npos) << e;
  e = message_of([] { testing::load_plugins("/nonexistent/plugins"); });
  EXPECT_NE(e.find("/nonexistent/plugins"), std::string::npos) << e;
}

TEST(TestingKit, ComponentsGetTheirDeclaredDefaultsAndOverrides) {
  auto be = make_backend("reference");
  ParameterStore store(*be);
  const ModelDims dims = small_dims();
  make_component<FeedForward>("swiglu")->build(ParamScope(store, 1, "ffn"), dims);  // hidden 0: floor(2 * 12 / 3)
  EXPECT_EQ(store.get("ffn.gate.weight").value.shape(), Shape({8, 8}));
  EXPECT_TRUE(store.contains("ffn.out.bias"));                                                      // bias: true
  make_component<Attention>("mha")->build(ParamScope(store, 1, "mha"), dims, AttentionRole::Self);  // kv_heads 0: all
  EXPECT_EQ(store.get("mha.qkv.weight").value.shape(), Shape({3 * 8, 8}));
  make_component<Attention>("mha", {{"kv_heads", "1"}})->build(ParamScope(store, 1, "mqa"), dims, AttentionRole::Self);
  EXPECT_EQ(store.get("mqa.qkv.weight").value.shape(), Shape({8 + 2 * 4, 8}));  // D + 2 Dh
  auto noam = make_component<Schedule>("noam");                                 // warmup 4000: the peak is at step 4000
  EXPECT_GT(noam->learning_rate(4000), noam->learning_rate(3999));
  EXPECT_GT(noam->learning_rate(4000), noam->learning_rate(4001));
  EXPECT_NE(make_backend("reference"), make_backend("reference"));  // a new instance each time
}

TEST(TestingKit, LoadPluginsAddsADirectoryOnceAndChecksWhatItLoads) {
  EXPECT_NE(message_of([] { make_component<Task>("fixture_copy"); }).find("unknown task plugin"), std::string::npos);
  testing::load_plugins(ABLATE_SPEC_FIXTURE_DIR);
  testing::load_plugins(ABLATE_SPEC_FIXTURE_DIR);  // the same file again: skipped, not a duplicate
  const std::string required = message_of([] { make_component<Task>("fixture_copy"); });
  EXPECT_NE(required.find("required option 'vocab_size' is not set"), std::string::npos) << required;
  EXPECT_NE(testing::make_component("task", "fixture_copy", {{"vocab_size", "8"}}), nullptr);
  const std::string stand_in = message_of([] { make_component<Task>("fixture_copy", {{"vocab_size", "8"}}); });
  EXPECT_NE(stand_in.find("does not implement the 'task' interface"), std::string::npos) << stand_in;  // a bare Component
  const std::string e = message_of([] { testing::load_plugins(testing::fixture("not_a_plugin")); });
  EXPECT_NE(e.find("not_a_plugin.so"), std::string::npos) << e;
}

TEST(TestingKit, AComponentBeingMadeCanCallTheKit) {
  testing::load_plugins(testing::fixture_dir("fixture_nested"));
  EXPECT_EQ(make_component<testing::FixtureEcho>("nested")->echo(), "made a reference backend");
}

// The built-in positions with attention/mha (multi-head, multi-query, qk_norm + softcap): a cached
// decode equals a full pass.
TEST(TestingKit, CacheEquivalenceHoldsForTheBuiltInPositions) {
  auto be = make_backend("reference");
  for (const testing::OptionOverrides& mha :
       {testing::OptionOverrides{{"kv_heads", "0"}}, testing::OptionOverrides{{"kv_heads", "1"}},
        testing::OptionOverrides{{"qk_norm", "rms_norm"}, {"logit_softcap", "3"}}})
    for (const char* pe : {"", "sinusoidal", "rotary", "alibi", "t5_relative_bias"}) {
      SCOPED_TRACE("mha " + mha.begin()->first + " " + mha.begin()->second + ", positions " + pe);
      auto attention = make_component<Attention>("mha", mha);
      auto positions = *pe ? make_component<PositionalEncoding>(pe) : nullptr;
      const testing::CacheCheckResult r = cache_equivalence(*be, *attention, positions.get(), small_dims());
      EXPECT_TRUE(r.ok) << r.report;
      EXPECT_EQ(r.checked, 2 * 7 * 8);
      EXPECT_LT(r.max_abs_error, 1e-5) << r.report;
    }
}

// Rotary positions that rotate every call from 0: right in one full pass, wrong once cached.
class RotaryFromZero final : public PositionalEncoding {
 public:
  void build(const ParamScope&, const ModelDims&) override {}
  Var forward(Graph&, const Var& x, std::int64_t) const override { return x; }
  void capabilities(PositionCapabilities& caps) const override { caps.rotates = true; }
  // x: [B, H, T, Dh] -> rotated at 0 .. T-1 whatever `positions` says
  Var rotate(Graph& g, const Var& x, const Tensor& positions) const override {
    return ops::rope(g, x, ignore_absolute_ ? EncodingPositions::range(g.backend(), 0, x.shape()[2]) : positions);
  }
  bool ignore_absolute_ = true;
};

// A distance bias -|i - j| / 2 that forgets the query offset: i counts from 0 in every call.
class BiasWithoutOffset final : public PositionalEncoding {
 public:
  void build(const ParamScope&, const ModelDims&) override {}
  Var forward(Graph&, const Var& x, std::int64_t) const override { return x; }
  void capabilities(PositionCapabilities& caps) const override { caps.biases_logits = true; }
  // bias: [1, T, S]
  LogitBias logit_bias(Graph& g, std::int64_t T, std::int64_t S, std::int64_t offset, std::int64_t) const override {
    std::vector<float> b(static_cast<std::size_t>(T * S));
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t j = 0; j < S; ++j)
        b[static_cast<std::size_t>(i * S + j)] = -0.5f * static_cast<float>(std::abs(i + (use_offset_ ? offset : 0) - j));
    Tensor t = g.backend().empty({1, T, S}, DType::F32);
    g.backend().copy_from_host(t, b.data());
    return {g.constant(t), Tensor()};
  }
  bool use_offset_ = false;
};

TEST(TestingKit, CacheEquivalenceRejectsPositionsThatIgnoreTheOffset) {
  auto be = make_backend("reference");
  RotaryFromZero rotary;
  testing::CacheCheckResult r = cache_equivalence(*be, *make_component<Attention>("mha"), &rotary, small_dims());
  EXPECT_FALSE(r.ok) << r.report;
  EXPECT_GT(r.max_abs_error, 1e-3);
  EXPECT_NE(r.report.find("position 3 (step 1): max |full - cached|"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("MISMATCH"), std::string::npos) << r.report;
  rotary.ignore_absolute_ = false;  // the same encoding, mended: accepted
  r = cache_equivalence(*be, *make_component<Attention>("mha"), &rotary, small_dims());
  EXPECT_TRUE(r.ok) << r.report;

  BiasWithoutOffset bias;
  r = cache_equivalence(*be, *make_component<Attention>("mha", {{"kv_heads", "1"}}), &bias, small_dims());
  EXPECT_FALSE(r.ok) << r.report;
  EXPECT_NE(r.report.find("FAILED"), std::string::npos) << r.report;
  bias.use_offset_ = true;
  r = cache_equivalence(*be, *make_component<Attention>("mha", {{"kv_heads", "1"}}), &bias, small_dims());
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(TestingKit, CacheEquivalenceRefusesAPromptOutsideTheSequence) {
  auto be = make_backend("reference");
  testing::CacheCheckOptions o;
  o.prompt = 8;  // length 7
  const std::string e = message_of([&] { cache_equivalence(*be, *make_component<Attention>("mha"), nullptr, small_dims(), o); });
  EXPECT_NE(e.find("prompt 8"), std::string::npos) << e;
}

}  // namespace
}  // namespace ablate
