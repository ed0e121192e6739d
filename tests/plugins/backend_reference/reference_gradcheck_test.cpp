// Finite-difference gradient checks of every differentiable op of the reference backend (every
// harness case with a backward, in F32), and proof that the checks have teeth: a backend with
// one deliberately broken backward is reported as failing, and so is a 1% parity difference.
#include <gtest/gtest.h>

#include "ablate/backend_ops.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "backends/gradcheck_ops.hpp"
#include "backends/op_cases.hpp"
#include "reference_test_util.hpp"

namespace ablate::testing {
namespace {

const std::vector<OpCase>& cases() { return shared_op_cases(); }

const OpCase& find_case(const std::string& id) {
  for (const OpCase& c : cases())
    if (c.id() == id) return c;
  throw Error("no op case " + id);
}

// ---------------------------------------------------------------------------- (a) every op

class ReferenceGradCheck : public ::testing::TestWithParam<int> {};

TEST_P(ReferenceGradCheck, BackwardMatchesFiniteDifferences) {
  const OpCase& c = cases()[static_cast<std::size_t>(GetParam())];
  const GradCheckResult r = check_gradients(*reference_backend(), c);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
  // The smaller-step retry is for ReLU kinks (common in linear+relu: a weight moves 65
  // pre-activations at once), not a way to pass smooth ops: keep it rare there.
  if (c.name.find("relu") == std::string::npos) {
    EXPECT_LE(r.retried, std::max(1, r.checked / 10)) << r.report;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ReferenceGradCheck, ::testing::ValuesIn(gradcheck_case_indices()),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return cases()[static_cast<std::size_t>(info.param)].id();
                         });

TEST(ReferenceGradCheck, EveryBackwardOpIsCovered) {
  std::set<std::string> ops;
  for (const OpCase& c : cases())
    if (c.backward) ops.insert(c.op);
  for (const char* op :
       {"linear",     "linear_dropout", "matmul",      "attention", "layer_norm",  "rms_norm",    "activation",    "add",
        "mul",        "dropout",        "dropout_add", "embedding", "split_heads", "merge_heads", "cross_entropy", "rope",
        "slice_last", "softmax_last",   "sum_last",    "exp",       "sigmoid"})
    EXPECT_TRUE(ops.count(op)) << op << " has no gradient-checked case";
}

// ---------------------------------------------------------------------------- (b) teeth

// linear_backward with dw's contribution scaled by 1.01: a 1% error in one gradient.
class DwScaledBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void do_linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                          const Tensor* pre, const Tensor& y, Activation a, GradStore s) override {
    std::vector<float> before = dw ? host(*in_, *dw) : std::vector<float>{};
    in_->linear_backward(dx, dw, db, dy, x, w, pre, y, a, s);
    if (!dw) return;
    std::vector<float> after = host(*in_, *dw);
    for (std::size_t i = 0; i < after.size(); ++i) after[i] = before[i] + 1.01f * (after[i] - before[i]);
    in_->copy_from_host(*dw, after.data());
  }
};

// layer_norm_backward missing the "- xhat * mean(g * xhat)" term of dx: it recomputes dx on the
// host without it (what a plausible bug looks like).
class LayerNormMissingTermBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void do_layer_norm_backward(Tensor* dx, Tensor* dg, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& m,
                              const Tensor& r, const Tensor& g, GradStore s) override {
    in_->layer_norm_backward(nullptr, dg, db, dy, x, m, r, g, s);
    if (!dx) return;
    const std::vector<float> gy = host(*in_, dy), rv = host(*in_, r), gm = host(*in_, g);
    std::vector<float> out =
        s == GradStore::Write ? std::vector<float>(static_cast<std::size_t>(dx->numel()), 0.0f) : host(*in_, *dx);
    const std::int64_t D = x.shape().last(), N = x.shape().rows();
    for (std::int64_t n = 0; n < N; ++n) {
      double mean_g = 0;
      for (std::int64_t j = 0; j < D; ++j) mean_g += gy[static_cast<std::size_t>(n * D + j)] * gm[static_cast<std::size_t>(j)];
      mean_g /= static_cast<double>(D);
      for (std::int64_t j = 0; j < D; ++j) {
        const auto i = static_cast<std::size_t>(n * D + j);
        out[i] += static_cast<float>(rv[static_cast<std::size_t>(n)] * (gy[i] * gm[static_cast<std::size_t>(j)] - mean_g));
      }
    }
    in_->copy_from_host(*dx, out.data());
  }
};

// attention_backward run with its parameters broken by `breaks` (the forward is left intact).
template <void (*breaks)(AttentionParams&)>
class AttentionBackwardBrokenBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void do_attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out, const Tensor& lse,
                             const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& ps) override {
    AttentionParams p = ps;
    breaks(p);
    in_->attention_backward(dq, dk, dv, dout, out, lse, q, k, v, p);
  }
};

