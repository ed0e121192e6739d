// Gradient checks of every differentiable op in ablate/ops.hpp through autograd on the
// reference backend (shape handling of the wrappers included: 3-D inputs, broadcasting, fused
// projections, masks), plus a small Transformer-like composition end to end.
#include "ablate/ops.hpp"

#include <algorithm>
#include <cmath>

#include "ablate/testing/gradcheck.hpp"
#include "framework/core/backend_fixture.hpp"

namespace ablate {
namespace {
using testing::gradcheck;
using testing::i32_tensor;
using testing::f32_tensor;
using testing::host;
using testing::ramp;
using testing::reference_backend;

Tensor values(const Shape& s, float phase = 0.0f) { return f32_tensor(reference_backend(), s, ramp(s.numel(), phase)); }

template <class... Inputs>
void expect_gradcheck(const testing::GradcheckFn& fn, const Inputs&... inputs) {
  const auto r = gradcheck(reference_backend(), fn, std::vector<Tensor>{inputs...});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
}

TEST(OpsGradcheck, LinearOnThreeDimensionalInputWithEveryActivation) {
  for (Activation act : {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU}) {
    SCOPED_TRACE(activation_name(act));
    expect_gradcheck([act](Graph& g, const std::vector<Var>& in) { return ops::linear(g, in[0], in[1], in[2], act); },
                     values({2, 3, 5}), values({4, 5}, 1.0f), values({4}, 2.0f));
  }
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::linear(g, in[0], in[1], Var()); }, values({3, 5}),
                   values({2, 5}, 1.0f));
}

TEST(OpsGradcheck, LinearWithItsDropoutForEveryActivation) {
  for (Activation act : {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU})
    expect_gradcheck(
        [act](Graph& g, const std::vector<Var>& in) { return ops::linear_dropout(g, in[0], in[1], in[2], act, 0.3f); },
        values({2, 3, 5}, 0.3f), values({4, 5}, 1.0f), values({4}, 2.0f));
}

TEST(OpsGradcheck, BatchedMatmulWithTransposes) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    SCOPED_TRACE(t);
    const Shape a = ta ? Shape{2, 4, 3} : Shape{2, 3, 4};
    const Shape b = tb ? Shape{2, 5, 4} : Shape{2, 4, 5};
    expect_gradcheck([ta, tb](Graph& g, const std::vector<Var>& in) { return ops::matmul(g, in[0], in[1], ta, tb, 0.5f); },
                     values(a), values(b, 1.0f));
  }
}

TEST(OpsGradcheck, AttentionWithCausalAndPaddingMasksAndDropout) {
  Backend& be = reference_backend();
  const Tensor lengths = i32_tensor(be, {2}, {3, 5});
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    ops::AttentionOptions o;
    o.causal = variant == 1 || variant == 3;
    o.key_lengths = variant >= 2 ? &lengths : nullptr;
    o.dropout = variant == 3 ? 0.3f : 0.0f;
    const Shape q = o.causal ? Shape{2, 2, 5, 4} : Shape{2, 2, 3, 4};
    expect_gradcheck([o](Graph& g, const std::vector<Var>& in) { return ops::attention(g, in[0], in[1], in[2], o); }, values(q),
                     values({2, 2, 5, 4}, 1.0f), values({2, 2, 5, 4}, 2.0f));
  }
}

// Grouped k/v heads, a learned logit bias (its gradient through autograd) and ALiBi slopes.
TEST(OpsGradcheck, AttentionWithGroupedHeadsLogitBiasAndSlopes) {
  Backend& be = reference_backend();
  const Tensor lengths = i32_tensor(be, {2}, {5, 3});
  ops::AttentionOptions o;
  o.causal = true;
  o.key_lengths = &lengths;
  o.slopes = f32_tensor(be, {4}, {0.5f, 0.25f, 0.125f, 0.0625f});
  expect_gradcheck(
      [o](Graph& g, const std::vector<Var>& in) {
        ops::AttentionOptions with_bias = o;
        with_bias.bias = in[3];
        return ops::attention(g, in[0], in[1], in[2], with_bias);
      },
      values({2, 4, 5, 3}), values({2, 2, 5, 3}, 1.0f), values({2, 2, 5, 3}, 2.0f), values({1, 5, 5}, 0.5f));
}

// What the bias and the slopes add, on known values: one query, two keys, q·k = 0 everywhere, so
// the probabilities are softmax(bias - slope * distance) alone.
TEST(Ops, AttentionBiasAndAlibiSlopesShiftTheLogits) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0, false, false);
  const Var q = g.constant(f32_tensor(be, {1, 1, 1, 2}, {0.0f, 0.0f}));
  const Var k = g.constant(f32_tensor(be, {1, 1, 2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}));
  const Var v = g.constant(f32_tensor(be, {1, 1, 2, 2}, {1.0f, 0.0f, 0.0f, 1.0f}));
  ops::AttentionOptions o;
  o.query_offset = 1;  // the query is at position 1: distances 1 (key 0) and 0 (key 1)
  o.slopes = f32_tensor(be, {1}, {0.5f});
  o.bias = g.constant(f32_tensor(be, {1, 1, 2}, {1.0f, 0.0f}));
  const std::vector<float> out = host(be, ops::attention(g, q, k, v, o).value());
  // logits: key 0: 1 - 0.5 * 1 = 0.5; key 1: 0 - 0 = 0 -> p0 = 1 / (1 + e^-0.5)
  const float p0 = 1.0f / (1.0f + std::exp(-0.5f));
  EXPECT_NEAR(out[0], p0, 1e-6f);
  EXPECT_NEAR(out[1], 1.0f - p0, 1e-6f);
}

