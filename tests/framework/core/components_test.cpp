// The component interfaces' own rules (ablate/components.hpp), apart from any plugin: what a
// positional encoding's capabilities are when it says nothing, and that plugin API 8's hooks
// still serve for the one version they are kept.
#include "ablate/components.hpp"

#include <gtest/gtest.h>

namespace ablate {
namespace {

class SaysNothing : public PositionalEncoding {
 public:
  void build(const ParamScope&, const ModelDims&) override {}
  Var forward(Graph&, const Var& x, std::int64_t) const override { return x; }
};

// Written for plugin API 8: the five hooks capabilities() replaced.
class WrittenForApi8 final : public SaysNothing {
 public:
  std::int64_t max_positions() const override { return 7; }
  bool rotates() const override { return true; }
  bool in_cross_attention() const override { return true; }
  bool biases_logits() const override { return true; }
  bool bias_per_layer() const override { return true; }
};

class WrittenForApi9 final : public SaysNothing {
 public:
  void capabilities(PositionCapabilities& caps) const override {
    caps.max_positions = 5;
    caps.biases_logits = true;
  }
};

TEST(PositionCapabilities, AnEncodingThatSaysNothingHasTheDefaults) {
  const PositionCapabilities caps = capabilities_of(SaysNothing{});
  EXPECT_EQ(caps.max_positions, 0);
  EXPECT_FALSE(caps.rotates);
  EXPECT_FALSE(caps.biases_logits);
  EXPECT_FALSE(caps.bias_per_layer);
  EXPECT_FALSE(caps.in_cross_attention);
}

TEST(PositionCapabilities, TheApi8HooksServeForOneMoreVersion) {
  const PositionCapabilities caps = capabilities_of(WrittenForApi8{});
  EXPECT_EQ(caps.max_positions, 7);
  EXPECT_TRUE(caps.rotates);
  EXPECT_TRUE(caps.biases_logits);
  EXPECT_TRUE(caps.bias_per_layer);
  EXPECT_TRUE(caps.in_cross_attention);
}

TEST(PositionCapabilities, AnEncodingSetsOnlyWhatItNeedsAndTheRestKeepTheirDefaults) {
  const PositionCapabilities caps = capabilities_of(WrittenForApi9{});
  EXPECT_EQ(caps.max_positions, 5);
  EXPECT_TRUE(caps.biases_logits);
  EXPECT_FALSE(caps.rotates);
  EXPECT_FALSE(caps.bias_per_layer);
  EXPECT_FALSE(caps.in_cross_attention);
}

}  // namespace
}  // namespace ablate
