// backend_parity_tests: every op case of the harness (op_cases.hpp) run on every backend plugin
// found in the built-in plugin directory, compared with the reference backend: F32 tightly, BF16
// loosely. With no backend but the reference, the parity tests skip and say why.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "backends/op_cases.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::testing {
namespace {

PluginRegistry& registry() { return builtin_registry(); }
Backend& backend(const std::string& name) { return *builtin_backend(name); }
const std::vector<OpCase>& cases() { return shared_op_cases(); }

struct ParityParam {
  std::string backend;  // empty: no backend to compare
  int case_index = -1;  // -1: the backend cannot run here (the test says why)
  DType dtype = DType::F32;
};

// gtest prints parameters in test listings: keep it readable.
void PrintTo(const ParityParam& p, std::ostream* os) {
  if (p.backend.empty()) {
    *os << "no backend besides reference";
    return;
  }
  if (p.case_index < 0) {
    *os << p.backend << " (unavailable here)";
    return;
  }
  *os << p.backend << " " << cases()[static_cast<std::size_t>(p.case_index)].id() << " " << dtype_name(p.dtype);
}

std::vector<ParityParam> parity_params() {
  std::vector<ParityParam> out;
  for (const PluginDescriptor* d : registry().list(Backend::kKind)) {
    if (d->name == "reference") continue;
    if (!backend_unavailable(d->name).empty()) {  // one skipped test, not one per case
      out.push_back({d->name, -1, DType::F32});
      continue;
    }
    for (std::size_t i = 0; i < cases().size(); ++i) {
      out.push_back({d->name, static_cast<int>(i), DType::F32});
      if (cases()[i].bf16) out.push_back({d->name, static_cast<int>(i), DType::BF16});
    }
  }
  if (out.empty()) out.push_back({});
  return out;
}

std::string param_name(const ::testing::TestParamInfo<ParityParam>& info) {
  const ParityParam& p = info.param;
  if (p.backend.empty()) return "no_backend_besides_reference";
  if (p.case_index < 0) return p.backend + "_unavailable_here";
  const OpCase& c = cases()[static_cast<std::size_t>(p.case_index)];
  return p.backend + "_" + c.op + "_" + c.name + "_" + dtype_name(p.dtype);
}

TEST(BackendParityHarness, PluginsLoadAndReferenceIsPresent) {
  for (const PluginProblem& p : registry().problems()) ADD_FAILURE() << p.path << ": " << p.message;
  ASSERT_NO_THROW(registry().find(Backend::kKind, "reference"));
  EXPECT_TRUE(backend("reference").caps().deterministic);
}

class BackendParity : public ::testing::TestWithParam<ParityParam> {};

TEST_P(BackendParity, MatchesReference) {
  const ParityParam& p = GetParam();
  if (p.backend.empty())
    GTEST_SKIP() << "no backend plugin other than 'reference' in " << builtin_plugin_dir()
                 << ": nothing to compare against the reference (build with -DABLATE_WITH_ONEDNN=ON, or add a backend)";
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(p.backend);
  Backend& other = backend(p.backend);
  if (p.dtype == DType::BF16 && !other.caps().bf16) GTEST_SKIP() << "backend '" << p.backend << "' reports caps().bf16 == false";
  const OpCase& c = cases()[static_cast<std::size_t>(p.case_index)];
  if (const std::string missing = missing_optional_op(other, c); !missing.empty())
    GTEST_SKIP() << "backend '" << p.backend << "' has no " << missing << " (supports)";
  const OpResult expected = run_case(backend("reference"), c, p.dtype);
  OpResult actual;
  try {
    actual = run_case(other, c, p.dtype);
  } catch (const std::exception& e) {
    FAIL() << p.backend << " threw on " << c.id() << " (" << dtype_name(p.dtype) << "): " << e.what();
  }
  const CompareResult r = compare_results(c, p.dtype, expected, actual);
  EXPECT_TRUE(r.ok) << p.backend << " differs from reference on " << c.id() << " (" << dtype_name(p.dtype) << "):\n" << r.report;
}

INSTANTIATE_TEST_SUITE_P(AllOps, BackendParity, ::testing::ValuesIn(parity_params()), param_name);

}  // namespace
}  // namespace ablate::testing
