// Tests for the Transformer models (framework/model): the masks (a causal decoder cannot see the
// future; padding changes nothing), greedy decoding over the key/value cache against decoding by
// full recomputation, the classifier's pooling, the options that add or remove parameters, and
// the batch checks, also with positions that act inside attention (rotary, alibi).
// Tiny random models on the reference backend, components from the built-in plugins.
#include "model/transformer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "ablate/error.hpp"
#include "ablate/ops.hpp"
#include "ablate/testing/gradcheck.hpp"
#include "backends/backend_test_util.hpp"
#include "framework/model/model_test_util.hpp"

namespace ablate::model {
namespace {
using namespace test;  // NOLINT(google-build-using-namespace): the shared tiny-model helpers
using testing::builtin_backend;
using testing::builtin_registry;
using testing::host;

Backend& be() { return *builtin_backend("reference"); }

// An FFN that records the ModelDims each instance was built with, then is relu's.
struct DimsRecorder final : FeedForward {
  explicit DimsRecorder(std::vector<ModelDims>& seen) : seen_(seen), inner_(builtin_registry().create<FeedForward>("relu")) {}
  void build(const ParamScope& scope, const ModelDims& dims) override {
    seen_.push_back(dims);
    inner_->build(scope, dims);
  }
  Var forward(Graph& g, const Var& x) const override { return inner_->forward(g, x); }
  std::vector<ModelDims>& seen_;
  std::shared_ptr<FeedForward> inner_;
};

TEST(Transformer, EachComponentIsToldItsLayerAndItsStacksTrainedContext) {
  ModelConfig c = tiny(Arch::EncoderDecoder);
  c.encoder_layers = 2;
  c.decoder_layers = 3;
  c.source_context = 7;
  c.target_context = 9;
  std::vector<ModelDims> seen;
  ComponentFactory f = components("pre_norm", "sinusoidal", "relu");
  f.ffn = [&seen] { return std::make_shared<DimsRecorder>(seen); };
  ParameterStore store(be());
  Transformer model(c, f, store, 7);
  ASSERT_EQ(seen.size(), 5u) << "one FFN per layer";
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const bool decoder = i >= 2;
    EXPECT_EQ(seen[i].layer, decoder ? static_cast<std::int64_t>(i) - 2 : static_cast<std::int64_t>(i)) << i;
    EXPECT_EQ(seen[i].layers, decoder ? 3 : 2) << i;
    EXPECT_EQ(seen[i].context, decoder ? 9 : 7) << i;
    EXPECT_EQ(seen[i].causal, decoder) << i;
  }
}

// A post-norm block that, once per layer after the sublayers are built, records the parameters
// under its scope and halves the FFN's input weight (Block::init_sublayers).
struct InitRecorder final : Block {
  explicit InitRecorder(std::vector<std::vector<std::string>>& seen)
      : seen_(seen), inner_(builtin_registry().create<Block>("post_norm")) {}
  void build(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles) override {
    inner_->build(scope, dims, roles);
  }
  void init_sublayers(const ParamScope& scope, const ModelDims&, const std::vector<SublayerRole>&) override {
    std::vector<std::string> names;
    for (Parameter* p : scope.parameters()) names.push_back(p->name);
    seen_.push_back(names);
    scope.store().scale_value(scope.store().get(scope.name("ffn.in.weight")), 0.5f);
  }
  Var forward(Graph& g, const Var& x, const Sublayers& s) const override { return inner_->forward(g, x, s); }
  bool wants_final_norm() const override { return false; }
  NormKind norm_kind() const override { return NormKind::LayerNorm; }
  std::vector<std::vector<std::string>>& seen_;
  std::shared_ptr<Block> inner_;
};

TEST(Transformer, ABlockInitialisesItsSublayersOnceTheyAreBuilt) {
  const ModelConfig c = tiny(Arch::Decoder);
  std::vector<std::vector<std::string>> seen;
  ComponentFactory f = components("post_norm", "sinusoidal", "relu");
  f.block = [&seen] { return std::make_shared<InitRecorder>(seen); };
  ParameterStore store(be()), plain(be());
  Transformer model(c, f, store, 7);
  Transformer reference(c, components("post_norm", "sinusoidal", "relu"), plain, 7);
  ASSERT_EQ(seen.size(), 2u) << "once per layer";
  for (const char* sublayer :
       {"decoder.layers.1.self_attn.qkv.weight", "decoder.layers.1.ffn.out.weight", "decoder.layers.1.norm0.gamma"})
    EXPECT_NE(std::find(seen[1].begin(), seen[1].end(), sublayer), seen[1].end()) << sublayer << ": built before the hook";
  EXPECT_EQ(std::find(seen[1].begin(), seen[1].end(), "decoder.layers.0.ffn.in.weight"), seen[1].end()) << "its own layer only";
  const std::vector<float> halved = host(be(), store.get("decoder.layers.0.ffn.in.weight").value),
                           initial = host(be(), plain.get("decoder.layers.0.ffn.in.weight").value);
  for (std::size_t i = 0; i < halved.size(); ++i) EXPECT_FLOAT_EQ(halved[i], 0.5f * initial[i]);
}

TEST(Transformer, CausalDecoderCannotSeeTheFuture) {
  const ModelConfig c = tiny(Arch::Decoder);
  for (const auto& [block, pe] :
       {std::pair{"post_norm", "learned"}, std::pair{"pre_norm", "learned"}, std::pair{"pre_norm", "rotary"},
        std::pair{"post_norm", "alibi"}, std::pair{"pre_norm", "t5_relative_bias"}}) {
    Built m = build(be(), c, block, pe);
    const std::vector<float> a = logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 6, 7, 8}}}, c));
    const std::vector<float> b = logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 9, 10, 3}}}, c));  // tokens 3.. changed
    const std::size_t V = 11, unchanged = 4 * V;  // inputs bos,3,4,5 are equal: positions 0..3 must not move
    for (std::size_t i = 0; i < unchanged; ++i) ASSERT_EQ(a[i], b[i]) << block << "/" << pe << " logit " << i;
    bool later_changed = false;
    for (std::size_t i = unchanged; i < a.size(); ++i) later_changed |= a[i] != b[i];
    EXPECT_TRUE(later_changed) << "the changed tokens must change the later positions";
  }
}