// Forgets the dropout mask (uses p = 0 in backward).
void forget_dropout(AttentionParams& p) { p.dropout = 0.0f; }
using AttentionNoDropoutBackend = AttentionBackwardBrokenBackend<forget_dropout>;
// Drops the ALiBi slopes (recomputes the probabilities without them).
void drop_slopes(AttentionParams& p) { p.slopes = nullptr; }
using AttentionNoSlopesBackend = AttentionBackwardBrokenBackend<drop_slopes>;
// Never writes the bias's gradient.
void drop_bias_gradient(AttentionParams& p) { p.dbias = nullptr; }
using AttentionNoBiasGradBackend = AttentionBackwardBrokenBackend<drop_bias_gradient>;

// softmax_last_backward missing the row term: dx += y ⊙ dy.
class SoftmaxMissingTermBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void do_softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) override {
    in_->mul_backward(&dx, nullptr, dy, dy, y);
  }
};

template <class Broken>
void expect_caught(const std::string& case_id) {
  const OpCase& c = find_case(case_id);
  const GradCheckResult good = check_gradients(*reference_backend(), c);
  EXPECT_TRUE(good.ok) << good.report;
  auto broken = std::make_shared<Broken>(reference_backend());
  const GradCheckResult bad = check_gradients(*broken, c);
  EXPECT_FALSE(bad.ok) << "the finite-difference check did not notice the broken backward on " << case_id;
  EXPECT_GT(bad.failed, 0);
  EXPECT_NE(bad.report.find("fail"), std::string::npos);
}

TEST(GradCheckHasTeeth, ReportsLinearDwScaledByOnePercent) { expect_caught<DwScaledBackend>("linear_x3x7_O5_gelu_erf"); }

TEST(GradCheckHasTeeth, ReportsLinearDwScaledByOnePercentOnALargerCase) {
  expect_caught<DwScaledBackend>("linear_x2x3x33_O4_none_nobias_nopre");
}

TEST(GradCheckHasTeeth, ReportsLinearDwScaledByOnePercentDespiteReluKinkRetries) {
  expect_caught<DwScaledBackend>("linear_x65x16_O9_relu_nopre");
}

TEST(GradCheckHasTeeth, ReportsLayerNormMissingATerm) { expect_caught<LayerNormMissingTermBackend>("layer_norm_x3x7"); }

TEST(GradCheckHasTeeth, ReportsAttentionBackwardIgnoringDropout) {
  expect_caught<AttentionNoDropoutBackend>("attention_dropout_B2_H2_T5_S7_Dh4");
}

TEST(GradCheckHasTeeth, ReportsAttentionBackwardIgnoringAlibiSlopes) {
  expect_caught<AttentionNoSlopesBackend>("attention_alibi_causal_offset_B1_H4_Hkv4_T3_S7");
}

TEST(GradCheckHasTeeth, ReportsAttentionBackwardWithoutTheBiasGradient) {
  expect_caught<AttentionNoBiasGradBackend>("attention_bias_shared_B2_H2_Hkv2_T5_S7");
}

TEST(GradCheckHasTeeth, ReportsSoftmaxBackwardMissingItsRowTerm) {
  expect_caught<SoftmaxMissingTermBackend>("softmax_last_x3x7");
}

// The parity comparator, too, must flag a small difference (and accept identical runs).
TEST(ParityCompareHasTeeth, FlagsAOnePercentDifference) {
  const OpCase& c = find_case("attention_causal_padding_B3_H1_T7_S7_Dh3");
  const OpResult a = run_case(*reference_backend(), c, DType::F32);
  EXPECT_TRUE(compare_results(c, DType::F32, a, a).ok);
  OpResult b = a;
  b.values.at("dq")[5] *= 1.01f;
  b.values.at("dq")[5] += 1e-3f;
  const CompareResult r = compare_results(c, DType::F32, a, b);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("dq"), std::string::npos) << r.report;
  OpResult n = a;
  n.values.at("lse")[0] = std::nanf("");
  EXPECT_FALSE(compare_results(c, DType::F32, a, n).ok);
}

TEST(ReferenceHarness, EveryCaseRunsInBf16CloseToF32) {
  // Every BF16-capable case on the reference in BF16 (values bf16, parameter gradients f32),
  // against the F32 run with a loose tolerance: exercises the BF16 path of every op.
  for (const OpCase& c : cases()) {
    if (!c.bf16) continue;
    const OpResult f = run_case(*reference_backend(), c, DType::F32);
    OpResult b;
    ASSERT_NO_THROW(b = run_case(*reference_backend(), c, DType::BF16)) << c.id();
    const CompareResult r = compare_results(c, DType::BF16, f, b);
    EXPECT_TRUE(r.ok) << c.id() << ":\n" << r.report;
  }
}

}  // namespace
}  // namespace ablate::testing
