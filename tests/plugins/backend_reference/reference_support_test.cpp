// Tests of what the reference backend stands on: Philox4x32-10 against the Random123
// known-answer vectors, bf16 conversion (round to nearest even, NaN preserved, round trip, and
// the cast op agreeing with it), and the caching host allocator reusing blocks once warm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "ablate/bf16.hpp"
#include "ablate/philox.hpp"
#include "backend_reference/reference_backend.hpp"
#include "reference_test_util.hpp"

namespace ablate::testing {
namespace {

// ---------------------------------------------------------------------------- Philox

TEST(Philox, MatchesRandom123KnownAnswers) {
  const Philox4 zero = philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  const std::uint32_t f = 0xffffffffu;
  const Philox4 ones = philox4x32_10(f, f, f, f, f, f);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
}

TEST(Philox, UniformsAreInUnitIntervalAndWellSpread) {
  const RngKey key{123, 4, 5};
  double sum = 0;
  const int blocks = 5000;
  for (int b = 0; b < blocks; ++b) {
    float u[4];
    philox_uniform4(key, static_cast<std::uint64_t>(b), u);
    for (const float x : u) {
      ASSERT_GE(x, 0.0f);
      ASSERT_LT(x, 1.0f);
      sum += x;
    }
  }
  EXPECT_NEAR(sum / (4.0 * blocks), 0.5, 0.01);
}

// ---------------------------------------------------------------------------- bf16

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // exactly halfway, even stays
  EXPECT_EQ(float_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // exactly halfway, odd rounds up
  EXPECT_EQ(float_to_bf16(from_bits(0x3f808001u)), 0x3f81);  // above halfway
  EXPECT_EQ(float_to_bf16(from_bits(0x3f807fffu)), 0x3f80);  // below halfway
  EXPECT_EQ(float_to_bf16(-1.0f), 0xbf80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  for (const std::uint32_t payload : {0x7f800001u, 0x7f800100u, 0xff800001u, 0x7fffffffu})  // incl. low-bit payloads
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(from_bits(payload))))) << std::hex << payload;
}

TEST(Bf16, EveryBf16ValueRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = bf16_to_float(h);
    EXPECT_EQ(bits(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f), h) << std::hex << b;
    }
  }
}

TEST(Bf16, CastOpMatchesTheHostConversion) {
  Backend& be = *reference_backend();
  std::vector<float> v = {1.0f, from_bits(0x3f808000u), from_bits(0x3f818000u), -3.14159f, 65504.0f, 1e-30f, -0.0f};
  Tensor x = f32_tensor(be, Shape{7}, v), y = be.empty(Shape{7}, DType::BF16), back = be.empty(Shape{7}, DType::F32);
  be.cast(y, x);
  be.cast(back, y);
  std::vector<std::uint16_t> raw(7);
  be.copy_to_host(raw.data(), y);
  const std::vector<float> bv = host(be, back);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(raw[i], float_to_bf16(v[i])) << i;
    EXPECT_EQ(bits(bv[i]), bits(round_to_bf16(v[i]))) << i;
  }
}

// ---------------------------------------------------------------------------- allocator

TEST(HostAllocator, ReusesBlocksOnceWarm) {
  auto be = std::make_shared<backend_reference::ReferenceBackend>();
  auto step = [&] {  // a "training step": the same shapes every time, released at the end
    std::vector<Tensor> ts;
    for (const Shape& s : {Shape{3, 33}, Shape{65, 7}, Shape{1}, Shape{2, 3, 65}, Shape{3, 33}})
      ts.push_back(be->empty(s, DType::F32));
    ts.push_back(be->empty(Shape{3, 33}, DType::BF16));
    Tensor y = be->empty(Shape{3, 33}, DType::F32);
    be->activation_forward(y, ts[0], Activation::ReLU);
  };
  step();
  const HostAllocator::Stats warm = be->allocator().stats();
  EXPECT_GT(warm.system_allocations, 0u);
  EXPECT_EQ(warm.bytes_in_use, 0u);
  for (int i = 0; i < 5; ++i) step();
  const HostAllocator::Stats after = be->allocator().stats();
  EXPECT_EQ(after.system_allocations, warm.system_allocations) << "allocations after warm-up";
  EXPECT_GT(after.reuses, warm.reuses);
  EXPECT_EQ(after.bytes_in_use, 0u);
}

TEST(HostAllocator, StorageKeepsTheBackendAlive) {
  Tensor t;
  std::weak_ptr<backend_reference::ReferenceBackend> weak;
  {
    auto be = std::make_shared<backend_reference::ReferenceBackend>();
    weak = be;
    t = be->empty(Shape{4}, DType::F32);
    be->fill(t, 2.5f);
  }
  EXPECT_FALSE(weak.expired()) << "a live tensor must keep its backend alive";
  EXPECT_EQ(t.data<float>()[3], 2.5f);
  t = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(ReferenceBackend, FreshTensorsArePoisonedSoUnwrittenOutputsShow) {
  Backend& be = *reference_backend();
  Tensor t = be.empty(Shape{3}, DType::F32);
  for (const float x : host(be, t)) EXPECT_TRUE(std::isnan(x));
}

}  // namespace
}  // namespace ablate::testing
