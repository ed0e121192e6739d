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

// Every field of `caps`: max_positions and biases_logits as given, the others false.
void expect_capabilities(const PositionCapabilities& caps, std::int64_t max_positions, bool biases_logits) {
  EXPECT_EQ(caps.max_positions, max_positions);
  EXPECT_EQ(caps.biases_logits, biases_logits);
  EXPECT_FALSE(caps.rotates);
  EXPECT_FALSE(caps.bias_per_layer);
  EXPECT_FALSE(caps.in_cross_attention);
}

TEST(PositionCapabilities, AnEncodingThatSaysNothingHasTheDefaults) {
  expect_capabilities(capabilities_of(SaysNothing{}), 0, false);
}

TEST(PositionCapabilities, AnEncodingSetsOnlyWhatItNeedsAndTheRestKeepTheirDefaults) {
  expect_capabilities(capabilities_of(SetsALimitAndABias{}), 5, true);
}

}  // namespace
}  // namespace ablate