TEST(Transformer, WithoutTheCausalMaskTheFutureLeaksIntoEarlierPositions) {
  ModelConfig c = tiny(Arch::Decoder);
  c.causal = false;
  Built m = build(be(), c, "pre_norm", "learned");
  const std::vector<float> a = logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 6, 7, 8}}}, c));
  const std::vector<float> b =
      logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 9, 10, 3}}}, c));  // only later tokens changed
  const std::size_t V = 11;
  for (std::size_t i = 0; i < V; ++i)
    if (a[i] != b[i]) return;  // position 0 (bos) moved: it attended to the changed tokens
  ADD_FAILURE() << "model.causal false: position 0 must see the later tokens";
}

TEST(Transformer, EmbeddingNormNormalisesTheEmbeddingsWithItsOwnEpsilon) {
  // No layers and an identity output projection: the logits are the embeddings after the norm.
  ModelConfig c = tiny(Arch::Encoder);
  c.encoder_layers = 0;
  c.tie_embeddings = false;
  c.embedding_norm = true;
  c.embedding_norm_eps = 1e-12f;
  Built m = build(be(), c, "pre_norm", "learned");
  ASSERT_TRUE(m.store->contains("encoder.embedding_norm.gamma"));
  ASSERT_TRUE(m.store->contains("encoder.embedding_norm.beta"));
  const std::int64_t D = c.dims.d_model, V = c.vocab_size;
  std::vector<float> identity(static_cast<std::size_t>(V * D), 0.0f);  // output.weight [V, D]: rows 0..D-1 = I
  for (std::int64_t i = 0; i < D; ++i) identity[static_cast<std::size_t>(i * D + i)] = 1.0f;
  be().copy_from_host(m.store->get("output.weight").value, identity.data());
  m.store->refresh_compute();

  const std::vector<float> out = logits_of(be(), *m.model, batch_of(be(), {{{3, 4, 5, 6}, {3, 4, 5, 6}}}, c));  // [1, 4, V]
  for (std::int64_t t = 0; t < 4; ++t) {
    double mean = 0.0, var = 0.0;
    for (std::int64_t i = 0; i < D; ++i) mean += out[static_cast<std::size_t>(t * V + i)] / static_cast<double>(D);
    for (std::int64_t i = 0; i < D; ++i)
      var += std::pow(out[static_cast<std::size_t>(t * V + i)] - mean, 2) / static_cast<double>(D);
    EXPECT_NEAR(mean, 0.0, 1e-5) << "position " << t;
    EXPECT_NEAR(var, 1.0, 1e-4) << "position " << t;
  }
  c.embedding_norm = false;
  EXPECT_EQ(m.store->numel(), build(be(), c, "pre_norm", "learned").store->numel() + 2 * D);
}

// Multiplies parameter `name` of a built model by `factor` (its value and compute copy).
void scale_parameter(Built& m, const std::string& name, float factor) {
  Parameter& p = m.store->get(name);
  std::vector<float> host(static_cast<std::size_t>(p.value.numel()));
  be().copy_to_host(host.data(), p.value);
  for (float& v : host) v *= factor;
  be().copy_from_host(p.value, host.data());
  m.store->refresh_compute();
}