// The small general set: gradients, the mean composed from the sum, softmax rows summing to 1,
// and a reshape whose gradient comes back in the input's shape.
TEST(OpsGradcheck, SoftmaxSumMeanExpSigmoidAndReshape) {
  const auto one = [](Var (*op)(Graph&, const Var&)) {
    return [op](Graph& g, const std::vector<Var>& in) { return op(g, in[0]); };
  };
  for (auto op : {&ops::softmax_last, &ops::sum_last, &ops::mean_last, &ops::exp, &ops::sigmoid})
    expect_gradcheck(one(op), values({2, 3, 5}));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::reshape(g, in[0], {6, 5}); }, values({2, 3, 5}));
  Backend& be = reference_backend();
  Graph g(be, 1, 0, false, false);
  const Var x = g.constant(values({3, 4}, 0.4f));
  const std::vector<float> sm = host(be, ops::softmax_last(g, x).value()), xs = host(be, x.value());
  const std::vector<float> sum = host(be, ops::sum_last(g, x).value()), mean = host(be, ops::mean_last(g, x).value());
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_NEAR(sm[r * 4] + sm[r * 4 + 1] + sm[r * 4 + 2] + sm[r * 4 + 3], 1.0f, 1e-6f);
    EXPECT_NEAR(sum[r], xs[r * 4] + xs[r * 4 + 1] + xs[r * 4 + 2] + xs[r * 4 + 3], 1e-6f);
    EXPECT_NEAR(mean[r], sum[r] / 4.0f, 1e-6f);
  }
  EXPECT_NEAR(host(be, ops::sigmoid(g, x).value())[0], 1.0f / (1.0f + std::exp(-xs[0])), 1e-6f);
  EXPECT_NEAR(host(be, ops::exp(g, x).value())[0], std::exp(xs[0]), 1e-5f);
  EXPECT_THROW(ops::reshape(g, x, {5, 2}), Error) << "10 elements are not 12";
}

TEST(OpsGradcheck, LayerNormAndRmsNorm) {
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::layer_norm(g, in[0], in[1], in[2]); },
                   values({2, 3, 6}), values({6}, 1.0f), values({6}, 2.0f));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::rms_norm(g, in[0], in[1]); }, values({4, 6}),
                   values({6}, 1.0f));
}

TEST(OpsGradcheck, ElementwiseOps) {
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::add(g, in[0], in[1], 0.5f, 2.0f); }, values({3, 4, 2}),
                   values({4, 2}, 1.0f));  // b repeats over the batch
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::mul(g, in[0], in[1]); }, values({7}),
                   values({7}, 1.0f));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::mul(g, in[0], in[1]); }, values({2, 3, 5}),
                   values({5}, 1.0f));  // a per-channel gate (LayerScale)
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::mul(g, in[0], in[1]); }, values({2, 3, 5}),
                   values({1}, 1.0f));  // a scalar gate (ReZero)
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::add(g, in[0], in[1]); }, values({2, 3, 5}),
                   values({1, 3, 5}, 1.0f));  // leading 1s of b are ignored
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::scale(g, in[0], -1.5f); }, values({7}));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::dropout(g, in[0], 0.4f); }, values({33}));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::dropout_add(g, in[0], in[1], 0.4f); }, values({3, 11}),
                   values({3, 11}, 1.0f));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::dropout_add(g, in[0], in[0], 0.4f); },
                   values({33}));  // x that is h
  for (Activation act : {Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU})
    expect_gradcheck([act](Graph& g, const std::vector<Var>& in) { return ops::activation(g, in[0], act); },
                     values({9}, 0.3f));  // phase 0.3: no element sits on ReLU's kink at 0
}

// The fused residual add against its composition, add(x, dropout(h)), on a backend without the
// fused op: the same values and gradients, bit for bit, in f32 and bf16 (the reference rounds
// the dropped value to the dtype first, as dropout_forward's store does).
TEST(Ops, DropoutAddEqualsTheAddOfADropoutBitForBit) {
  auto composed_backend = testing::new_builtin_backend("reference", {{"optional_ops", "none"}});
  for (const DType dtype : {DType::F32, DType::BF16})
    for (const bool training : {true, false}) {
      auto run = [&](Backend& be) {
        Graph g(be, 7, 3, training);
        auto input = [&](float phase) {
          Tensor t = be.empty({4, 9}, dtype);
          be.cast(t, f32_tensor(be, {4, 9}, ramp(36, phase)));
          return g.leaf(t);
        };
        Var x = input(0.0f), h = input(1.0f);
        Var y = ops::dropout_add(g, x, h, 0.3f);
        Tensor dy = be.empty({4, 9}, dtype);
        be.cast(dy, f32_tensor(be, {4, 9}, ramp(36, 2.0f)));
        g.backward(y, dy);
        return std::vector<std::vector<float>>{host(be, y.value()), host(be, x.grad()), host(be, h.grad())};
      };
      ASSERT_FALSE(composed_backend->supports(OptionalOp::dropout_add));
      const auto fused = run(reference_backend()), composed = run(*composed_backend);
      EXPECT_EQ(fused, composed) << dtype_name(dtype) << (training ? " training" : " evaluation");
      std::vector<float> sum(36);
      const auto xv = ramp(36, 0.0f), hv = ramp(36, 1.0f);
      for (std::size_t i = 0; i < 36; ++i) sum[i] = xv[i] + hv[i];
      if (dtype == DType::F32 && training) EXPECT_NE(fused[0], sum) << "p 0.3 drops some of 36 elements";
      if (dtype == DType::F32 && !training) EXPECT_EQ(fused[0], sum) << "no dropout outside training";
    }
}

