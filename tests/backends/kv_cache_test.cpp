// Backend::write_time_slice (the KV cache of incremental decoding) on every backend plugin
// found: src[B, H, T, Dh] lands bit-exactly at rows offset .. offset+T-1 of every (b, h) of
// dst[B, H, S, Dh], other rows untouched, below and above the threading grain; bad arguments
// throw an ablate::Error naming the op and the offending tensor, leaving dst as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::testing {
namespace {

class KvCache : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam()); }
  Backend& be() { return *builtin_backend(GetParam()); }
  // Values uploaded as `dtype` (BF16 by casting an F32 upload: the values are bf16-exact).
  Tensor upload(const Shape& shape, DType dtype, const std::vector<float>& v) {
    Tensor f = f32_tensor(be(), shape, v);
    if (dtype == DType::F32) return f;
    Tensor t = be().empty(shape, dtype);
    be().cast(t, f);
    return t;
  }
};

TEST_P(KvCache, WriteTimeSliceFillsOnlyItsRows) {
  const float sentinel = -7.5f;
  struct Case {
    std::int64_t B, H, S, Dh;
    std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // (T, offset)
    std::vector<std::int64_t> unwritten;                       // rows no step writes
  };
  for (const Case& c : {Case{2, 3, 6, 4, {{2, 1}, {1, 5}, {1, 0}}, {3, 4}},
                        Case{4, 4, 80, 32, {{64, 8}, {1, 79}}, {0, 7, 72, 78}}}) {  // 64 rows: above the grain
    for (const DType dt : {DType::F32, DType::BF16}) {
      const std::int64_t B = c.B, H = c.H, S = c.S, Dh = c.Dh;
      Tensor cache = be().empty({B, H, S, Dh}, dt);
      be().fill(cache, sentinel);
      std::vector<float> expect(static_cast<std::size_t>(B * H * S * Dh), sentinel);
      float phase = 0.3f;
      for (const auto& [T, offset] : c.steps) {
        phase += 1.1f;
        std::vector<float> v(static_cast<std::size_t>(B * H * T * Dh));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = round_to_bf16(2.0f * std::sin(0.37f * static_cast<float>(i) + phase));
        Tensor src = upload({B, H, T, Dh}, dt, v);
        be().write_time_slice(cache, src, offset);
        for (std::int64_t bh = 0; bh < B * H; ++bh)
          for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t e = 0; e < Dh; ++e)
              expect[static_cast<std::size_t>((bh * S + offset + t) * Dh + e)] =
                  v[static_cast<std::size_t>((bh * T + t) * Dh + e)];
        const std::vector<float> got = host(be(), cache);
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], expect[i]) << dtype_name(dt) << " S " << S << " element " << i << " after T = " << T << " at offset "
                                       << offset;
        EXPECT_EQ(host(be(), src), v) << "src must be unchanged";
      }
      const std::vector<float> got = host(be(), cache);
      for (std::int64_t bh = 0; bh < B * H; ++bh)
        for (const std::int64_t row : c.unwritten)
          for (std::int64_t e = 0; e < Dh; ++e) ASSERT_EQ(got[static_cast<std::size_t>((bh * S + row) * Dh + e)], sentinel);
    }
  }
}

TEST_P(KvCache, WriteTimeSliceRejectsBadArgumentsNamingTheOp) {
  Backend& b = be();
  Tensor cache = f32_tensor(b, {2, 3, 6, 4}, std::vector<float>(2 * 3 * 6 * 4, 1.0f));
  Tensor step = f32_tensor(b, {2, 3, 1, 4}, std::vector<float>(2 * 3 * 4, 2.0f)),
         two = f32_tensor(b, {2, 3, 2, 4}, std::vector<float>(2 * 3 * 2 * 4, 2.0f));
  Tensor other_b = b.empty({1, 3, 1, 4}, DType::F32), other_h = b.empty({2, 2, 1, 4}, DType::F32),
         other_dh = b.empty({2, 3, 1, 5}, DType::F32), bf16_step = b.empty({2, 3, 1, 4}, DType::BF16),
         rank3 = b.empty({6, 1, 4}, DType::F32), cache3 = b.empty({6, 6, 4}, DType::F32), ids = b.empty({2, 3, 1, 4}, DType::I32);
  struct Bad {
    const char* why;
    Tensor* dst;
    const Tensor* src;
    std::int64_t offset;
    const Tensor* named;  // the tensor the message must show
  };
  for (const Bad& bad : {Bad{"offset + T > S", &cache, &two, 5, &two}, Bad{"offset = S", &cache, &step, 6, &cache},
                         Bad{"negative offset", &cache, &step, -1, &step}, Bad{"B differs", &cache, &other_b, 0, &other_b},
                         Bad{"H differs", &cache, &other_h, 0, &other_h}, Bad{"Dh differs", &cache, &other_dh, 0, &other_dh},
                         Bad{"dtype differs", &cache, &bf16_step, 0, &bf16_step}, Bad{"src rank 3", &cache, &rank3, 0, &rank3},
                         Bad{"dst rank 3", &cache3, &step, 0, &cache3}, Bad{"i32 src", &cache, &ids, 0, &ids}}) {
    try {
      b.write_time_slice(*bad.dst, *bad.src, bad.offset);
      ADD_FAILURE() << "no error for " << bad.why;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("write_time_slice"), std::string::npos) << bad.why << ": " << m;
      EXPECT_NE(m.find(bad.named->str()), std::string::npos) << bad.why << ": " << m;
    }
  }
  EXPECT_EQ(host(b, cache), std::vector<float>(2 * 3 * 6 * 4, 1.0f)) << "a rejected write must not touch dst";
  EXPECT_NO_THROW(b.write_time_slice(cache, two, 4));  // ends exactly at S
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, KvCache, ::testing::ValuesIn(builtin_backend_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace ablate::testing