// FixNorm: with no layers and an identity output projection the logits are the embeddings, of
// length L, times the projection's rows, each of length L too: sum of squares L^4 per position;
// scaling a table changes nothing then, and something without FixNorm (tied: both ends at once).
TEST(Transformer, FixNormGivesEveryWordEmbeddingItsLengthInTheTablesAndTheProjection) {
  ModelConfig c = tiny(Arch::Encoder);
  c.encoder_layers = 0;
  c.tie_embeddings = false;
  c.scale_embedding = false;
  c.fixnorm = 2.0f;
  Built m = build(be(), c, "pre_norm", "none");
  const std::int64_t D = c.dims.d_model, V = c.vocab_size;
  std::vector<float> identity(static_cast<std::size_t>(V * D), 0.0f);  // output.weight [V, D]: rows 0..D-1 = 3 I
  for (std::int64_t i = 0; i < D; ++i) identity[static_cast<std::size_t>(i * D + i)] = 3.0f;
  identity[static_cast<std::size_t>((V - 1) * D)] = 1e-3f;  // a short row, lengthened too
  be().copy_from_host(m.store->get("output.weight").value, identity.data());
  m.store->refresh_compute();
  const DeviceBatch batch = batch_of(be(), {{{3, 4, 5, 6}, {3, 4, 5, 6}}}, c);
  const std::vector<float> out = logits_of(be(), *m.model, batch);  // [1, 4, V]
  for (std::int64_t t = 0; t < 4; ++t) {
    double squares = 0.0;
    for (std::int64_t i = 0; i < D; ++i) squares += std::pow(out[static_cast<std::size_t>(t * V + i)], 2);
    EXPECT_NEAR(squares, 16.0, 1e-3) << "position " << t << ": |x| = |row| = 2";
    EXPECT_NEAR(out[static_cast<std::size_t>(t * V + V - 1)], out[static_cast<std::size_t>(t * V)], 1e-5)
        << "the short row (1e-3 e_0) and row 0 (3 e_0) are both 2 e_0";
  }
  scale_parameter(m, "encoder.embedding.weight", 5.0f);
  const std::vector<float> scaled = logits_of(be(), *m.model, batch);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(scaled[i], out[i], 1e-5) << "logit " << i;
  for (const float length : {1.5f, 0.0f}) {  // tied: the decoder's table is both ends
    ModelConfig tied = tiny(Arch::Decoder);
    tied.fixnorm = length;
    Built d = build(be(), tied, "pre_norm", "learned");
    const DeviceBatch b = batch_of(be(), {{{}, {3, 4, 5, 6}}}, tied);
    const std::vector<float> before = logits_of(be(), *d.model, b);
    scale_parameter(d, "decoder.embedding.weight", 5.0f);
    const std::vector<float> after = logits_of(be(), *d.model, b);
    double moved = 0.0;
    for (std::size_t i = 0; i < before.size(); ++i) moved = std::max(moved, std::abs(double(after[i]) - before[i]));
    if (length > 0)
      EXPECT_LT(moved, 1e-4) << "FixNorm: the tied table's scale changes no logit";
    else
      EXPECT_GT(moved, 1e-2) << "without FixNorm the table's scale moves the logits";
  }
}

TEST(Transformer, PaddingDoesNotChangeTheValidPositions) {
  const ModelConfig c = tiny(Arch::EncoderDecoder);
  for (const char* pe : {"sinusoidal", "rotary", "alibi", "t5_relative_bias"}) {
    Built m = build(be(), c, "pre_norm", pe);
    const Example shortest{{3, 4, 5}, {6, 7}};
    const Example longer{{3, 4, 5, 6, 7, 8, 9}, {6, 7, 8, 9, 10}};
    const std::vector<float> alone = logits_of(be(), *m.model, batch_of(be(), {shortest}, c));  // [1, 3, V]
    const std::vector<float> padded =
        logits_of(be(), *m.model, batch_of(be(), {shortest, longer}, c));  // [2, 6, V]: item 0 padded
    for (std::size_t i = 0; i < alone.size(); ++i) EXPECT_NEAR(alone[i], padded[i], 1e-5f) << pe << " logit " << i;
  }
}

// ALiBi's slopes are the paper's: 2^-1 .. 2^-8 for 8 heads; for 6 heads those of 4 heads
// (2^-2, 2^-4, 2^-6, 2^-8), then every other one of 8 (2^-1, 2^-3).
TEST(Transformer, AlibiSlopesAreThePapers) {
  for (const auto& [heads, want] :
       {std::pair<std::int64_t, std::vector<float>>{8,
                                                    {0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f, 0.0078125f, 0.00390625f}},
        std::pair<std::int64_t, std::vector<float>>{6, {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}}}) {
    auto alibi = builtin_registry().create<PositionalEncoding>("alibi");
    ModelDims dims;
    dims.d_model = 8 * heads;
    dims.heads = heads;
    ParameterStore store(be());
    alibi->build(ParamScope(store, 1, "positions"), dims);
    ASSERT_TRUE(capabilities_of(*alibi).biases_logits);
    EXPECT_EQ(store.all().size(), 0u);  // no parameters
    Graph g(be(), 1, 0, false, false);
    const PositionalEncoding::LogitBias b = alibi->logit_bias(g, 3, 5, 0, 0);
    EXPECT_FALSE(b.bias.defined());
    EXPECT_EQ(host(be(), b.slopes), want) << heads << " heads";
  }
}

// Rotary positions act inside self-attention only: nothing is added to the embeddings, no
// parameter is made, and yet the order of the tokens matters (a model without positions would
// give a permutation-equivariant encoder).
TEST(Transformer, RotaryPositionsMakeOrderMatterWithoutParameters) {
  ModelConfig c = tiny(Arch::Encoder);
  Built rotary = build(be(), c, "pre_norm", "rotary");
  Built sinusoidal = build(be(), c, "pre_norm", "sinusoidal");
  EXPECT_EQ(rotary.store->numel(), sinusoidal.store->numel());  // neither has position parameters
  const std::vector<float> a = logits_of(be(), *rotary.model, batch_of(be(), {{{3, 4, 5, 6}, {3, 4, 5, 6}}}, c));  // [1, 4, V]
  const std::vector<float> b = logits_of(be(), *rotary.model, batch_of(be(), {{{6, 5, 4, 3}, {6, 5, 4, 3}}}, c));  // reversed
  const std::size_t V = 11;
  // Without positions, position 0 of b (token 6) would equal position 3 of a (token 6).
  double difference = 0.0;
  for (std::size_t v = 0; v < V; ++v) difference += std::abs(a[3 * V + v] - b[v]);
  EXPECT_GT(difference, 1e-4) << "the token's position must change its output";
}