// Tensors of one dtype on one backend, for the gradient-buffer tests: tensor(shape, phase) holds
// ramp values, zeros(shape) zeros.
struct Typed {
  Backend& be;
  DType dtype;
  Tensor operator()(const Shape& shape, float phase) const {
    Tensor t = be.empty(shape, dtype);
    be.cast(t, f32_tensor(be, shape, ramp(shape.numel(), phase)));
    return t;
  }
  Tensor zeros(const Shape& shape) const {
    Tensor t = be.empty(shape, dtype);
    be.fill(t, 0.0f);
    return t;
  }
};

// ops::linear_dropout equals linear then dropout: on onednn (its fused pass) against onednn without
// the op (the composition ops.cpp falls back to), values and gradients bit for bit, in f32 and
// bf16, for every activation (ReLU's backward reading y's sign), small and past the threading
// grain; on reference the values bit for bit and the gradients to f32 rounding (its slope is
// stored as f32, the composition's act' stays double). Outside training both are the plain linear.
TEST(Ops, LinearDropoutEqualsLinearThenDropout) {
  struct NoFusedLinear : testing::ForwardingBackend {
    using ForwardingBackend::ForwardingBackend;
    bool supports(OptionalOp op) const override { return op != OptionalOp::linear_dropout && in_->supports(op); }
  };
  const Shape shapes[][2] = {{Shape{2, 5, 7}, Shape{6, 7}}, {Shape{4, 64, 96}, Shape{160, 96}}};
  for (const char* name : {"onednn", "reference"})
    for (const DType dtype : {DType::F32, DType::BF16})
      for (const Activation act :
           {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU})
        for (const auto& [xs, ws] : shapes)
          for (const bool training : {true, false}) {
            if (std::string(name) == "reference" && xs.numel() > 100) continue;  // its triple loops: the small shape says it
            std::shared_ptr<Backend> fused_be = testing::new_builtin_backend(name, {});
            NoFusedLinear composed_be(fused_be);
            ASSERT_TRUE(fused_be->supports(OptionalOp::linear_dropout)) << name;
            const Shape bs{ws[0]}, ys{xs[0], xs[1], ws[0]};
            auto run = [&](Backend& be) {
              const Typed tensor{be, dtype};
              Graph g(be, 7, 3, training);
              Var x = g.leaf(tensor(xs, 0.1f)), w = g.leaf(tensor(ws, 0.4f)), b = g.leaf(tensor(bs, 0.7f));
              const Var y = ops::linear_dropout(g, x, w, b, act, 0.3f);
              g.backward(y, tensor(ys, 0.9f));
              return std::vector<std::vector<float>>{host(be, y.value()), host(be, x.grad()), host(be, w.grad()),
                                                     host(be, b.grad())};
            };
            const auto fused = run(*fused_be), composed = run(composed_be);
            const std::string where = std::string(name) + " " + dtype_name(dtype) + " " + activation_name(act) + " " + xs.str() +
                                      (training ? " training" : " evaluation");
            EXPECT_EQ(fused[0], composed[0]) << "y: " << where;
            for (std::size_t t = 1; t < fused.size(); ++t) {
              if (std::string(name) == "onednn") {
                EXPECT_EQ(fused[t], composed[t]) << "gradient " << t << ": " << where;
                continue;
              }
              ASSERT_EQ(fused[t].size(), composed[t].size());
              for (std::size_t i = 0; i < fused[t].size(); ++i)
                ASSERT_NEAR(fused[t][i], composed[t][i], 1e-5f * (1.0f + std::fabs(composed[t][i])))
                    << t << "[" << i << "]: " << where;
            }
            if (training && act == Activation::None && dtype == DType::F32) {
              const std::size_t zeros = static_cast<std::size_t>(std::count(fused[0].begin(), fused[0].end(), 0.0f));
              EXPECT_GT(zeros, fused[0].size() / 10) << "p 0.3 drops about 30%: " << where;
            }
          }
}

