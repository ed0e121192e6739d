// The compositions of framework/core/composed_ops.hpp: on the reference backend made with
// `optional_ops: none` (it says it has no optional op and refuses their calls), every op that
// ops.cpp composes gives the values and gradients of the reference's own kernel, in f32 and bf16.
#include "ablate/ops.hpp"

#include <cmath>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/testing/gradcheck.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::f32_tensor;
using testing::GradcheckFn;
using testing::host;
using testing::i32_tensor;
using testing::ramp;
using testing::reference_backend;

Backend& bare_backend() { return *testing::builtin_backend("reference", {{"optional_ops", "none"}}); }

// f's output and the gradients of sum(r ⊙ f) w.r.t. each input (r a fixed ramp), on `be`.
struct Outcome {
  std::vector<float> y;
  std::vector<std::vector<float>> grads;
};
Outcome run(Backend& be, const GradcheckFn& f, const std::vector<Shape>& shapes) {
  Graph g(be, 1, 0);
  std::vector<Var> in;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    in.push_back(g.leaf(f32_tensor(be, shapes[i], ramp(shapes[i].numel(), 0.3f + static_cast<float>(i)))));
  const Var y = f(g, in);
  Outcome o{host(be, y.value()), {}};
  g.backward(y, f32_tensor(be, y.shape(), ramp(y.shape().numel(), 1.7f)));
  for (const Var& v : in) o.grads.push_back(host(be, v.grad()));
  return o;
}

void expect_close(const std::vector<float>& want, const std::vector<float>& got, float tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " element " << i;
}

// f on the bare backend (composed) against f on the full reference (its kernels): values and
// gradients, f32 and (f run on bf16 copies of its inputs) bf16; and a gradcheck of the composition.
void expect_composition_matches(const std::string& name, const GradcheckFn& f, const std::vector<Shape>& shapes) {
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(name + (bf16 ? " bf16" : " f32"));
    const GradcheckFn h = [&f, bf16](Graph& g, const std::vector<Var>& in) {
      if (!bf16) return f(g, in);
      std::vector<Var> low;
      for (const Var& v : in) low.push_back(ops::cast(g, v, DType::BF16));
      return ops::cast(g, f(g, low), DType::F32);
    };
    const Outcome want = run(reference_backend(), h, shapes), got = run(bare_backend(), h, shapes);
    const float tol = bf16 ? 2e-2f : 2e-6f;
    expect_close(want.y, got.y, tol, "values");
    for (std::size_t i = 0; i < shapes.size(); ++i)
      expect_close(want.grads[i], got.grads[i], tol, "gradient " + std::to_string(i));
  }
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    inputs.push_back(f32_tensor(bare_backend(), shapes[i], ramp(shapes[i].numel(), 0.3f + static_cast<float>(i))));
  const auto r = testing::gradcheck(bare_backend(), f, inputs);
  EXPECT_TRUE(r.ok) << name << ": " << r.report;
}

GradcheckFn unary(Var (*op)(Graph&, const Var&)) {
  return [op](Graph& g, const std::vector<Var>& in) { return op(g, in[0]); };
}

TEST(ComposedOps, TheBareBackendRefusesEveryOptionalOpItselfSoTheCompositionsRun) {
  Backend& be = bare_backend();
  for (OptionalOp op : {OptionalOp::rope, OptionalOp::slice_last, OptionalOp::attention_bias, OptionalOp::grouped_attention,
                        OptionalOp::softmax_last, OptionalOp::sum_last, OptionalOp::pointwise, OptionalOp::attention_softcap})
    EXPECT_FALSE(be.supports(op)) << optional_op_name(op);
  Tensor x = f32_tensor(be, {2, 3}, ramp(6)), y = be.empty({2, 3}, DType::F32), s = be.empty({2, 1}, DType::F32);
  EXPECT_THROW(be.softmax_last_forward(y, x), Error);
  EXPECT_THROW(be.sum_last_forward(s, x), Error);
  EXPECT_THROW(be.pointwise_forward(y, x, Pointwise::sigmoid), Error);
  EXPECT_THROW(be.slice_last_forward(s, x, 1), Error);
}

TEST(ComposedOps, RowwiseOpsMatchTheKernels) {
  expect_composition_matches("softmax_last", unary(&ops::softmax_last), {{2, 3, 7}});
  expect_composition_matches("sum_last", unary(&ops::sum_last), {{3, 5}});
  expect_composition_matches("mean_last", unary(&ops::mean_last), {{2, 2, 9}});
  expect_composition_matches("sigmoid", unary(&ops::sigmoid), {{3, 4}});
}

