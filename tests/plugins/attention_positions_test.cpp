// Tests for the plugins that act inside attention: positional_encoding/rotary, /alibi and
// /t5_relative_bias, and the options of attention/mha (qk_norm, logit_softcap). Known values,
// the properties each paper relies on (rotary: logits depend on distance only; qk_norm: q's scale
// does not matter; softcap: bounded logits), finite-difference gradients, errors and listings.
// The plugins are loaded from the built-in plugin dir; cached decoding is checked in transformer_test.
#include <cmath>
#include <sstream>

#include "ablate/attention.hpp"
#include "ablate/ops.hpp"
#include "ablate/testing/gradcheck.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "framework/core/backend_fixture.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate {
namespace {
using testing::error_of;
using testing::f32_tensor;
using testing::host;
using testing::ramp;
using testing::reference_backend;
using Options = std::map<std::string, std::string>;

PluginRegistry& plugins() { return testing::builtin_registry(); }
Tensor values(const Shape& s, float phase = 0.0f) { return f32_tensor(reference_backend(), s, ramp(s.numel(), phase)); }

ModelDims dims(std::int64_t d_model, std::int64_t heads) {
  ModelDims d;
  d.d_model = d_model;
  d.heads = heads;
  d.d_ff = 2 * d_model;
  d.dropout = 0.0f;
  d.attention_dropout = 0.0f;
  d.qkv_bias = false;
  d.out_bias = false;
  return d;
}

// Overwrites every parameter with deterministic values in (0.05, 0.95) (gammas away from 0).
void randomize(ParameterStore& store) {
  float phase = 0.3f;
  for (Parameter* p : store.all()) {
    std::vector<float> v = ramp(p->value.numel(), phase += 0.7f);
    for (float& x : v) x = 0.5f + 0.5f * x;
    reference_backend().copy_from_host(p->value, v.data());
  }
}

::testing::AssertionResult parameters_gradcheck(ParameterStore& store, const std::function<Var(Graph&)>& f) {
  testing::GradcheckOptions o;
  o.seed = 5;
  o.max_elements_per_input = 24;
  const testing::GradcheckResult r = testing::parameter_gradcheck(reference_backend(), store, f, o);
  if (!r.ok) return ::testing::AssertionFailure() << r.report;
  return ::testing::AssertionSuccess();
}

std::vector<std::string> names(ParameterStore& store) {
  std::vector<std::string> out;
  for (Parameter* p : store.all()) out.push_back(p->name);
  return out;
}

Tensor positions(std::initializer_list<std::int32_t> p) {
  return testing::i32_tensor(reference_backend(), {static_cast<std::int64_t>(p.size())}, std::vector<std::int32_t>(p));
}

// --- rotary

// q·k of a rotated query at position i and a rotated key at j depends on i - j only (RoFormer's
// point); the dims past the rotary fraction pass unchanged.
TEST(Rotary, LogitsDependOnTheDistanceOnlyAndTheFractionLimitsTheRotation) {
  auto rotary = plugins().create<PositionalEncoding>("rotary", {{"fraction", "0.5"}});
  ParameterStore store(reference_backend());
  rotary->build(ParamScope(store, 1, "positions"), dims(16, 2));  // Dh 8, R 4
  ASSERT_TRUE(capabilities_of(*rotary).rotates);
  EXPECT_EQ(store.numel(), 0);
  Graph g(reference_backend(), 1, 0, false, false);
  const Var q = g.constant(values({1, 2, 1, 8}, 0.2f)), k = g.constant(values({1, 2, 1, 8}, 1.3f));
  const auto logit = [&](std::int32_t i, std::int32_t j) {
    const std::vector<float> a = host(reference_backend(), rotary->rotate(g, q, positions({i})).value());
    const std::vector<float> b = host(reference_backend(), rotary->rotate(g, k, positions({j})).value());
    double dot = 0;
    for (std::size_t e = 0; e < a.size(); ++e) dot += a[e] * b[e];
    return dot;
  };
  EXPECT_NEAR(logit(7, 3), logit(27, 23), 1e-5);
  EXPECT_NEAR(logit(2, 9), logit(102, 109), 1e-4);
  EXPECT_GT(std::abs(logit(7, 3) - logit(7, 4)), 1e-3);  // and it does depend on the distance
  const std::vector<float> in = host(reference_backend(), q.value());
  const std::vector<float> out = host(reference_backend(), rotary->rotate(g, q, positions({5})).value());
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t e = 4; e < 8; ++e) EXPECT_EQ(out[h * 8 + e], in[h * 8 + e]) << h << " " << e;
  EXPECT_NE(out[1], in[1]);
}

