// The component interfaces' own rules (ablate/components.hpp), apart from any plugin: what a
// positional encoding's capabilities are when it says nothing, and that one sets only what it needs.
#include "ablate/components.hpp"

#include <gtest/gtest.h>

namespace ablate {
namespace {

class SaysNothing : public PositionalEncoding {
 public:
  void build(const ParamScope&, const ModelDims&) override {}
  Var forward(Graph&, const Var& x, std::int64_t) const override { return x; }
};

class SetsALimitAndABias final : public SaysNothing {
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

TEST(PositionCapabilities, AnEncodingSetsOnlyWhatItNeedsAndTheRestKeepTheirDefaults) {
  const PositionCapabilities caps = capabilities_of(SetsALimitAndABias{});
  EXPECT_EQ(caps.max_positions, 5);
  EXPECT_TRUE(caps.biases_logits);
  EXPECT_FALSE(caps.rotates);
  EXPECT_FALSE(caps.bias_per_layer);
  EXPECT_FALSE(caps.in_cross_attention);
}

}  // namespace
}  // namespace ablate
