// The op contract (ablate/backend_contract.hpp) on every backend: for every op case of the harness
// (op_cases.hpp), each output and each gradient buffer is given a wrong shape in turn; every mistake
// the reference refuses, every other backend must refuse with the same message, the contract's
// ("Backend::<op>: ..."), before it touches memory. Plus the contract's own rules, op by op.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "ablate/backend_contract.hpp"
#include "backends/backend_test_util.hpp"
#include "backends/op_cases.hpp"

namespace ablate::testing {
namespace {

const std::vector<OpCase>& cases() { return shared_op_cases(); }

// The shape given in place of `s`: one more element in the last dim.
Shape wrong(const Shape& s) { return s.with_last(s.last() + 1); }

// Every mistake of a case: each output, each input the op updates in place (axpy's y, adam's w),
// each gradient of an input, each upstream gradient.
std::vector<Mistake> mistakes_of(const OpCase& c) {
  std::vector<Mistake> out;
  for (const TensorSpec& s : c.outputs) out.push_back({s.name, wrong(s.shape)});
  for (const std::string& name : c.inplace)
    for (const TensorSpec& s : c.inputs)
      if (s.name == name) out.push_back({name, wrong(s.shape)});
  if (!c.backward) return out;
  for (const std::string& name : c.grad_inputs)
    for (const TensorSpec& s : c.inputs)
      if (s.name == name) out.push_back({"d" + name, wrong(s.shape)});
  for (const std::string& name : c.grad_outputs)
    for (const TensorSpec& s : c.outputs)
      if (s.name == name) out.push_back({"d" + name, wrong(s.shape)});
  return out;
}

// What `be` says to the mistake: the error's message, or "" when it runs the case.
std::string refusal(Backend& be, const OpCase& c, const Mistake& m) {
  try {
    run_case(be, c, DType::F32, nullptr, true, &m);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

struct ContractParam {
  std::string backend;
  int case_index = -1;
};

// gtest prints parameters in test listings: keep it readable.
void PrintTo(const ContractParam& p, std::ostream* os) {
  if (p.backend.empty())
    *os << "no backend besides reference";
  else if (p.case_index < 0)
    *os << p.backend << " (unavailable here)";
  else
    *os << p.backend << " " << cases()[static_cast<std::size_t>(p.case_index)].id();
}

std::vector<ContractParam> contract_params() {
  std::vector<ContractParam> out;
  for (const std::string& name : builtin_backend_names()) {
    if (name == "reference") continue;
    if (!backend_unavailable(name).empty()) {  // one skipped test, not one per case
      out.push_back({name, -1});
      continue;
    }
    for (std::size_t i = 0; i < cases().size(); ++i) out.push_back({name, static_cast<int>(i)});
  }
  if (out.empty()) out.push_back({});
  return out;
}

std::string param_name(const ::testing::TestParamInfo<ContractParam>& info) {
  if (info.param.backend.empty()) return "no_backend_besides_reference";
  if (info.param.case_index < 0) return info.param.backend + "_unavailable_here";
  return info.param.backend + "_" + cases()[static_cast<std::size_t>(info.param.case_index)].id();
}

class BackendContract : public ::testing::TestWithParam<ContractParam> {};

TEST_P(BackendContract, RefusesWhatTheReferenceRefusesWithTheSameMessage) {
  const ContractParam& p = GetParam();
  if (p.backend.empty()) GTEST_SKIP() << "no backend plugin besides 'reference' to compare";
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(p.backend);
  Backend& other = *builtin_backend(p.backend);
  const OpCase& c = cases()[static_cast<std::size_t>(p.case_index)];
  if (const std::string missing = missing_optional_op(other, c); !missing.empty())
    GTEST_SKIP() << p.backend << " has no " << missing;
  for (const Mistake& m : mistakes_of(c)) {
    const std::string expected = refusal(*builtin_backend("reference"), c, m);
    if (expected.empty()) continue;  // a shape the op accepts (a narrower slice, say)
    EXPECT_EQ(expected.rfind("Backend::", 0), 0u) << "the reference's own message, not the contract's: " << expected;
    EXPECT_EQ(refusal(other, c, m), expected) << c.id() << ", " << m.name << " given shape " << m.shape.str();
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, BackendContract, ::testing::ValuesIn(contract_params()), param_name);

// The harness's mistakes reach every op family: each refused by the contract at least once.
TEST(BackendContractHarness, EveryOpFamilyHasARefusedMistake) {
  Backend& ref = *builtin_backend("reference");
  std::map<std::string, int> refused;
  for (const OpCase& c : cases())
    for (const Mistake& m : mistakes_of(c))
      if (refusal(ref, c, m).rfind("Backend::", 0) == 0) ++refused[c.op];
  for (const OpCase& c : cases())
    if (refused.count(c.op) == 0) ADD_FAILURE() << "no mistake of op family " << c.op << " is refused", refused[c.op] = -1;
}

// ---------------------------------------------------------------------------- the rules themselves

Tensor make(Backend& be, const Shape& s, DType d = DType::F32) { return be.empty(s, d); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(BackendContractRules, NamesTheOpTheArgumentAndWhatWasExpected) {
  Backend& be = *builtin_backend("reference");
  const Tensor x = make(be, {4, 3}), w = make(be, {5, 3}), y = make(be, {4, 6});
  const std::string m = message_of([&] { contract::linear_forward(y, nullptr, x, w, nullptr, Activation::None); });
  EXPECT_NE(m.find("Backend::linear_forward: y f32[4, 6] must be [N, O]"), std::string::npos) << m;
  try {
    contract::linear_forward(y, nullptr, x, w, nullptr, Activation::None);
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("ablate/backend.hpp"), std::string::npos) << e.hint();
  }
  EXPECT_TRUE(message_of([&] { contract::linear_forward(make(be, {4, 5}), nullptr, x, w, nullptr, Activation::None); }).empty());
}

TEST(BackendContractRules, LinearBackwardNeedsPreForActivationsThatNeedIt) {
  Backend& be = *builtin_backend("reference");
  const Tensor x = make(be, {4, 3}), w = make(be, {5, 3}), y = make(be, {4, 5}), dy = make(be, {4, 5});
  for (Activation act : {Activation::GeluErf, Activation::GeluTanh, Activation::SiLU}) {
    ASSERT_TRUE(activation_needs_pre(act));
    EXPECT_NE(
        message_of([&] { contract::linear_backward(nullptr, nullptr, nullptr, dy, x, w, nullptr, y, act); }).find("needs `pre`"),
        std::string::npos);
  }
  EXPECT_FALSE(activation_needs_pre(Activation::ReLU));
  EXPECT_TRUE(
      message_of([&] { contract::linear_backward(nullptr, nullptr, nullptr, dy, x, w, nullptr, y, Activation::ReLU); }).empty());
}

TEST(BackendContractRules, ParameterGradientsMayBeF32ForBf16Values) {
  Backend& be = *builtin_backend("reference");
  const Tensor a = make(be, {2, 3, 4}, DType::BF16), b = make(be, {2, 4, 5}, DType::BF16), dc = make(be, {2, 3, 5}, DType::BF16);
  EXPECT_TRUE(message_of([&] {
                Tensor da = make(be, {2, 3, 4}, DType::F32);
                contract::matmul_backward(&da, nullptr, dc, a, b, false, false);
              }).empty());
  const std::string m = message_of([&] {
    Tensor dx = make(be, {2, 3, 4}, DType::F32);
    contract::activation_backward(dx, a, a);
  });
  EXPECT_NE(m.find("must have the dtype of x"), std::string::npos) << m;
}

TEST(BackendContractRules, OptionalPartsRefusedWhereTheBackendHasNone) {
  const std::shared_ptr<Backend> none = new_builtin_backend("reference", {{"optional_ops", "none"}});
  const Tensor x = make(*none, {1, 2, 3, 4}), positions = make(*none, {3}, DType::I32), y = make(*none, {1, 2, 3, 4});
  const std::string m = message_of([&] { contract::rope_forward(*none, y, x, positions, 4, 10000.0f); });
  EXPECT_NE(m.find("Backend::rope_forward: this backend has no rope"), std::string::npos) << m;
  EXPECT_TRUE(message_of([&] { contract::rope_forward(*builtin_backend("reference"), y, x, positions, 4, 10000.0f); }).empty());
}

}  // namespace
}  // namespace ablate::testing