TEST(Transformer, GreedyDecodingWithTheCacheEqualsRecomputation) {
  ModelConfig c = tiny(Arch::EncoderDecoder);
  for (const auto& [block, pe] :
       {std::pair{"post_norm", "sinusoidal"}, std::pair{"pre_norm", "learned"}, std::pair{"post_norm", "rotary"},
        std::pair{"pre_norm", "alibi"}, std::pair{"post_norm", "t5_relative_bias"}, std::pair{"pre_norm", "t5_per_layer"}}) {
    for (std::uint64_t seed : {3u, 11u}) {
      Built m = build(be(), c, block, pe, "gelu", seed);
      const std::vector<Example> examples = {{{3, 4, 5, 6}, {}}, {{7, 8, 9, 10, 4, 5, 6}, {}}, {{5}, {}}};
      const std::size_t max_len = 9;
      const auto cached = m.model->greedy_decode(be(), batch_of(be(), examples, c), max_len);
      ASSERT_EQ(cached.size(), examples.size());
      std::size_t tokens = 0;
      for (std::size_t i = 0; i < examples.size(); ++i) {
        EXPECT_EQ(cached[i], naive_greedy(be(), *m.model, c, examples[i], max_len))
            << block << "/" << pe << " seed " << seed << " item " << i;
        tokens += cached[i].size();
      }
      EXPECT_GT(tokens, 0u) << "an untrained model should emit something other than eos at once";
    }
  }
}

// Cached decoding computes what the full forward computes, number for number: the cross-attention
// probabilities of decoding step t equal row t of the teacher-forced pass over the decoded tokens,
// for positions added, rotated or biasing the logits (ALiBi's distances need the query's absolute
// position at every step). The model is one whose decoded tokens differ (an untrained model often
// repeats one token, and identical inputs would hide a wrong position).
TEST(Transformer, DecodingStepsEqualTheFullPassRowByRow) {
  const ModelConfig c = tiny(Arch::EncoderDecoder);  // 2 heads: ALiBi slopes 2^-4, 2^-8
  const Example src{{3, 4, 5, 6, 7}, {}};
  for (const char* pe : {"sinusoidal", "rotary", "alibi", "t5_per_layer"}) {
    SCOPED_TRACE(pe);
    std::optional<Built> m;
    ForwardCapture steps;
    std::vector<std::int32_t> out;
    for (std::uint64_t seed = 1; seed <= 40 && !m; ++seed) {
      Built candidate = build(be(), c, "pre_norm", pe, "relu", seed);
      ForwardCapture captured;
      const auto decoded = candidate.model->greedy_decode(be(), batch_of(be(), {src}, c), 6, &captured)[0];
      std::set<std::int32_t> inputs(decoded.begin(), decoded.end());
      inputs.insert(TaskInfo::kBos);
      if (decoded.size() >= 3 && inputs.size() >= 3) {
        m = std::move(candidate);
        steps = std::move(captured);
        out = decoded;
      }
    }
    ASSERT_TRUE(m) << "no seed in 1..40 decodes 3 tokens of which 2 differ from each other and from bos";
    ForwardCapture full;
    Graph g(be(), 1, 0, false, false);
    m->model->logits(g, batch_of(be(), {{src.src, out}}, c), &full);  // decoder input: bos + the decoded tokens
    std::size_t compared = 0;
    for (const auto& step : steps.attention) {
      if (step.step > static_cast<std::int64_t>(out.size())) continue;  // the step that chose eos is not in the input
      const auto it = std::find_if(full.attention.begin(), full.attention.end(), [&](const ForwardCapture::Attention& a) {
        return a.stack == "decoder" && a.kind == "cross" && a.layer == step.layer;
      });
      ASSERT_NE(it, full.attention.end());
      const std::vector<float> row = host(be(), step.probs), all = host(be(), it->probs);  // [1, H, 1, S], [1, H, T, S]
      const std::int64_t H = c.dims.heads, T = it->probs.shape()[2], S = it->probs.shape()[3];
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t j = 0; j < S; ++j)
          EXPECT_NEAR(row[static_cast<std::size_t>(h * S + j)], all[static_cast<std::size_t>((h * T + step.step) * S + j)], 1e-5f)
              << "layer " << step.layer << " step " << step.step << " head " << h << " key " << j;
      ++compared;
    }
    EXPECT_GE(compared, 2 * out.size()) << "every layer at every step";
  }
}

// An attention that computes mha's output but drops call.mask.probs (as a composed variant that
// forgets the logger would).
struct ProbsDropper final : Attention {
  ProbsDropper() : inner_(builtin_registry().create<Attention>("mha")) {}
  void build(const ParamScope& scope, const ModelDims& dims, AttentionRole role) override { inner_->build(scope, dims, role); }
  Var forward(Graph& g, const AttentionCall& call) const override {
    AttentionCall without = call;
    without.mask.probs = nullptr;
    return inner_->forward(g, without);
  }
  std::shared_ptr<Attention> inner_;
};

