// backend/cudnn on a GPU: what the parity suite (every op against the reference) does not show by
// itself. That the catalogue's sdpa_ attention cases really ran cuDNN's fused kernels in bf16 and
// agree with the unfused path and the reference, dropout included; and that reruns are bit-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/backend_test_util.hpp"
#include "backends/op_cases.hpp"

namespace ablate::testing {
namespace {

std::vector<const OpCase*> fused_shaped_cases() {
  std::vector<const OpCase*> out;
  for (const OpCase& c : shared_op_cases())
    if (c.op == "attention" && c.name.rfind("sdpa_", 0) == 0) out.push_back(&c);
  return out;
}

// Fused and unfused compute the same function in a different order: their bf16 outputs differ in
// rounding somewhere (a fused engine that silently fell back would give identical bits), and both
// are within the parity tolerance of the reference, lse (natural log) and gradients included.
TEST(CudnnFusedAttention, RunsFusedAndAgreesWithTheUnfusedPathAndTheReference) {
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE("cudnn");
  Backend& fused = *builtin_backend("cudnn");
  Backend& unfused = *builtin_backend("cudnn", {{"fused_attention", "false"}});
  Backend& reference = *builtin_backend("reference");
  ASSERT_EQ(fused_shaped_cases().size(), 3u);
  for (const OpCase* c : fused_shaped_cases()) {
    SCOPED_TRACE(c->id());
    const OpResult ref = run_case(reference, *c, DType::BF16);
    const OpResult f = run_case(fused, *c, DType::BF16);
    const OpResult u = run_case(unfused, *c, DType::BF16);
    EXPECT_NE(f.values.at("out"), u.values.at("out")) << "the fused path did not run (identical bits)";
    const CompareResult fr = compare_results(*c, DType::BF16, ref, f);
    EXPECT_TRUE(fr.ok) << "fused against the reference:\n" << fr.report;
    const CompareResult ur = compare_results(*c, DType::BF16, ref, u);
    EXPECT_TRUE(ur.ok) << "unfused against the reference:\n" << ur.report;
  }
}

// Deterministic mode (the default): every op case, f32 and bf16, forward and backward, gives the
// same bits when run again on the same backend.
TEST(CudnnDeterminism, EveryOpCaseRerunsBitIdentically) {
  ABLATE_SKIP_IF_BACKEND_UNAVAILABLE("cudnn");
  Backend& be = *builtin_backend("cudnn");
  int checked = 0;
  for (const OpCase& c : shared_op_cases()) {
    if (!missing_optional_op(be, c).empty()) continue;  // the parity tests say which
    for (DType dtype : {DType::F32, DType::BF16}) {
      if (dtype == DType::BF16 && !c.bf16) continue;
      const OpResult first = run_case(be, c, dtype);
      const OpResult second = run_case(be, c, dtype);
      for (const auto& [name, values] : first.values) {
        const std::vector<float>& again = second.values.at(name);
        const bool same = values.size() == again.size() &&  // bits, so that NaN equals NaN
                          std::memcmp(values.data(), again.data(), values.size() * sizeof(float)) == 0;
        EXPECT_TRUE(same) << c.id() << " " << dtype_name(dtype) << ": " << name << " differs on a rerun";
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace ablate::testing