// Gradients written whole into a fresh, unzeroed buffer (dropout: dropout_forward of dy with the
// op's key; merge_heads: split_heads_forward; one-part split_heads: merge_heads_forward) equal the
// backward ops' accumulation into zeros bit for bit, on the reference and onednn backends, in f32
// and bf16; a second consumer of the same input still adds; fresh_grad_buffer hands out a buffer
// once, never for a parameter or an input without gradient.
TEST(Ops, FreshGradientBuffersEqualTheAccumulationIntoZerosBitForBit) {
  for (const char* name : {"reference", "onednn"})
    for (const DType dtype : {DType::F32, DType::BF16}) {
      auto be = testing::new_builtin_backend(name, {});
      const Typed tensor{*be, dtype};
      Graph g(*be, 7, 3, true);
      const Shape xs{2, 5, 12};
      Var x = g.leaf(tensor(xs, 0.0f)), w = g.leaf(tensor(xs, 0.5f)), c = g.constant(tensor(xs, 0.3f));
      const RngKey key{7, 3, 0};  // the graph's first draw: dropout(x)'s
      Var dropped = ops::dropout(g, x, 0.3f);
      Var heads = ops::split_heads(g, w, 3);  // [2, 3, 5, 4]: merge's input gets a fresh gradient
      Var merged = ops::merge_heads(g, heads);
      Var twice = ops::add(g, ops::dropout(g, w, 0.3f), merged);  // w: a fresh gradient, then an added one
      const RngKey key2{7, 3, 1};
      Tensor dy = tensor(xs, 2.0f);
      g.backward(ops::add(g, dropped, twice), dy);

      Tensor want_x = tensor.zeros(xs), want_w = tensor.zeros(xs);
      be->dropout_backward(want_x, dy, 0.3f, key);
      Tensor dheads = tensor.zeros({2, 3, 5, 4});
      be->merge_heads_backward(dheads, dy);
      be->dropout_backward(want_w, dy, 0.3f, key2);  // in the tape's reverse order: dropout(w) first
      be->split_heads_backward(want_w, dheads, 1, 0);
      EXPECT_EQ(host(*be, x.grad()), host(*be, want_x)) << name << " " << dtype_name(dtype);
      EXPECT_EQ(host(*be, w.grad()), host(*be, want_w)) << name << " " << dtype_name(dtype);
      EXPECT_EQ(g.fresh_grad_buffer(x), nullptr) << "x has its buffer";
      EXPECT_EQ(g.fresh_grad_buffer(c), nullptr) << "a constant needs no gradient";
    }
}

// Graph::grad_out: linear, layer/RMS norm and attention write an input's new gradient buffer
// (GradStore::Write: no zero-fill) and add to one that exists, a second consumer of the same
// input adds, and attention over one node as q, k and v adds all three parts to its one buffer;
// each equals the backward ops' accumulation into zeros, on the reference backend (whose new
// buffers hold NaN: an element left unwritten shows) and onednn, in f32 and bf16.
TEST(Ops, NewGradientBuffersAreWrittenAndEqualTheAccumulationIntoZeros) {
  for (const char* name : {"reference", "onednn"})
    for (const DType dtype : {DType::F32, DType::BF16}) {
      const std::string where = std::string(name) + " " + dtype_name(dtype);
      auto be = testing::new_builtin_backend(name, {});
      const Typed tensor{*be, dtype};
      const Shape xs{2, 5, 12}, ws{6, 12}, ys{2, 5, 6}, hs{1, 2, 3, 4};
      {  // one linear reached from x: it writes x's new buffer
        Graph g(*be, 7, 3, true);
        Var x = g.leaf(tensor(xs, 0.0f)), w = g.leaf(tensor(ws, 0.7f));
        Var y = ops::linear(g, x, w, Var{}, Activation::ReLU);
        Tensor dy = tensor(ys, 3.0f);
        g.backward(y, dy);
        Tensor want = tensor.zeros(xs);
        be->linear_backward(&want, nullptr, nullptr, dy.reshaped({10, 6}), x.value().reshaped({10, 12}), w.value(), nullptr,
                            y.value().reshaped({10, 6}), Activation::ReLU, GradStore::Add);
        EXPECT_EQ(host(*be, x.grad()), host(*be, want)) << "one linear, written: " << where;
      }
      {  // two linears of x: the later one's backward (first in the tape's reverse) writes, the earlier adds
        Graph g(*be, 7, 3, true);
        Var x = g.leaf(tensor(xs, 0.0f)), w1 = g.leaf(tensor(ws, 0.5f)), w2 = g.leaf(tensor(ws, 0.7f));
        Var z1 = ops::linear(g, x, w1, Var{}), z2 = ops::linear(g, x, w2, Var{}, Activation::ReLU);
        Tensor dy = tensor(ys, 2.0f);
        g.backward(ops::add(g, z1, z2), dy);
        Tensor want = tensor.zeros(xs);
        be->linear_backward(&want, nullptr, nullptr, dy.reshaped({10, 6}), x.value().reshaped({10, 12}), w2.value(), nullptr,
                            z2.value().reshaped({10, 6}), Activation::ReLU, GradStore::Add);
        be->linear_backward(&want, nullptr, nullptr, dy.reshaped({10, 6}), x.value().reshaped({10, 12}), w1.value(), nullptr,
                            z1.value().reshaped({10, 6}), Activation::None, GradStore::Add);
        EXPECT_EQ(host(*be, x.grad()), host(*be, want)) << "written, then added: " << where;
      }
      {  // layer norm and RMS norm of leaves
        Graph g(*be, 7, 3, true);
        Var a = g.leaf(tensor(xs, 0.1f)), b = g.leaf(tensor(xs, 0.2f));
        Var gamma = g.leaf(tensor({12}, 0.3f)), beta = g.leaf(tensor({12}, 0.4f));
        Var ln = ops::layer_norm(g, a, gamma, beta, 1e-5f), rms = ops::rms_norm(g, b, gamma, 1e-5f);
        Tensor dy = tensor(xs, 1.5f);
        g.backward(ops::add(g, ln, rms), dy);
        Tensor y = be->empty({10, 12}, dtype), mean = be->empty({10}, DType::F32), rstd = be->empty({10}, DType::F32);
        Tensor want_a = tensor.zeros({10, 12}), want_b = tensor.zeros({10, 12});
        be->layer_norm_forward(y, mean, rstd, a.value().reshaped({10, 12}), gamma.value(), beta.value(), 1e-5f);
        be->layer_norm_backward(&want_a, nullptr, nullptr, dy.reshaped({10, 12}), a.value().reshaped({10, 12}), mean, rstd,
                                gamma.value(), GradStore::Add);
        be->rms_norm_forward(y, rstd, b.value().reshaped({10, 12}), gamma.value(), 1e-5f);
        be->rms_norm_backward(&want_b, nullptr, dy.reshaped({10, 12}), b.value().reshaped({10, 12}), rstd, gamma.value(),
                              GradStore::Add);
        EXPECT_EQ(host(*be, a.grad()), host(*be, want_a)) << "layer norm: " << where;
        EXPECT_EQ(host(*be, b.grad()), host(*be, want_b)) << "RMS norm: " << where;
      }
      {  // attention: q, k, v written; one node as q, k and v: its three parts added
        Graph g(*be, 7, 3, true);
        Var q = g.leaf(tensor(hs, 0.1f)), k = g.leaf(tensor(hs, 0.2f)), v = g.leaf(tensor(hs, 0.3f)),
            s = g.leaf(tensor(hs, 0.4f));
        ops::AttentionOptions o;
        o.causal = true;
        Var out = ops::add(g, ops::attention(g, q, k, v, o), ops::attention(g, s, s, s, o));
        Tensor dout = tensor(hs, 0.9f);
        g.backward(out, dout);
        AttentionParams p;
        p.causal = true;
        p.scale = 0.5f;  // 1 / sqrt(Dh)
        const auto want = [&](const Var& a, const Var& b, const Var& c, Tensor* dq, Tensor* dk, Tensor* dv) {
          Tensor o1 = be->empty(hs, dtype), lse = be->empty({1, 2, 3}, DType::F32);
          be->attention_forward(o1, lse, nullptr, a.value(), b.value(), c.value(), p);
          be->attention_backward(dq, dk, dv, dout, o1, lse, a.value(), b.value(), c.value(), p);
        };
        Tensor dq = tensor.zeros(hs), dk = tensor.zeros(hs), dv = tensor.zeros(hs), ds = tensor.zeros(hs);
        want(q, k, v, &dq, &dk, &dv);
        want(s, s, s, &ds, &ds, &ds);
        EXPECT_EQ(host(*be, q.grad()), host(*be, dq)) << "dq: " << where;
        EXPECT_EQ(host(*be, k.grad()), host(*be, dk)) << "dk: " << where;
        EXPECT_EQ(host(*be, v.grad()), host(*be, dv)) << "dv: " << where;
        EXPECT_EQ(host(*be, s.grad()), host(*be, ds)) << "one node as q, k, v: " << where;
      }
    }
}