TEST(Transformer, AnAttentionThatDropsTheLoggersProbabilitiesIsNamed) {
  const ModelConfig c = tiny(Arch::Decoder);
  ComponentFactory f = components("pre_norm", "sinusoidal", "relu");
  f.attention = [] { return std::make_shared<ProbsDropper>(); };
  ParameterStore store(be());
  Transformer model(c, f, store, 7);
  const DeviceBatch batch = batch_of(be(), {{{}, {3, 4, 5}}}, c);
  Graph plain(be(), 1, 0, /*training=*/false, /*grad=*/false);
  EXPECT_NO_THROW(model.logits(plain, batch)) << "without capture nothing is asked";
  ForwardCapture capture;
  Graph g(be(), 1, 0, /*training=*/false, /*grad=*/false);
  try {
    model.logits(g, batch, &capture);
    FAIL() << "the missing probabilities were not said";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("did not hand over its attention probabilities"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("log.attention.every: 0"), std::string::npos) << e.hint();
  }
}

TEST(Transformer, CaptureRecordsEveryAttentionRespectingTheMasks) {
  const ModelConfig c = tiny(Arch::EncoderDecoder);
  Built m = build(be(), c, "pre_norm");
  const std::vector<Example> examples = {{{3, 4, 5, 6, 7}, {8, 9, 10}}, {{3, 4}, {5}}};  // item 1 padded: S 5 -> 2, T 4 -> 2
  const DeviceBatch batch = batch_of(be(), examples, c);
  ForwardCapture capture;
  Graph g(be(), 1, 0, /*training=*/false, /*grad=*/false);
  const std::vector<float> with = host(be(), m.model->logits(g, batch, &capture).value());
  EXPECT_EQ(with, logits_of(be(), *m.model, batch)) << "capturing changes nothing";
  ASSERT_EQ(capture.attention.size(), 6u);  // encoder self x2, then per decoder layer: self, cross
  ASSERT_EQ(capture.residuals.size(), 4u);
  const std::int64_t src_len[2] = {5, 2}, tgt_len[2] = {4, 2};
  for (const auto& a : capture.attention) {
    const std::vector<float> p = host(be(), a.probs);  // [B, H, T, S]
    const Shape& sh = a.probs.shape();
    const bool enc = a.stack == "encoder", self = a.kind == "self";
    EXPECT_EQ(sh[2], enc ? 5 : 4);
    EXPECT_EQ(sh[3], enc || !self ? 5 : 4);
    for (std::int64_t b = 0; b < sh[0]; ++b)
      for (std::int64_t h = 0; h < sh[1]; ++h)
        for (std::int64_t q = 0; q < sh[2]; ++q) {
          if (q >= (enc ? src_len[b] : tgt_len[b])) continue;  // padded queries: their outputs carry no loss
          double sum = 0.0;
          for (std::int64_t k = 0; k < sh[3]; ++k) {
            const float v = p[static_cast<std::size_t>(((b * sh[1] + h) * sh[2] + q) * sh[3] + k)];
            const bool padded = k >= (enc || !self ? src_len[b] : tgt_len[b]);
            const bool future = !enc && self && k > q;
            if (padded || future) {
              EXPECT_EQ(v, 0.0f) << a.stack << "/" << a.kind << " b" << b << " q" << q << " k" << k;
            }
            sum += v;
          }
          EXPECT_NEAR(sum, 1.0, 1e-5) << a.stack << "/" << a.kind << " layer " << a.layer << " b" << b << " q" << q;
        }
  }

  ForwardCapture cross;
  const auto decoded = m.model->greedy_decode(be(), batch_of(be(), {examples[0]}, c), 6, &cross);
  ASSERT_FALSE(cross.attention.empty());
  const std::size_t steps = cross.attention.size() / 2;  // 2 decoder layers per step
  EXPECT_EQ(cross.attention.size(), 2 * steps);
  EXPECT_GE(steps, decoded[0].size());  // one step per token, plus the one that emitted eos (unless cut at max_len)
  for (const auto& a : cross.attention) {
    EXPECT_EQ(a.kind, "cross");
    EXPECT_EQ(a.probs.shape(), (Shape{1, 2, 1, 5}));
    const std::vector<float> p = host(be(), a.probs);
    EXPECT_NEAR(p[0] + p[1] + p[2] + p[3] + p[4], 1.0f, 1e-5f);
  }
  EXPECT_EQ(cross.attention.back().step, static_cast<std::int64_t>(steps) - 1);
}