TEST(ComposedOps, SliceAndConcatMatchTheKernels) {
  expect_composition_matches("slice_last", [](Graph& g, const std::vector<Var>& in) { return ops::slice_last(g, in[0], 2, 3); },
                             {{2, 3, 7}});
  expect_composition_matches("concat_last",
                             [](Graph& g, const std::vector<Var>& in) { return ops::concat_last(g, in[0], in[1]); },
                             {{2, 3, 4}, {2, 3, 5}});
}

TEST(ComposedOps, RopeMatchesTheKernelFullAndPartialAtAnOffset) {
  for (const int rotary : {6, 4}) {
    const Tensor positions = i32_tensor(bare_backend(), {3}, {5, 6, 7});  // a host tensor: both backends read it
    expect_composition_matches(
        "rope rotary " + std::to_string(rotary),
        [&positions, rotary](Graph& g, const std::vector<Var>& in) { return ops::rope(g, in[0], positions, rotary, 100.0f); },
        {{2, 2, 3, 6}});
  }
}

TEST(ComposedOps, RopeWithGivenFrequenciesMatchesTheKernel) {
  const Tensor positions = i32_tensor(bare_backend(), {3}, {0, 4, 9});
  const Tensor freqs = f32_tensor(bare_backend(), {2}, {0.7f, -0.05f});
  expect_composition_matches("rope with frequencies",
                             [&](Graph& g, const std::vector<Var>& in) { return ops::rope(g, in[0], positions, freqs); },
                             {{2, 2, 3, 6}});
}

TEST(ComposedOps, GroupedAttentionRepeatsKeyValueHeads) {
  const Tensor lengths = i32_tensor(bare_backend(), {2}, {5, 3});
  const GradcheckFn f = [&lengths](Graph& g, const std::vector<Var>& in) {
    ops::AttentionOptions o;
    o.causal = true;
    o.key_lengths = &lengths;
    return ops::attention(g, in[0], in[1], in[2], o);
  };
  expect_composition_matches("attention 4 heads over 2 k/v heads", f, {{2, 4, 5, 3}, {2, 2, 5, 3}, {2, 2, 5, 3}});
}

// v of another width than q and k runs through slice_last/concat_last, composed here too.
TEST(ComposedOps, AttentionWithAValueOfAnotherWidth) {
  const GradcheckFn f = [](Graph& g, const std::vector<Var>& in) {
    ops::AttentionOptions o;
    o.causal = true;
    return ops::attention(g, in[0], in[1], in[2], o);
  };
  expect_composition_matches("v wider than q and k", f, {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 5}});
  expect_composition_matches("v narrower than q and k", f, {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 2}});
}

TEST(ComposedOps, WhatCannotBeComposedIsRefusedNamingTheOp) {
  Backend& be = bare_backend();
  Graph g(be, 1, 0, false, false);
  const Var x = g.constant(f32_tensor(be, {2, 3}, ramp(6)));
  try {
    ops::exp(g, x);
    ADD_FAILURE() << "exp ran on a backend without pointwise ops";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no composition of exp"), std::string::npos) << e.what();
  }
  ops::AttentionOptions o;
  o.slopes = f32_tensor(be, {1}, {0.5f});
  const Var q = g.constant(f32_tensor(be, {1, 1, 2, 2}, ramp(4)));
  try {
    ops::attention(g, q, q, q, o);
    ADD_FAILURE() << "ALiBi slopes ran on a backend without attention_bias";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logit bias"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::softmax_last(g, g.constant(be.empty({2, 0}, DType::F32))), Error) << "empty rows";
  for (const auto& [name, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"compare", [&] { ops::compare(g, x, x, Compare::eq); }}, {"permute", [&] {
                                                                        ops::permute(g, x, {1, 0});
                                                                      }}}) {
    try {
      call();
      ADD_FAILURE() << name << " ran on a backend without it";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no " + name + " op"), std::string::npos) << e.what();
    }
  }
  const Var iota = ops::iota(g, {4}, 2.0f, -1.0f);  // a host-built constant: every backend has it
  EXPECT_EQ(host(be, iota.value()), (std::vector<float>{2, 1, 0, -1}));
}

}  // namespace
}  // namespace ablate
