// Finite-difference gradient checks of every differentiable op of backend/onednn: each harness
// case with a backward (tests/backends/op_cases), run in F32 through the shared checker. The
// parity tests compare against the reference; this checks the backward against calculus itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "backends/gradcheck_ops.hpp"
#include "backends/op_cases.hpp"
#include "plugins/plugin_registry.hpp"

namespace ablate::testing {
namespace {

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> all = all_op_cases();
  return all;
}

std::vector<int> differentiable_cases() {
  std::vector<int> out;
  for (std::size_t i = 0; i < cases().size(); ++i)
    if (cases()[i].backward) out.push_back(static_cast<int>(i));
  return out;
}

Backend& onednn() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();  // never destroyed: tensors may outlive the tests
    r->scan({builtin_plugin_dir()});
    return r;
  }();
  static std::shared_ptr<Backend> be = registry->create<Backend>("onednn", {{"threads", "2"}});
  return *be;
}

class OnednnGradCheck : public ::testing::TestWithParam<int> {};

TEST_P(OnednnGradCheck, BackwardMatchesFiniteDifferences) {
  const OpCase& c = cases()[static_cast<std::size_t>(GetParam())];
  const GradCheckResult r = check_gradients(onednn(), c);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

INSTANTIATE_TEST_SUITE_P(AllOps, OnednnGradCheck, ::testing::ValuesIn(differentiable_cases()),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return cases()[static_cast<std::size_t>(info.param)].id();
                         });

}  // namespace
}  // namespace ablate::testing