// ops::packed_attention over heads in their projections' rows equals split_heads, attention and
// merge_heads bit for bit, values and gradients: on reference (its packed heads), on reference
// without optional ops (the composition ops.cpp falls back to) and on onednn (its fused tiles
// reading the rows in place, and its batched-GEMM path past 256 keys), in f32 and bf16; self-
// attention over one fused q/k/v node (written whole), grouped k/v heads, cross-attention's k/v
// node, and q's heads within a wider node whose other columns get no gradient (added, not written).
TEST(Ops, PackedAttentionEqualsSplitAttentionAndMergeBitForBit) {
  struct Case {
    const char* tag;
    std::int64_t B, H, Hkv, T, S, Dh;
    bool self, causal;
    float dropout;
    std::int64_t q_extra;  // columns of q's node beyond its heads (before them)
  };
  const Case cases[] = {
      {"self causal dropout", 2, 2, 2, 5, 5, 4, true, true, 0.3f, 0},
      {"self grouped padding", 2, 4, 2, 6, 6, 4, true, false, 0.0f, 0},
      {"cross padding dropout", 2, 2, 1, 3, 7, 4, false, false, 0.2f, 0},
      {"cross, q within a wider node", 1, 2, 2, 4, 5, 3, false, true, 0.0f, 2},
      {"cross past 256 keys", 1, 2, 2, 3, 260, 4, false, false, 0.1f, 0},
  };
  for (const char* name : {"reference", "composed", "onednn"})
    for (const DType dtype : {DType::F32, DType::BF16})
      for (const Case& c : cases) {
        const std::string where = std::string(name) + " " + dtype_name(dtype) + " " + c.tag;
        auto be = std::string(name) == "composed" ? testing::new_builtin_backend("reference", {{"optional_ops", "none"}})
                                                  : testing::new_builtin_backend(name, {});
        const Typed tensor{*be, dtype};
        const std::int64_t D = c.H * c.Dh, K = c.Hkv * c.Dh;
        const Shape qs = c.self ? Shape{c.B, c.T, D + 2 * K} : Shape{c.B, c.T, c.q_extra + D};
        const Shape kvs{c.B, c.S, 2 * K}, outs{c.B, c.T, D};
        const Tensor lengths = i32_tensor(*be, {c.B}, std::vector<std::int32_t>(static_cast<std::size_t>(c.B), c.S - 1));
        ops::AttentionOptions o;
        o.causal = c.causal;
        o.dropout = c.dropout;
        if (!c.causal) o.key_lengths = &lengths;
        const Tensor q0 = tensor(qs, 0.1f), kv0 = tensor(kvs, 0.2f), dy = tensor(outs, 0.9f);
        PackedHeads l;
        l.heads = c.H, l.kv_heads = c.Hkv, l.head_dim = c.Dh;
        l.q_col = c.self ? 0 : c.q_extra, l.k_col = c.self ? D : 0, l.v_col = c.self ? D + K : K;
        // packed: one call over the nodes
        Graph g1(*be, 7, 3, true);
        Var q1 = g1.leaf(q0), kv1 = g1.leaf(kv0);
        const Var out1 = c.self ? ops::packed_attention(g1, q1, q1, q1, l, o) : ops::packed_attention(g1, q1, kv1, kv1, l, o);
        g1.backward(out1, dy);
        // split: the heads cut out, attention, merged
        Graph g2(*be, 7, 3, true);
        Var q2 = g2.leaf(q0), kv2 = g2.leaf(kv0);
        const auto part = [&](const Var& x, std::int64_t col, std::int64_t n) {
          return ops::split_heads(g2, ops::slice_last(g2, x, col, n * c.Dh), static_cast<int>(n));
        };
        const Var& src = c.self ? q2 : kv2;
        const Var out2 = ops::merge_heads(
            g2, ops::attention(g2, part(q2, l.q_col, c.H), part(src, l.k_col, c.Hkv), part(src, l.v_col, c.Hkv), o));
        g2.backward(out2, dy);
        EXPECT_EQ(host(*be, out1.value()), host(*be, out2.value())) << "out: " << where;
        EXPECT_EQ(host(*be, q1.grad()), host(*be, q2.grad())) << "dq (self: dqkv): " << where;
        if (!c.self) EXPECT_EQ(host(*be, kv1.grad()), host(*be, kv2.grad())) << "dkv: " << where;
        if (c.q_extra > 0) {
          const std::vector<float> dq = host(*be, q1.grad());
          EXPECT_EQ(dq[0], 0.0f) << "a column no head takes gets no gradient: " << where;
        }
      }
}