TEST(Rotary, GradientsMatchFiniteDifferencesAndBadOptionsAreRefused) {
  auto rotary = plugins().create<PositionalEncoding>("rotary", {{"base", "100"}});
  ParameterStore store(reference_backend());
  rotary->build(ParamScope(store, 1, "positions"), dims(12, 2));
  const Tensor p = positions({3, 4, 9});
  const auto r =
      testing::gradcheck(reference_backend(), [&](Graph& g, const std::vector<Var>& in) { return rotary->rotate(g, in[0], p); },
                         {values({2, 2, 3, 6})});
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_NE(error_of([] {
              plugins().create<PositionalEncoding>("rotary", {{"fraction", "1.5"}});
            }).find("fraction must be in (0, 1]"),
            std::string::npos);
  auto narrow = plugins().create<PositionalEncoding>("rotary", {{"fraction", "0.1"}});
  EXPECT_NE(error_of([&] { narrow->build(ParamScope(store, 1, "p"), dims(8, 2)); }).find("leaves no pair of dims"),
            std::string::npos);
}

// --- t5_relative_bias

// A table whose entry [bucket, h] is 10 * bucket + h makes the bias readable: bias[h, t, s] =
// 10 * bucket(s - (offset + t)) + h.
struct T5Fixture {
  explicit T5Fixture(const Options& o, bool causal, std::int64_t layers = 1)
      : pe(plugins().create<PositionalEncoding>("t5_relative_bias", o)) {
    ModelDims d = dims(8, 2);
    d.causal = causal;
    d.layers = layers;
    pe->build(ParamScope(store, 1, "decoder.positions"), d);
    for (Parameter* p : store.all()) {
      std::vector<float> v(static_cast<std::size_t>(p->value.numel()));
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(10 * (i / 2) + i % 2) + 100.0f * static_cast<float>(p->name.find(".1.") != std::string::npos);
      reference_backend().copy_from_host(p->value, v.data());
    }
  }
  // bucket of (t, s) in layer `layer`, read back from the bias of T x S queries/keys at `offset`.
  std::vector<float> bias(std::int64_t T, std::int64_t S, std::int64_t offset, std::int64_t layer = 0) {
    Graph g(reference_backend(), 1, 0, false, false);
    const PositionalEncoding::LogitBias b = pe->logit_bias(g, T, S, offset, layer);
    EXPECT_FALSE(b.slopes.defined());
    EXPECT_EQ(b.bias.shape(), Shape({2, T, S}));
    return host(reference_backend(), b.bias.value());
  }
  ParameterStore store{reference_backend()};
  std::shared_ptr<PositionalEncoding> pe;
};

TEST(T5RelativeBias, BucketsAreExactNearbyLogSpacedFartherAndSignedOutsideACausalStack) {
  T5Fixture bi({{"buckets", "8"}, {"max_distance", "16"}}, /*causal=*/false);  // 4 per direction: 0, 1 exact; 2, 3 log
  ASSERT_TRUE(capabilities_of(*bi.pe).biases_logits);
  EXPECT_FALSE(capabilities_of(*bi.pe).bias_per_layer);
  EXPECT_EQ(names(bi.store), std::vector<std::string>{"decoder.positions.relative_bias.weight"});
  // one query at position 20 (offset 20), keys 0 .. 39: distance key - query = s - 20
  const std::vector<float> b = bi.bias(1, 40, 20);
  const auto bucket_at = [&](std::int64_t distance, std::int64_t h = 0) {
    return (b[static_cast<std::size_t>(h * 40 + 20 + distance)] - h) / 10.0f;
  };
  EXPECT_EQ(bucket_at(0), 0);
  EXPECT_EQ(bucket_at(-1), 1);
  EXPECT_EQ(bucket_at(-2), 2);   // 2 + floor(log(2/2) / log(16/2) * 2) = 2 + 0
  EXPECT_EQ(bucket_at(-5), 2);   // 2 + floor(log(5/2) / log(8) * 2 = 0.88)
  EXPECT_EQ(bucket_at(-6), 3);   // 2 + floor(log(6/2) / log(8) * 2 = 1.06)
  EXPECT_EQ(bucket_at(-20), 3);  // past max_distance: the last bucket
  EXPECT_EQ(bucket_at(1), 5);    // the future: upper half
  EXPECT_EQ(bucket_at(19), 7);
  EXPECT_EQ(bucket_at(-1, 1), 1);                                                 // head 1 reads column 1
  T5Fixture causal({{"buckets", "8"}, {"max_distance", "16"}}, /*causal=*/true);  // 8 past buckets: 0..3 exact
  const std::vector<float> c = causal.bias(1, 40, 20);
  EXPECT_EQ(c[20 - 3] / 10.0f, 3);
  EXPECT_EQ(c[20 - 4] / 10.0f, 4);
  EXPECT_EQ(c[20 - 16] / 10.0f, 7);
  EXPECT_EQ(c[20 + 5] / 10.0f, 0);  // the future shares bucket 0 (the causal mask hides it)
  // Queries at offset 3 see the same bias rows as those at rows 3.. of a pass from 0.
  const std::vector<float> all = bi.bias(6, 6, 0), tail = bi.bias(3, 6, 3);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t s = 0; s < 6; ++s) EXPECT_EQ(tail[(h * 3 + t) * 6 + s], all[(h * 6 + t + 3) * 6 + s]);
}

