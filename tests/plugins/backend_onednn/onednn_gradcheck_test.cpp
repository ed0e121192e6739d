// Finite-difference gradient checks of every differentiable op of backend/onednn: each harness
// case with a backward (tests/backends/op_cases), run in F32 through the shared checker. The
// parity tests compare against the reference; this checks the backward against calculus itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "backends/gradcheck_ops.hpp"
#include "backends/op_cases.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::testing {
namespace {

const std::vector<OpCase>& cases() { return shared_op_cases(); }
Backend& onednn() { return *builtin_backend("onednn", {{"threads", "2"}}); }

class OnednnGradCheck : public ::testing::TestWithParam<int> {};

TEST_P(OnednnGradCheck, BackwardMatchesFiniteDifferences) {
  const OpCase& c = cases()[static_cast<std::size_t>(GetParam())];
  const GradCheckResult r = check_gradients(onednn(), c);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

INSTANTIATE_TEST_SUITE_P(AllOps, OnednnGradCheck, ::testing::ValuesIn(gradcheck_case_indices()),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return cases()[static_cast<std::size_t>(info.param)].id();
                         });

}  // namespace
}  // namespace ablate::testing