TEST(OpsGradcheck, RopeFullAndPartialAtAnOffset) {
  Backend& be = reference_backend();
  const Tensor positions = i32_tensor(be, {3}, {4, 5, 6});
  expect_gradcheck([&](Graph& g, const std::vector<Var>& in) { return ops::rope(g, in[0], positions); }, values({2, 2, 3, 6}));
  expect_gradcheck([&](Graph& g, const std::vector<Var>& in) { return ops::rope(g, in[0], positions, 2, 100.0f); },
                   values({1, 2, 3, 5}));
}

TEST(Ops, RopeTurnsHandComputedPairsAndKeepsOnlyRelativePositionInTheProduct) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  // x[1, 1, 2, 4]: the same row at positions 0 and 1; rotary 4 pairs dims (0, 2) and (1, 3), turned
  // by 1 * 10000^0 = 1 rad and 1 * 10000^(-1/2) = 0.01 rad at position 1.
  Var x = g.constant(f32_tensor(be, {1, 1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4}));
  const std::vector<float> y = host(be, ops::rope(g, x, i32_tensor(be, {2}, {0, 1})).value());
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  const std::vector<double> expect = {1, 2, 3, 4, 1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2};
  for (std::size_t i = 0; i < expect.size(); ++i) EXPECT_NEAR(y[i], expect[i], 1e-6) << i;
  // q at position m and k at position n: q·k depends on m - n only (the point of RoPE).
  Var q = g.constant(values({1, 1, 1, 8}));
  Var k = g.constant(values({1, 1, 1, 8}, 1.0f));
  auto dot = [&](int m, int n) {
    const std::vector<float> a = host(be, ops::rope(g, q, i32_tensor(be, {1}, {m})).value());
    const std::vector<float> b = host(be, ops::rope(g, k, i32_tensor(be, {1}, {n})).value());
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d += static_cast<double>(a[i]) * b[i];
    return d;
  };
  EXPECT_NEAR(dot(3, 1), dot(10, 8), 1e-5);
  EXPECT_GT(std::abs(dot(3, 1) - dot(3, 2)), 1e-3) << "another distance gives another product";
  EXPECT_THROW(ops::rope(g, x, i32_tensor(be, {2}, {0, 1}), 3), Error) << "an odd rotary is refused";
  EXPECT_THROW(ops::rope(g, x, i32_tensor(be, {3}, {0, 1, 2})), Error) << "positions must be [T]";
}

// Given frequencies: base's frequencies give base's rope; a quarter of them at positions 0, 4, 8
// is base's rope at 0, 1, 2 (linear interpolation); a partial rotary keeps the other dims.
TEST(Ops, RopeWithGivenFrequenciesInterpolatesPositions) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  const Var x = g.constant(values({2, 2, 3, 8}));
  std::vector<float> base_freqs, quarter;
  for (int i = 0; i < 4; ++i) {
    base_freqs.push_back(static_cast<float>(std::pow(10000.0, -2.0 * i / 8)));
    quarter.push_back(base_freqs.back() / 4.0f);
  }
  const Tensor near = i32_tensor(be, {3}, {0, 1, 2}), far = i32_tensor(be, {3}, {0, 4, 8});
  const auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6f) << i;
  };
  close(host(be, ops::rope(g, x, near, f32_tensor(be, {4}, base_freqs)).value()), host(be, ops::rope(g, x, near).value()));
  close(host(be, ops::rope(g, x, far, f32_tensor(be, {4}, quarter)).value()), host(be, ops::rope(g, x, near).value()));
  close(host(be, ops::rope(g, x, near, f32_tensor(be, {2}, {1.0f, 0.01f})).value()),
        host(be, ops::rope(g, x, near, 4, 1.0f / 0.0001f).value()));  // rotary 4: 1, 10000^(-1/2)
  const Tensor freqs = f32_tensor(be, {3}, {0.5f, -0.25f, 2.0f});
  expect_gradcheck([&](Graph& gg, const std::vector<Var>& in) { return ops::rope(gg, in[0], far, freqs); }, values({1, 2, 3, 7}));
  EXPECT_THROW(ops::rope(g, x, near, f32_tensor(be, {5}, std::vector<float>(5, 1.0f))), Error) << "5 pairs of 8 dims";
  EXPECT_THROW(ops::rope(g, x, near, f32_tensor(be, {2}, {1.0f, std::nanf("")})), Error) << "a NaN frequency";
}