TEST(T5RelativeBias, PerLayerTablesAreSeparateParameters) {
  T5Fixture per({{"per_layer", "true"}}, false, /*layers=*/3);
  EXPECT_TRUE(capabilities_of(*per.pe).bias_per_layer);
  EXPECT_EQ(names(per.store),
            (std::vector<std::string>{"decoder.positions.relative_bias.0.weight", "decoder.positions.relative_bias.1.weight",
                                      "decoder.positions.relative_bias.2.weight"}));
  EXPECT_EQ(per.store.numel(), 3 * 32 * 2);
  const std::vector<float> l0 = per.bias(2, 3, 0, 0), l1 = per.bias(2, 3, 0, 1);
  for (std::size_t i = 0; i < l0.size(); ++i) EXPECT_EQ(l1[i] - l0[i], 100.0f) << i;  // table 1 is table 0 + 100
}

// The learned table gets its gradient through the attention's dbias.
TEST(T5RelativeBias, TheTableGradientMatchesFiniteDifferences) {
  for (const char* per_layer : {"false", "true"}) {
    auto pe = plugins().create<PositionalEncoding>("t5_relative_bias",
                                                   {{"buckets", "6"}, {"max_distance", "8"}, {"per_layer", per_layer}});
    ParameterStore store(reference_backend());
    ModelDims d = dims(8, 2);
    d.layers = 2;
    pe->build(ParamScope(store, 1, "encoder.positions"), d);
    randomize(store);
    const Tensor q = values({2, 2, 5, 4}, 0.1f), k = values({2, 2, 7, 4}, 0.5f), v = values({2, 2, 7, 4}, 0.9f);
    EXPECT_TRUE(parameters_gradcheck(store, [&](Graph& g) {
      ops::AttentionOptions o;
      o.bias = pe->logit_bias(g, 5, 7, 2, 1).bias;
      return ops::attention(g, g.constant(q), g.constant(k), g.constant(v), o);
    })) << per_layer;
  }
}

TEST(T5RelativeBias, TooFewBucketsAreRefusedWithAHint) {
  auto pe = plugins().create<PositionalEncoding>("t5_relative_bias", {{"buckets", "2"}});
  ParameterStore store(reference_backend());
  const std::string e = error_of([&] { pe->build(ParamScope(store, 1, "encoder.positions"), dims(8, 2)); });
  EXPECT_NE(e.find("t5_relative_bias in 'encoder.positions': buckets 2"), std::string::npos) << e;
  EXPECT_NE(e.find("use buckets >= 4"), std::string::npos) << e;
}

// --- attention/mha: qk_norm and logit_softcap

struct Mha {
  explicit Mha(const Options& o, ModelDims d = dims(8, 2)) : attention(plugins().create<Attention>("mha", o)) {
    attention->build(ParamScope(store, 1, "layers.0.self_attn"), d, AttentionRole::Self);
    randomize(store);
  }
  Var forward(Graph& g, const Var& x, bool causal = false) const {
    AttentionCall call;
    call.x = x;
    call.mask.causal = causal;
    return attention->forward(g, call);
  }
  std::vector<float> run(const Tensor& x) const {
    Graph g(reference_backend(), 1, 0, false, false);
    return host(reference_backend(), forward(g, g.constant(x)).value());
  }
  ParameterStore store{reference_backend()};
  std::shared_ptr<Attention> attention;
};