TEST(Transformer, ClassifierPoolsOnlyValidPositions) {
  for (Pooling pooling : {Pooling::Mean, Pooling::First}) {
    ModelConfig c = tiny(Arch::Encoder);
    c.num_classes = 3;
    c.pooling = pooling;
    Built m = build(be(), c, "pre_norm");
    const Example a{{3, 4, 5}, {2}}, b{{3, 4, 5, 6, 7, 8}, {1}};
    const std::vector<float> alone = logits_of(be(), *m.model, batch_of(be(), {a}, c));    // [1, 1, 3]
    const std::vector<float> both = logits_of(be(), *m.model, batch_of(be(), {a, b}, c));  // [2, 1, 3]
    ASSERT_EQ(alone.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(alone[i], both[i], 1e-5f);
    const auto classes = m.model->greedy_decode(be(), batch_of(be(), {a, b}, c), 1);
    ASSERT_EQ(classes.size(), 2u);
    EXPECT_EQ(classes[0].size(), 1u);
  }
  ModelConfig c = tiny(Arch::Encoder);
  c.num_classes = 3;
  Built m = build(be(), c);
  EXPECT_THROW(batch_of(be(), {{{3, 4}, {5}}}, c), Error);     // class 5 out of [0, 3)
  EXPECT_THROW(batch_of(be(), {{{3, 4}, {1, 2}}}, c), Error);  // two target tokens
}

// target_tokens counts the positions the loss scores: a cut window's tokens without an eos after
// them, a whole sequence's with it (the weights of micro-batches, tokens/s and train.budget.tokens).
TEST(Transformer, DecoderTargetTokensCountWhatTheLossScores) {
  const ModelConfig c = tiny(Arch::Decoder);
  Example cut{{}, {4, 5, 6}};
  cut.cut = true;
  EXPECT_EQ(batch_of(be(), {cut, {{}, {7}}}, c).target_tokens, 3 + 2);
  EXPECT_EQ(batch_of(be(), {{{}, {4, 5, 6}}}, c).target_tokens, 4);
}

TEST(Transformer, EncoderTaggingNeedsTargetsAsLongAsSources) {
  const ModelConfig c = tiny(Arch::Encoder);
  Built m = build(be(), c);
  const DeviceBatch ok = batch_of(be(), {{{3, 4, 5}, {5, 4, 3}}, {{6}, {6}}}, c);
  EXPECT_EQ(ok.target_tokens, 4);
  const std::vector<float> logits = logits_of(be(), *m.model, ok);
  EXPECT_EQ(logits.size(), 2u * 3u * 11u);  // [B, S, V]
  const auto tags = m.model->greedy_decode(be(), ok, 3);
  EXPECT_EQ(tags[0].size(), 3u);
  EXPECT_EQ(tags[1].size(), 1u);
  try {
    batch_of(be(), {{{3, 4, 5}, {5, 4}}}, c);
    FAIL() << "a shorter target must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 tokens and a target of 2"), std::string::npos) << e.what();
  }
}

TEST(Transformer, ArchitectureAndTaskMismatchIsAnError) {
  const ModelConfig lm = tiny(Arch::Decoder), s2s = tiny(Arch::EncoderDecoder);
  EXPECT_THROW(batch_of(be(), {{{3, 4}, {5}}}, lm), Error);  // an LM has no source
  EXPECT_THROW(batch_of(be(), {{{}, {5}}}, s2s), Error);     // seq2seq needs one
}

TEST(Transformer, OptionsDecideTheParameters) {
  ModelConfig c = tiny(Arch::EncoderDecoder);
  Built tied = build(be(), c, "pre_norm");
  EXPECT_TRUE(tied.store->contains("decoder.layers.1.cross_attn.kv.weight"));
  EXPECT_TRUE(tied.store->contains("encoder.layers.0.self_attn.qkv.bias"));
  EXPECT_TRUE(tied.store->contains("encoder.final_norm.gamma"));
  EXPECT_TRUE(tied.store->contains("decoder.final_norm.gamma"));
  EXPECT_FALSE(tied.store->contains("output.weight"));
  EXPECT_FALSE(tied.store->contains("encoder.layers.0.cross_attn.q.weight"));

  c.tie_embeddings = false;
  c.dims.qkv_bias = false;
  c.dims.out_bias = false;
  c.final_norm = false;
  Built untied = build(be(), c, "pre_norm");
  EXPECT_TRUE(untied.store->contains("output.weight"));
  EXPECT_TRUE(untied.store->contains("output.bias"));
  EXPECT_FALSE(untied.store->contains("encoder.layers.0.self_attn.qkv.bias"));
  EXPECT_FALSE(untied.store->contains("encoder.layers.0.self_attn.out.bias"));
  EXPECT_FALSE(untied.store->contains("decoder.final_norm.gamma"));
  // removed: self qkv [3D] and out [D] biases of both stacks, cross q [D], kv [2D], out [D] biases: 12 L D
  const std::int64_t D = 8, V = 11, L = 2, removed_biases = 12 * L * D;
  EXPECT_EQ(untied.store->numel(), tied.store->numel() + V * D + V - removed_biases - 2 * 2 * D);

  c = tiny(Arch::EncoderDecoder);
  Built post = build(be(), c, "post_norm");  // post-norm stacks end normalised: no final norm
  EXPECT_FALSE(post.store->contains("encoder.final_norm.gamma"));
}

// share_embeddings: the decoder reads the encoder's table (and, tied, the output projection does
// too), so the three uses are one parameter, and its gradient gathers all three (finite differences).
TEST(Transformer, SharedEmbeddingsAreOneTableForSourceTargetAndOutput) {
  ModelConfig c = tiny(Arch::EncoderDecoder);
  const Built two = build(be(), c, "pre_norm", "sinusoidal", "gelu");  // gelu: no kink for finite differences
  c.share_embeddings = true;
  Built one = build(be(), c, "pre_norm", "sinusoidal", "gelu");
  EXPECT_TRUE(one.store->contains("encoder.embedding.weight"));
  EXPECT_FALSE(one.store->contains("decoder.embedding.weight"));
  EXPECT_EQ(one.store->numel(), two.store->numel() - 11 * 8);
  const DeviceBatch batch = batch_of(be(), {{{3, 4, 5}, {6, 7}}, {{8}, {9, 10, 3}}}, c);
  const auto r = testing::parameter_gradcheck(be(), *one.store, [&](Graph& g) { return one.model->logits(g, batch); });
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.checked, 0);
  EXPECT_THROW(build(be(),
                     [&] {
                       ModelConfig lm = tiny(Arch::Decoder);
                       lm.share_embeddings = true;
                       return lm;
                     }()),
               Error)
      << "a decoder has one table: nothing to share";
}