TEST(OpsGradcheck, SliceAndConcatAlongTheLastDim) {
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::slice_last(g, in[0], 2, 3); }, values({2, 3, 7}));
  expect_gradcheck([](Graph& g, const std::vector<Var>& in) { return ops::concat_last(g, in[0], in[1]); }, values({2, 3, 4}),
                   values({2, 3, 5}, 1.0f));
}

TEST(Ops, ConcatThenSliceGivesThePartsBack) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  Var a = g.constant(values({2, 3}));
  Var b = g.constant(values({2, 5}, 1.0f));
  Var ab = ops::concat_last(g, a, b);
  EXPECT_EQ(ab.shape(), (Shape{2, 8}));
  EXPECT_EQ(host(be, ops::slice_last(g, ab, 0, 3).value()), host(be, a.value()));
  EXPECT_EQ(host(be, ops::slice_last(g, ab, 3, 5).value()), host(be, b.value()));
  EXPECT_THROW(ops::slice_last(g, ab, 6, 3), Error) << "past the end";
  EXPECT_THROW(ops::concat_last(g, a, g.constant(values({3, 5}))), Error) << "other rows";
}

// v of another width than q and k: attention with v = [v1 | v2] is [attention(v1) | attention(v2)]
// (each output column a mix of its own v column), so a wide v is checked against two narrow
// runs and a narrow one against a slice of a wide run; gradients by finite differences.
TEST(Ops, AttentionTakesAValueOfAnotherWidthThanQueryAndKey) {
  Backend& be = reference_backend();
  const Tensor lengths = i32_tensor(be, {2}, {5, 3});
  ops::AttentionOptions o;
  o.causal = true;
  o.key_lengths = &lengths;
  Graph g(be, 1, 0);
  const Var q = g.constant(values({2, 4, 5, 3})), k = g.constant(values({2, 2, 5, 3}, 1.0f));
  const Var v1 = g.constant(values({2, 2, 5, 3}, 2.0f)), v2 = g.constant(values({2, 2, 5, 2}, 3.0f));
  const Var wide = ops::attention(g, q, k, ops::concat_last(g, v1, v2), o);  // Dv 5 > Dh 3
  ASSERT_EQ(wide.shape(), (Shape{2, 4, 5, 5}));
  const Var joined = ops::concat_last(g, ops::attention(g, q, k, v1, o), ops::attention(g, q, k, v2, o));  // Dv 2 < Dh 3
  const std::vector<float> want = host(be, joined.value()), got = host(be, wide.value());
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
  ops::AttentionOptions scaled = o;
  scaled.scale = 0.25f;  // an explicit scale is kept
  EXPECT_NE(host(be, ops::attention(g, q, k, v2, scaled).value()), host(be, ops::attention(g, q, k, v2, o).value()));
  for (const std::int64_t dv : {2, 5}) {
    SCOPED_TRACE(dv);
    expect_gradcheck([o](Graph& gg, const std::vector<Var>& in) { return ops::attention(gg, in[0], in[1], in[2], o); },
                     values({2, 4, 5, 3}), values({2, 2, 5, 3}, 1.0f), values({2, 2, 5, dv}, 2.0f));
  }
  EXPECT_THROW(ops::attention(g, q, k, g.constant(values({2, 2, 4, 5})), o), Error) << "v with other keys than k";
}

