// The optional ops (ablate::OptionalOp: rope, slice_last, compare, permute) on every backend plugin found: a backend
// that says it supports an op refuses bad arguments with an ablate::Error naming the op and the
// problem (the shape contracts of ablate/backend.hpp), and one that does not support it refuses
// every call instead of computing something. Values are covered by the parity and gradient cases.
#include <gtest/gtest.h>

#include "ablate/error.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::testing {
namespace {

class OptionalOps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam()); }
  Backend& be() { return *builtin_backend(GetParam()); }
};

// Runs `call`, which must throw an ablate::Error whose message holds `op` and `what`.
template <class F>
void expect_refused(F&& call, const std::string& op, const std::string& what, const std::string& why) {
  try {
    call();
    ADD_FAILURE() << "no error for " << why;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(op), std::string::npos) << why << ": " << m;
    EXPECT_NE(m.find(what), std::string::npos) << why << ": " << m;
  }
}

TEST_P(OptionalOps, RopeRefusesBadArgumentsNamingTheProblem) {
  Backend& b = be();
  Tensor x = f32_tensor(b, {1, 2, 3, 4}, std::vector<float>(24, 1.0f)), y = b.empty({1, 2, 3, 4}, DType::F32);
  Tensor pos = i32_tensor(b, {3}, {0, 1, 2}), short_pos = i32_tensor(b, {2}, {0, 1});
  Tensor rank3 = b.empty({2, 3, 4}, DType::F32), y3 = b.empty({2, 3, 4}, DType::F32);
  if (!b.supports(OptionalOp::rope)) {
    expect_refused([&] { b.rope_forward(y, x, pos, 4, 10000.0f); }, "rope_forward", "supports", "unsupported");
    return;
  }
  expect_refused([&] { b.rope_forward(y, x, pos, 3, 10000.0f); }, "rope_forward", "rotary 3 must be even", "odd rotary");
  expect_refused([&] { b.rope_forward(y, x, pos, 6, 10000.0f); }, "rope_forward", "(0, Dh = 4]", "rotary > Dh");
  expect_refused([&] { b.rope_forward(y, x, short_pos, 4, 10000.0f); }, "rope_forward", short_pos.str(), "positions != [T]");
  expect_refused([&] { b.rope_forward(y, x, pos, 4, 0.0f); }, "rope_forward", "base", "base 0");
  expect_refused([&] { b.rope_forward(y3, rank3, pos, 4, 10000.0f); }, "rope_forward", "[B, H, T, Dh]", "rank 3");
  expect_refused([&] { b.rope_backward(y, x, pos, 0, 10000.0f); }, "rope_backward", "rotary 0", "backward, rotary 0");
}

TEST_P(OptionalOps, SliceLastRefusesBadArgumentsNamingTheProblem) {
  Backend& b = be();
  Tensor x = f32_tensor(b, {2, 6}, std::vector<float>(12, 1.0f)), y = b.empty({2, 3}, DType::F32);
  Tensor other_rows = b.empty({3, 3}, DType::F32), bf16 = b.empty({2, 3}, DType::BF16), empty = b.empty({2, 0}, DType::F32);
  if (!b.supports(OptionalOp::slice_last)) {
    expect_refused([&] { b.slice_last_forward(y, x, 0); }, "slice_last_forward", "supports", "unsupported");
    return;
  }
  expect_refused([&] { b.slice_last_forward(y, x, 4); }, "slice_last_forward", "must lie in [0, 6]", "past the end");
  expect_refused([&] { b.slice_last_forward(y, x, -1); }, "slice_last_forward", "offset -1", "negative offset");
  expect_refused([&] { b.slice_last_forward(other_rows, x, 0); }, "slice_last_forward", "last dim only", "other rows");
  expect_refused([&] { b.slice_last_forward(bf16, x, 0); }, "slice_last_forward", "dtype", "other dtype");
  expect_refused([&] { b.slice_last_forward(empty, x, 0); }, "slice_last_forward", "part's > 0", "empty part");
  expect_refused([&] { b.slice_last_backward(x, y, 5); }, "slice_last_backward", "must lie in [0, 6]", "backward past the end");
  EXPECT_NO_THROW(b.slice_last_forward(y, x, 3));  // ends exactly at the last column
}

TEST_P(OptionalOps, CompareAndPermuteRefuseBadArgumentsNamingTheProblem) {
  Backend& b = be();
  Tensor a = f32_tensor(b, {2, 3}, std::vector<float>(6, 1.0f)), y = b.empty({2, 3}, DType::F32);
  Tensor rows = f32_tensor(b, {2}, {1.0f, 2.0f}), bf16 = b.empty({2, 3}, DType::BF16), yt = b.empty({3, 2}, DType::F32);
  Permutation swap;
  swap.rank = 2;
  swap.axes[0] = 1;
  swap.axes[1] = 0;
  Permutation twice = swap;
  twice.axes[1] = 1;
  if (!b.supports(OptionalOp::compare))
    expect_refused([&] { b.compare_forward(y, a, a, Compare::eq); }, "compare_forward", "supports", "unsupported");
  else {
    expect_refused([&] { b.compare_forward(y, a, rows, Compare::eq); }, "compare_forward", "trailing dims", "b [2] of a [2, 3]");
    expect_refused([&] { b.compare_forward(y, a, bf16, Compare::eq); }, "compare_forward", "one dtype", "b bf16");
    expect_refused([&] { b.compare_forward(yt, a, a, Compare::eq); }, "compare_forward", "a's shape", "y [3, 2]");
    expect_refused([&] { b.compare_forward(y, a, a, static_cast<Compare>(9)); }, "compare_forward", "none of eq", "comparison 9");
  }
  if (!b.supports(OptionalOp::permute)) {
    expect_refused([&] { b.permute_forward(yt, a, swap); }, "permute_forward", "supports", "unsupported");
    return;
  }
  expect_refused([&] { b.permute_forward(yt, a, twice); }, "permute_forward", "an order of 0 .. 1", "axis 1 twice");
  expect_refused([&] { b.permute_forward(y, a, swap); }, "permute_forward", "permuted", "y not transposed");
  expect_refused([&] { b.permute_backward(a, y, swap); }, "permute_backward", "permuted", "backward, dy not transposed");
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, OptionalOps, ::testing::ValuesIn(builtin_backend_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace ablate::testing
