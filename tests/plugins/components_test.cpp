// Tests of the component plugin machinery: ParamScope's names, the parameter gradient check's
// teeth, the key/value cache, the loaded libraries end to end and the options `ablate plugins`
// prints. The families' own tests: ffn_components_test.cpp, position_components_test.cpp,
// block_components_test.cpp (helpers in components_test_util.hpp). Reference backend, built plugins.
#include "plugins/components_test_util.hpp"

namespace ablate {
namespace {
using namespace component_test;  // NOLINT(google-build-using-namespace): the shared helpers
using component_test::Options;   // over ablate::Options

// The helper itself must catch a wrong parameter gradient: y = 2 w with a backward claiming 3.
TEST_F(Components, ParameterGradcheckRejectsAWrongGradient) {
  Parameter& w = ParamScope(store, 1, "wrong").param("weight", {5}, Init::uniform(1.0f));
  auto twice = [&w](float claimed) {
    return [&w, claimed](Graph& g) {
      const Var in = g.parameter(w);
      Tensor y = g.backend().empty(in.shape(), DType::F32);
      g.backend().fill(y, 0.0f);
      g.backend().axpy(y, in.value(), 2.0f);
      Var out = g.result(y, {&in});
      g.record(out, [&g, in, claimed](const Tensor& dy) { g.backend().axpy(*g.grad_buffer(in), dy, claimed); });
      return out;
    };
  };
  EXPECT_TRUE(parameter_gradcheck(store, twice(2.0f)));
  EXPECT_FALSE(parameter_gradcheck(store, twice(3.0f)));
}

// --- ParamScope

TEST_F(Components, ParamScopeNamesFollowTheScope) {
  const ParamScope root(store, 3);
  const ParamScope ffn = root.child("encoder").child("layers").child("1").child("ffn");
  EXPECT_EQ(ffn.prefix(), "encoder.layers.1.ffn");
  Parameter& w = ffn.param("in.weight", {4, 2}, Init::ones());
  EXPECT_EQ(w.name, "encoder.layers.1.ffn.in.weight");
  EXPECT_EQ(&store.get("encoder.layers.1.ffn.in.weight"), &w);
  EXPECT_EQ(root.param("bias", {2}, Init::zeros()).name, "bias");  // empty prefix: the leaf alone
  EXPECT_EQ(ffn.seed(), 3u);
  const std::string dup = testing::error_of([&] { ffn.param("in.weight", {4, 2}, Init::ones()); });
  EXPECT_NE(dup.find("encoder.layers.1.ffn.in.weight"), std::string::npos) << dup;
  EXPECT_THROW(ffn.param("", {1}, Init::ones()), Error);
}

// --- KeyValueCache (ablate/attention.hpp)

// Appends land at the rows after the previous ones; the rows not yet written are zeros (the
// reference backend's new tensors are NaN: a masked NaN key would still poison a kernel that
// multiplies it by a zero probability); past capacity, or keys of another shape, are refused.
TEST_F(Components, KeyValueCacheAppendsRowsAndKeepsTheRestZero) {
  Backend& be = reference_backend();
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  KeyValueCache cache(4);
  const Var k1 = g.constant(values({1, 2, 3, 2}, 0.1f)), v1 = g.constant(values({1, 2, 3, 2}, 0.4f));
  KeyValues kv = cache.append(g, k1, v1);
  EXPECT_EQ(cache.length(), 3);
  ASSERT_EQ(kv.k.shape(), Shape({1, 2, 4, 2}));
  const Var k2 = g.constant(values({1, 2, 1, 2}, 0.7f));
  kv = cache.append(g, k2, k2);
  EXPECT_EQ(cache.length(), 4);
  const std::vector<float> k = host(be, kv.k.value()), a = host(be, k1.value()), b = host(be, k2.value());
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t d = 0; d < 2; ++d)
        EXPECT_EQ(k[(h * 4 + t) * 2 + d], t < 3 ? a[(h * 3 + t) * 2 + d] : b[h * 2 + d]) << h << " " << t << " " << d;
  KeyValueCache fresh(5);
  const std::vector<float> z = host(be, fresh.append(g, k2, k2).v.value());
  for (std::size_t i = 0; i < z.size(); ++i) {
    const bool unwritten = i % 10 >= 2;  // rows 1..4 of each head
    EXPECT_TRUE(!unwritten || z[i] == 0.0f) << i << ": " << z[i];
  }
  EXPECT_NE(testing::error_of([&] { cache.append(g, k2, k2); }).find("exceed its capacity of 4"), std::string::npos);
  const Var wide = g.constant(values({1, 2, 1, 3}));
  EXPECT_NE(testing::error_of([&] { fresh.append(g, wide, wide); }).find("do not fit the cache"), std::string::npos);
}

// --- the loaded libraries and `ablate plugins`

TEST(ComponentPlugins, LoadedLibrariesBuildAndRun) {
  PluginRegistry& loaded = testing::builtin_registry();
  ParameterStore store(reference_backend());
  const ParamScope layer(store, 1, "layers.0");
  auto block = loaded.create<Block>("pre_norm");
  auto ffn = loaded.create<FeedForward>("gelu");
  auto pe = loaded.create<PositionalEncoding>("learned", {{"max_len", "4"}});
  block->build(layer, small_dims(), {kFfn});
  ffn->build(layer.child("ffn"), small_dims());
  pe->build(ParamScope(store, 1, "positions"), small_dims());
  EXPECT_TRUE(store.contains("layers.0.ffn.in.weight"));
  Graph g(reference_backend(), 1, 0, false, false);
  const Var x = pe->forward(g, g.constant(values({2, 3, 6})), 0);
  const Var y =
      block->forward(g, x, SublayerFunctions({kFfn}, every_role([&](Graph& gg, const Var& h) { return ffn->forward(gg, h); })));
  EXPECT_EQ(y.shape(), Shape({2, 3, 6}));
  EXPECT_NO_THROW(loaded.create<PositionalEncoding>("sinusoidal"));
  EXPECT_NO_THROW(loaded.create<FeedForward>("relu"));
  EXPECT_NO_THROW(loaded.create<Block>("post_norm"));
}

std::string plugins_listing(const std::string& kind) {
  std::ostringstream out, err;
  EXPECT_EQ(cli::run({"plugins", "--kind", kind}, out, err), cli::kExitOk) << err.str();
  return out.str();
}

TEST(ComponentPlugins, AblatePluginsPrintsTheirOptions) {
  const std::string ffn = plugins_listing("ffn");
  for (const char* s : {"ffn/relu", "ffn/gelu", "approximation  string {erf|tanh}, default erf: GELU form", "ffn/swiglu",
                        "ffn/geglu", "ffn/relu_squared", "hidden  int, default 0"})
    EXPECT_NE(ffn.find(s), std::string::npos) << s << "\n" << ffn;
  EXPECT_EQ(ffn.find("block/"), std::string::npos);
  const std::string pe = plugins_listing("positional_encoding");
  for (const char* s : {"positional_encoding/sinusoidal", "base  float, default 10000", "positional_encoding/none",
                        "positional_encoding/learned", "max_len  int, default 512"})
    EXPECT_NE(pe.find(s), std::string::npos) << s << "\n" << pe;
  const std::string block = plugins_listing("block");
  for (const char* s : {"block/post_norm", "block/pre_norm", "block/sandwich_norm", "block/parallel", "block/rezero",
                        "norm  string {layer_norm|rms_norm|scale_norm}, default layer_norm", "shared_norm  bool, default true"})
    EXPECT_NE(block.find(s), std::string::npos) << s << "\n" << block;
}

}  // namespace
}  // namespace ablate