TEST(Transformer, EmbeddingScaleAndDropoutOptionsChangeTheOutput) {
  ModelConfig c = tiny(Arch::Decoder);
  const std::vector<Example> ex = {{{}, {3, 4, 5}}};
  const std::vector<float> scaled = logits_of(be(), *build(be(), c).model, batch_of(be(), ex, c));
  c.scale_embedding = false;
  const std::vector<float> unscaled = logits_of(be(), *build(be(), c).model, batch_of(be(), ex, c));
  EXPECT_NE(scaled, unscaled);

  c.embedding_dropout = 0.5f;
  Built m = build(be(), c);
  const DeviceBatch batch = batch_of(be(), ex, c);
  EXPECT_EQ(logits_of(be(), *m.model, batch), unscaled) << "dropout is off outside training";
  Graph g(be(), 1, 1, /*training=*/true, /*grad=*/false);
  EXPECT_NE(host(be(), m.model->logits(g, batch).value()), unscaled) << "embedding dropout is on in training";
}

TEST(Transformer, GreedyContinuationWithTheCacheEqualsRecomputation) {
  const ModelConfig c = tiny(Arch::Decoder);
  GenerateOptions greedy;
  greedy.max_tokens = 8;
  for (const auto& [block, pe] :
       {std::pair{"post_norm", "sinusoidal"}, std::pair{"pre_norm", "learned"}, std::pair{"post_norm", "rotary"},
        std::pair{"pre_norm", "alibi"}, std::pair{"post_norm", "t5_relative_bias"}, std::pair{"pre_norm", "t5_per_layer"}}) {
    for (std::uint64_t seed : {3u, 11u}) {
      Built m = build(be(), c, block, pe, "gelu", seed);
      // Prompts of different lengths: one causal pass over the shortest (bos alone), then steps in
      // which the longer prompts still feed their own tokens at positions 1..6.
      const auto cached = m.model->generate(be(), kPrompts, greedy);
      ASSERT_EQ(cached.size(), kPrompts.size());
      std::size_t tokens = 0;
      for (std::size_t i = 0; i < kPrompts.size(); ++i) {
        EXPECT_EQ(cached[i], naive_continuation(be(), *m.model, c, kPrompts[i], greedy.max_tokens))
            << block << "/" << pe << " seed " << seed << " prompt " << i;
        EXPECT_LE(cached[i].size(), 8u);
        tokens += cached[i].size();
      }
      EXPECT_GT(tokens, 0u) << "an untrained model should emit something other than eos at once";
      for (std::size_t i = 0; i < kPrompts.size(); ++i)  // alone, a prompt has no shorter one to wait for
        EXPECT_EQ(m.model->generate(be(), {kPrompts[i]}, greedy)[0], cached[i]) << block << "/" << pe << " prompt " << i;
    }
  }
}

TEST(Transformer, SampledContinuationIsReproducibleAndChangesWithTheKey) {
  const ModelConfig c = tiny(Arch::Decoder);
  Built m = build(be(), c, "pre_norm", "learned");
  GenerateOptions o;
  o.max_tokens = 12;
  o.temperature = 1.5;  // flat: samples stray from the argmax
  o.key = {1, 40, 7};
  const auto a = m.model->generate(be(), kPrompts, o);
  EXPECT_EQ(m.model->generate(be(), kPrompts, o), a) << "a function of (key, prompt, model)";
  GenerateOptions other_seed = o, other_step = o;
  other_seed.key.seed = 2;
  other_step.key.step = 41;
  EXPECT_NE(m.model->generate(be(), kPrompts, other_seed), a);
  EXPECT_NE(m.model->generate(be(), kPrompts, other_step), a);
  GenerateOptions greedy;
  greedy.max_tokens = 12;
  const auto argmax = m.model->generate(be(), kPrompts, greedy);
  EXPECT_NE(a, argmax) << "sampling at temperature 1.5 differs from greedy somewhere";
  GenerateOptions cold = o;
  cold.temperature = 1e-4;
  EXPECT_EQ(m.model->generate(be(), kPrompts, cold), argmax) << "temperature -> 0 is greedy";
  GenerateOptions top1 = o;
  top1.top_k = 1;
  EXPECT_EQ(m.model->generate(be(), kPrompts, top1), argmax) << "top_k 1 is greedy at any temperature";
  GenerateOptions top3 = o;
  top3.top_k = 3;
  EXPECT_NE(m.model->generate(be(), kPrompts, top3), argmax);
}