// With q and k normalised per head, scaling the q rows of the projection changes nothing.
TEST(MhaOptions, QkNormMakesTheOutputBlindToTheScaleOfQ) {
  const Tensor x = values({2, 3, 8}, 0.4f);
  for (const char* norm : {"none", "rms_norm", "layer_norm"}) {
    Mha m(Options{{"qk_norm", norm}});
    const std::vector<float> before = m.run(x);
    Parameter& w = m.store.get("layers.0.self_attn.qkv.weight");  // [3D, D]: q rows first
    std::vector<float> wv = host(reference_backend(), w.value);
    for (std::size_t i = 0; i < 8 * 8; ++i) wv[i] *= 3.0f;
    reference_backend().copy_from_host(w.value, wv.data());
    const std::vector<float> after = m.run(x);
    double diff = 0;
    for (std::size_t i = 0; i < after.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(after[i] - before[i])));
    if (std::string(norm) == "none")
      EXPECT_GT(diff, 1e-3) << "without qk_norm, q's scale sharpens the attention";
    else
      EXPECT_LT(diff, 1e-4) << norm;
  }
  Mha rms(Options{{"qk_norm", "rms_norm"}});
  EXPECT_EQ(names(rms.store), (std::vector<std::string>{"layers.0.self_attn.qkv.weight", "layers.0.self_attn.out.weight",
                                                        "layers.0.self_attn.q_norm.gamma", "layers.0.self_attn.k_norm.gamma"}));
  EXPECT_EQ(rms.store.get("layers.0.self_attn.q_norm.gamma").value.shape(), Shape({4}));  // Dh
}

// A tiny cap flattens the logits: the output is the plain mean of v (here: of the projected x).
// A huge cap changes nothing.
TEST(MhaOptions, LogitSoftcapBoundsTheLogits) {
  const Tensor x = values({1, 4, 8}, 0.2f);
  Mha plain(Options{}), huge(Options{{"logit_softcap", "1e6"}}), tiny(Options{{"logit_softcap", "1e-6"}});
  const std::vector<float> p = plain.run(x), h = huge.run(x), t = tiny.run(x);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(h[i], p[i], 1e-5) << i;
  // every row of t equals the mean over the 4 positions (uniform attention, then out)
  for (std::size_t r = 1; r < 4; ++r)
    for (std::size_t e = 0; e < 8; ++e) EXPECT_NEAR(t[r * 8 + e], t[e], 1e-5) << r << " " << e;
  double diff = 0;
  for (std::size_t i = 0; i < p.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(t[i] - p[i])));
  EXPECT_GT(diff, 1e-3);
  EXPECT_NE(error_of([] {
              plugins().create<Attention>("mha", {{"logit_softcap", "-1"}});
            }).find("logit_softcap must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              plugins().create<Attention>("mha", {{"qk_norm", "batch_norm"}});
            }).find("batch_norm"),
            std::string::npos);
}

TEST(MhaOptions, GradientsWithQkNormSoftcapAndGroupedHeadsMatchFiniteDifferences) {
  for (const Options& o : {Options{{"qk_norm", "layer_norm"}, {"logit_softcap", "0.7"}},
                           Options{{"qk_norm", "rms_norm"}, {"kv_heads", "1"}, {"logit_softcap", "2"}}}) {
    Mha m(o, dims(16, 4));  // Dh 4 (a layer norm over 2 values is ±1: too sharp for finite differences)
    const Tensor x = values({2, 3, 16}, 0.6f);
    EXPECT_TRUE(parameters_gradcheck(m.store, [&](Graph& g) { return m.forward(g, g.constant(x), true); })) << o.at("qk_norm");
    const auto r = testing::gradcheck(reference_backend(),
                                      [&](Graph& g, const std::vector<Var>& in) { return m.forward(g, in[0], true); }, {x});
    EXPECT_TRUE(r.ok) << r.report;
  }
}

TEST(MhaOptions, ABackendWithoutSoftcapRefusesIt) {
  const auto bare = testing::builtin_backend("reference", {{"optional_ops", "none"}});
  Graph g(*bare, 1, 0, false, false);
  const Var q = g.constant(f32_tensor(*bare, {1, 1, 2, 2}, {0.1f, 0.2f, 0.3f, 0.4f}));
  ops::AttentionOptions o;
  o.softcap = 5.0f;
  EXPECT_NE(error_of([&] { ops::attention(g, q, q, q, o); }).find("no attention logit soft-capping"), std::string::npos);
}

// --- listings

TEST(AttentionPositionPlugins, AblatePluginsListsThemWithTheirOptions) {
  std::ostringstream out, err;
  ASSERT_EQ(cli::run({"plugins"}, out, err), cli::kExitOk) << err.str();
  std::string listing;  // option columns are aligned: runs of spaces read as one
  for (char ch : out.str())
    if (ch != ' ' || listing.empty() || listing.back() != ' ') listing += ch;
  for (const char* s : {"positional_encoding/rotary", "fraction float, default 1.0", "positional_encoding/alibi",
                        "positional_encoding/t5_relative_bias", "buckets int, default 32", "max_distance int, default 128",
                        "per_layer bool, default false", "attention/mha",
                        "qk_norm string {none|layer_norm|rms_norm|scale_norm}, default none", "logit_softcap float, default 0"})
    EXPECT_NE(listing.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace ablate