TEST(Ops, IotaCompareAndPermute) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  const Var ramp_var = ops::iota(g, {2, 3}, 1.0f, 0.5f);
  EXPECT_EQ(host(be, ramp_var.value()), (std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f}));
  EXPECT_EQ(host(be, ops::iota(g, {3}, 0.0f, 1.0f, DType::BF16).value()), (std::vector<float>{0.0f, 1.0f, 2.0f}));
  // a causal mask from two ramps: row t keeps columns s <= t
  const Var cols = ops::iota(g, {3});                                                                   // s
  const Var grid = ops::add(g, g.constant(f32_tensor(be, {3, 3}, std::vector<float>(9, 0.0f))), cols);  // [t, s] = s
  const Var mask = ops::compare(g, ops::permute(g, grid, {1, 0}), cols, Compare::ge);                   // [t, s] = t >= s
  EXPECT_EQ(host(be, mask.value()), (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_FALSE(mask.requires_grad()) << "a mask has no gradient";
  EXPECT_EQ(host(be, ops::compare(g, ramp_var, g.constant(f32_tensor(be, {1}, {2.0f})), Compare::lt).value()),
            (std::vector<float>{1, 1, 0, 0, 0, 0}));
  // permute: [B, T, H, Dh] -> [B, H, T, Dh] is split_heads of the merged width
  const Var x = g.constant(values({2, 3, 4, 5}));
  const Var split = ops::split_heads(g, ops::reshape(g, x, {2, 3, 20}), 4);
  EXPECT_EQ(host(be, ops::permute(g, x, {0, 2, 1, 3}).value()), host(be, split.value()));
  expect_gradcheck([](Graph& gg, const std::vector<Var>& in) { return ops::permute(gg, in[0], {2, 0, 1}); }, values({2, 3, 4}));
  EXPECT_THROW(ops::permute(g, x, {0, 1, 1, 3}), Error) << "an axis twice";
  EXPECT_THROW(ops::permute(g, x, {0, 1, 2}), Error) << "too few axes";
  EXPECT_THROW(ops::compare(g, x, g.constant(values({3})), Compare::eq), Error) << "b not trailing";
}

TEST(OpsGradcheck, EmbeddingScattersIntoTheTable) {
  const Tensor ids = i32_tensor(reference_backend(), {2, 3}, {1, 4, 1, 0, 2, 4});  // repeats accumulate
  expect_gradcheck([&ids](Graph& g, const std::vector<Var>& in) { return ops::embedding(g, ids, in[0]); }, values({5, 3}));
}

TEST(OpsGradcheck, HeadSplitOfAFusedProjectionAndMerge) {
  for (int part = 0; part < 3; ++part)
    expect_gradcheck(
        [part](Graph& g, const std::vector<Var>& in) { return ops::merge_heads(g, ops::split_heads(g, in[0], 2, 3, part)); },
        values({2, 3, 12}));
}

TEST(OpsGradcheck, CrossEntropyWithIgnoredRowsAndLabelSmoothing) {
  const Tensor targets = i32_tensor(reference_backend(), {2, 3}, {0, 4, -100, 2, -100, 1});
  expect_gradcheck(
      [&targets](Graph& g, const std::vector<Var>& in) { return ops::cross_entropy(g, in[0], targets, -100, 0.1f).loss; },
      values({2, 3, 5}));
}

TEST(OpsGradcheck, SmallEncoderLayerEndToEnd) {
  // x -> LN -> fused qkv -> attention (padding) -> merge -> out proj -> residual -> FFN -> CE
  Backend& be = reference_backend();
  const Tensor lengths = i32_tensor(be, {2}, {4, 2});
  const Tensor targets = i32_tensor(be, {2, 4}, {1, 2, 0, 3, 2, 1, -100, -100});
  auto layer = [&](Graph& g, const std::vector<Var>& in) {
    const Var& x = in[0];
    Var h = ops::layer_norm(g, x, in[1], in[2]);
    Var qkv = ops::linear(g, h, in[3], Var());
    ops::AttentionOptions o;
    o.key_lengths = &lengths;
    Var a = ops::attention(g, ops::split_heads(g, qkv, 2, 3, 0), ops::split_heads(g, qkv, 2, 3, 1),
                           ops::split_heads(g, qkv, 2, 3, 2), o);
    Var r = ops::add(g, x, ops::linear(g, ops::merge_heads(g, a), in[4], Var()));
    Var f = ops::linear(g, ops::linear(g, r, in[5], Var(), Activation::GeluErf), in[6], Var());
    return ops::cross_entropy(g, ops::add(g, r, f), targets).loss;
  };
  expect_gradcheck(layer, values({2, 4, 4}), values({4}, 1.0f), values({4}, 2.0f), values({12, 4}, 3.0f), values({4, 4}, 4.0f),
                   values({8, 4}, 5.0f), values({4, 8}, 6.0f));
}

TEST(Ops, CrossEntropyReportsCountedRowsAndCorrectPredictions) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0, false, false);
  // Row 0 predicts class 2 (target 2), row 1 predicts class 0 (target 1), row 2 ignored.
  Var logits = g.constant(f32_tensor(be, {3, 3}, {0, 1, 5, 4, 1, 0, 9, 9, 9}));
  const auto r = ops::cross_entropy(g, logits, i32_tensor(be, {3}, {2, 1, -100}));
  EXPECT_EQ(r.rows, 2.0);
  EXPECT_EQ(r.correct, 1.0);
}

TEST(Ops, ShapeErrorsNameTheOpAndTensors) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  Var x = g.constant(values({2, 5}));
  Var w = g.constant(values({4, 6}));
  try {
    ops::linear(g, x, w, Var());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ops::linear: x f32[2, 5] does not match w f32[4, 6]"), std::string::npos) << e.what();
  }
}

TEST(Ops, AGateRepeatsOverLeadingDimensionsOnly) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0);
  Var x = g.constant(values({2, 3, 5}));
  // A scalar gate of 0 silences the branch (ReZero at initialisation); a per-channel gate scales each channel.
  const std::vector<float> zero = host(be, ops::mul(g, x, g.constant(f32_tensor(be, {1}, {0.0f}))).value());
  EXPECT_TRUE(std::all_of(zero.begin(), zero.end(), [](float v) { return v == 0.0f; }));
  const std::vector<float> xs = host(be, x.value());
  const std::vector<float> gated = host(be, ops::mul(g, x, g.constant(f32_tensor(be, {5}, {1, 2, 3, 4, 5}))).value());
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(gated[i], xs[i] * static_cast<float>(i % 5 + 1)) << i;
  for (const Shape& bad : {Shape{3}, Shape{2, 1, 5}, Shape{6, 5}}) {  // leading dims, inner 1s, too large
    try {
      ops::mul(g, x, g.constant(values(bad)));
      FAIL() << "b " << bad.str() << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ops::mul: b f32" + bad.str() +
                                           " must be a's shape, a's trailing dimensions or a single element"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(ops::add(g, x, g.constant(values({3}))), Error);
}

}  // namespace
}  // namespace ablate