TEST(Transformer, ContinuationStopsAtEosAndNeverChoosesPadOrBos) {
  ModelConfig c = tiny(Arch::Decoder);
  c.tie_embeddings = false;  // an output bias to steer with
  Built m = build(be(), c, "pre_norm");
  Parameter& bias = m.store->get("output.bias");
  const auto set_bias = [&](std::vector<float> b) {
    be().copy_from_host(bias.value, b.data());
    m.store->refresh_compute();
  };
  std::vector<float> b(static_cast<std::size_t>(c.vocab_size), 0.0f);
  b[TaskInfo::kPad] = b[TaskInfo::kBos] = 1e4f;  // overwhelmingly likely, and never generated
  b[7] = 50.0f;                                  // the likeliest of the others, far above eos
  set_bias(b);
  GenerateOptions o;
  o.max_tokens = 6;
  for (double temperature : {0.0, 1.0}) {
    o.temperature = temperature;
    for (const auto& out : m.model->generate(be(), kPrompts, o))
      EXPECT_EQ(out, (std::vector<std::int32_t>(6, 7))) << "temperature " << temperature << ": no eos, max_tokens tokens";
  }
  b[TaskInfo::kEos] = 2e4f;
  set_bias(b);
  for (const auto& out : m.model->generate(be(), kPrompts, o)) EXPECT_TRUE(out.empty()) << "eos first: nothing generated";
  o.max_tokens = 0;
  EXPECT_EQ(m.model->generate(be(), kPrompts, o), std::vector<std::vector<std::int32_t>>(kPrompts.size()));
}

TEST(Transformer, ContinuationNeedsACausalDecoder) {
  GenerateOptions o;
  o.max_tokens = 3;
  const ModelConfig s2s = tiny(Arch::EncoderDecoder);
  EXPECT_THROW(build(be(), s2s).model->generate(be(), kPrompts, o), Error);
  ModelConfig leaky = tiny(Arch::Decoder);
  leaky.causal = false;
  try {
    build(be(), leaky).model->generate(be(), kPrompts, o);
    FAIL() << "a non-causal decoder cannot continue token by token";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not causal"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      build(be(), tiny(Arch::Decoder)).model->greedy_decode(be(), batch_of(be(), {{{}, {3, 4}}}, tiny(Arch::Decoder)), 4), Error)
      << "greedy_decode has no source to decode for a decoder-only model";
}

// Grouped-query attention: kv_heads = heads is multi-head attention bit for bit (the same
// parameters and logits); fewer k/v heads shrink the k/v projections, and the model still hides
// the future and decodes over its (smaller) cache exactly as by recomputation.
TEST(Transformer, GroupedKeyValueHeads) {
  ModelConfig c = tiny(Arch::Decoder);
  c.dims.heads = 4;
  const Built mha = build(be(), c, "pre_norm", "sinusoidal", "relu", 5);
  const Built same = build(be(), c, "pre_norm", "sinusoidal", "relu", 5, {{"kv_heads", "4"}});
  const DeviceBatch batch = batch_of(be(), {{{}, {3, 4, 5, 6, 7}}}, c);
  EXPECT_EQ(logits_of(be(), *same.model, batch), logits_of(be(), *mha.model, batch));
  EXPECT_EQ(same.store->numel(), mha.store->numel());
  const std::int64_t D = c.dims.d_model, Dh = D / 4;
  for (const char* kv : {"2", "1"}) {
    SCOPED_TRACE(std::string("kv_heads ") + kv);
    const Built gqa = build(be(), c, "pre_norm", "rotary", "relu", 5, {{"kv_heads", kv}});
    const std::int64_t K = std::stoll(kv) * Dh;
    EXPECT_EQ(gqa.store->get("decoder.layers.0.self_attn.qkv.weight").value.shape(), Shape({D + 2 * K, D}));
    const std::vector<float> a = logits_of(be(), *gqa.model, batch_of(be(), {{{}, {3, 4, 5, 6, 7, 8}}}, c));
    const std::vector<float> b = logits_of(be(), *gqa.model, batch_of(be(), {{{}, {3, 4, 5, 9, 10, 3}}}, c));
    for (std::size_t i = 0; i < 4 * 11; ++i) ASSERT_EQ(a[i], b[i]) << "logit " << i;  // bos,3,4,5 unchanged
    GenerateOptions greedy;
    greedy.max_tokens = 6;
    const auto cached = gqa.model->generate(be(), kPrompts, greedy);
    for (std::size_t i = 0; i < kPrompts.size(); ++i)
      EXPECT_EQ(cached[i], naive_continuation(be(), *gqa.model, c, kPrompts[i], greedy.max_tokens)) << "prompt " << i;
  }
  ModelConfig s2s = tiny(Arch::EncoderDecoder);
  s2s.dims.heads = 4;
  const Built gqa = build(be(), s2s, "post_norm", "alibi", "relu", 5, {{"kv_heads", "2"}});
  EXPECT_EQ(gqa.store->get("decoder.layers.0.cross_attn.kv.weight").value.shape(), Shape({2 * 2 * Dh, D}));
  const std::vector<Example> examples = {{{3, 4, 5, 6}, {}}, {{7, 8, 9, 10, 4, 5, 6}, {}}};
  const auto cached = gqa.model->greedy_decode(be(), batch_of(be(), examples, s2s), 7);
  for (std::size_t i = 0; i < examples.size(); ++i)
    EXPECT_EQ(cached[i], naive_greedy(be(), *gqa.model, s2s, examples[i], 7)) << i;
}

}  // namespace
}  // namespace ablate::model
