// Tests for the tape (framework/core/autograd.cpp): shared inputs accumulate, parameter
// gradients accumulate across passes until zeroed, graphs without gradients record nothing,
// dropout draws are keyed by (seed, step, op order), and gradcheck catches a wrong backward.
#include "ablate/autograd.hpp"

#include "ablate/ops.hpp"
#include "ablate/parameters.hpp"
#include "ablate/testing/gradcheck.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::f32_tensor;
using testing::ramp;
using testing::reference_backend;
using testing::host;

TEST(Tape, InputUsedTwiceAccumulatesBothContributions) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  const std::vector<float> xv = {0.5f, -2.0f, 3.0f};
  Var x = g.leaf(f32_tensor(be, {3}, xv));
  Var y = ops::mul(g, x, x);              // x^2: dy/dx = 2x
  Var z = ops::add(g, y, x, 1.0f, 3.0f);  // x^2 + 3x: dz/dx = 2x + 3
  g.backward(z, f32_tensor(be, {3}, {1.0f, 1.0f, 1.0f}));
  const std::vector<float> dx = host(be, x.grad());
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(dx[i], 2 * xv[i] + 3) << i;
}

// Counts fills: what zeroing a new gradient buffer costs.
class FillCountingBackend final : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  int fills = 0;

 protected:
  void do_fill(Tensor& y, float value) override {
    ++fills;
    ForwardingBackend::do_fill(y, value);
  }
};

TEST(Tape, AResidualAddAndAReshapePassTheirGradientOnWithoutZeroingIt) {
  auto be = std::make_shared<FillCountingBackend>(testing::builtin_backend("reference"));
  Graph g(*be, 1, 0);
  Var x = g.leaf(f32_tensor(*be, {3}, {1.0f, 2.0f, 3.0f}));
  Var h = ops::scale(g, x, 2.0f);  // 2x
  Var y = ops::add(g, x, h);       // x + 2x: x gets the add's gradient, then accumulates h's
  Var z = ops::reshape(g, y, {3, 1});
  const int before = be->fills;
  g.backward(z, f32_tensor(*be, {3, 1}, {1.0f, 1.0f, -2.0f}));
  EXPECT_EQ(host(*be, x.grad()), (std::vector<float>{3.0f, 3.0f, -6.0f}));
  // Zeroed: z's own buffer (the seed) and h's (the add's second input); y's and x's are the
  // gradients their consumers passed on.
  EXPECT_EQ(be->fills - before, 2);

  Graph twice(*be, 1, 0);  // a that is b: the second contribution accumulates, it is not dropped
  Var w = twice.leaf(f32_tensor(*be, {2}, {1.0f, 1.0f}));
  twice.backward(ops::add(twice, w, w), f32_tensor(*be, {2}, {0.5f, -1.0f}));
  EXPECT_EQ(host(*be, w.grad()), (std::vector<float>{1.0f, -2.0f}));
}

TEST(Tape, ParameterGradientsAccumulateAcrossPassesUntilZeroed) {
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("layer.weight", {2}, Init::ones(), 1);
  auto pass = [&] {
    Graph g(be, 1, 0);
    Var x = g.constant(f32_tensor(be, {2}, {3.0f, -1.0f}));
    Var y = ops::mul(g, g.parameter(w), x);  // dy/dw = x
    g.backward(y, f32_tensor(be, {2}, {1.0f, 1.0f}));
  };
  pass();
  EXPECT_EQ(host(be, w.grad), (std::vector<float>{3.0f, -1.0f}));
  pass();
  EXPECT_EQ(host(be, w.grad), (std::vector<float>{6.0f, -2.0f}));
  EXPECT_NEAR(store.grad_norm(), std::sqrt(36.0 + 4.0), 1e-6);
  store.zero_grad();
  EXPECT_EQ(host(be, w.grad), (std::vector<float>{0.0f, 0.0f}));
}

TEST(Tape, ConstantsGetNoGradientAndUnusedBranchesAreSkipped) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  Var c = g.constant(f32_tensor(be, {2}, {1.0f, 2.0f}));
  Var x = g.leaf(f32_tensor(be, {2}, {3.0f, 4.0f}));
  Var unused = ops::scale(g, x, 100.0f);  // recorded but never reaches the output
  Var y = ops::mul(g, x, c);
  g.backward(y, f32_tensor(be, {2}, {1.0f, 1.0f}));
  EXPECT_FALSE(c.grad().defined());
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(host(be, x.grad()), (std::vector<float>{1.0f, 2.0f}));
}

TEST(Tape, GraphWithoutGradientsRecordsNothing) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  Var x = g.leaf(f32_tensor(be, {2}, {1.0f, 2.0f}));
  EXPECT_FALSE(x.requires_grad());
  Var y = ops::scale(g, x, 2.0f);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(g.backward(y, f32_tensor(be, {2}, {1.0f, 1.0f})), Error);
}

TEST(Tape, LossMustBeOneF32Value) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  Var x = g.leaf(f32_tensor(be, {2}, {1.0f, 2.0f}));
  EXPECT_THROW(g.backward(x), Error);
}

TEST(Tape, DropoutIsKeyedBySeedStepAndOpOrder) {
  Backend& be = reference_backend();
  const Tensor ones = f32_tensor(be, {256}, std::vector<float>(256, 1.0f));
  auto masks = [&](std::uint64_t seed, std::uint64_t step) {
    Graph g(be, seed, step);
    Var x = g.constant(ones);
    std::vector<float> first = host(be, ops::dropout(g, x, 0.5f).value());   // op id 0
    std::vector<float> second = host(be, ops::dropout(g, x, 0.5f).value());  // op id 1
    return std::make_pair(first, second);
  };
  const auto a = masks(7, 3);
  EXPECT_EQ(a, masks(7, 3));              // same program, same draws
  EXPECT_NE(a.first, a.second);           // second op in the pass draws another mask
  EXPECT_NE(a.first, masks(7, 4).first);  // next step draws another mask
  EXPECT_NE(a.first, masks(8, 3).first);  // another seed too
  for (std::size_t i = 0; i < 256; ++i) {
    EXPECT_TRUE(a.first[i] == 0.0f || a.first[i] == 2.0f) << i;
    EXPECT_EQ(a.first[i] != 0.0f, dropout_keep(RngKey{7, 3, 0}, i, 0.5f)) << i;
  }
  Graph eval(be, 7, 3, /*training=*/false, /*grad=*/false);
  EXPECT_EQ(host(be, ops::dropout(eval, eval.constant(ones), 0.5f).value()), std::vector<float>(256, 1.0f));
}

// A component written with Graph::result/record whose backward is deliberately wrong
// (forward 3x, backward 2x): gradcheck must say so, or it could not catch a real bug.
Var broken_triple(Graph& g, const Var& x) {
  Tensor y = g.backend().empty(x.shape(), x.dtype());
  g.backend().fill(y, 0.0f);
  g.backend().axpy(y, x.value(), 3.0f);
  Var out = g.result(y, {&x});
  g.record(out, [&g, x](const Tensor& dy) { g.backend().axpy(*g.grad_buffer(x), dy, 2.0f); });
  return out;
}

TEST(Gradcheck, ReportsAWrongBackward) {
  Backend& be = reference_backend();
  const auto r = testing::gradcheck(be, [](Graph& g, const std::vector<Var>& in) { return broken_triple(g, in[0]); },
                                    {f32_tensor(be, {5}, ramp(5))});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.checked, 5);
  EXPECT_NE(r.report.find("5 of 5 checked elements differ"), std::string::npos) << r.report;
  const auto fine = testing::gradcheck(be, [](Graph& g, const std::vector<Var>& in) { return ops::scale(g, in[0], 3.0f); },
                                       {f32_tensor(be, {5}, ramp(5))});
  EXPECT_TRUE(fine.ok) << fine.report;
}

}  // namespace
}  // namespace ablate
