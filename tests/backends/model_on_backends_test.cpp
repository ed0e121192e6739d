// The Transformer on every backend plugin found (cudnn on a GPU machine), with every built-in
// position and each attention option (multi-query k/v, qk norm, logit softcap): its logits agree
// with the reference backend's, the causal mask and padding hold, and decoding over the KV cache
// equals decoding by recomputation on that backend. The op cases check each op alone; this checks
// that the model composes them the same way everywhere. Tiny random models, f32.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "backends/backend_test_util.hpp"
#include "framework/model/model_test_util.hpp"

namespace ablate::model::test {
namespace {

struct Variant {
  const char* block;
  const char* pe;
  Options attention;
};
std::string name_of(const Variant& v) {
  std::ostringstream s;
  s << v.block << "/" << v.pe;
  for (const auto& [k, value] : v.attention) s << " " << k << "=" << value;
  return s.str();
}

// Every built-in position with plain multi-head attention, then each attention option with a
// position that adds to the embeddings, one that rotates q and k and one that biases the logits.
std::vector<Variant> variants() {
  std::vector<Variant> out = {
      {"pre_norm", "sinusoidal", {}}, {"post_norm", "learned", {}},         {"pre_norm", "rotary", {}},
      {"post_norm", "alibi", {}},     {"pre_norm", "t5_relative_bias", {}}, {"post_norm", "t5_per_layer", {}},
      {"pre_norm", "none", {}}};
  for (const char* pe : {"sinusoidal", "rotary", "alibi"})
    for (const Options& o : {Options{{"kv_heads", "1"}}, Options{{"qk_norm", "rms_norm"}}, Options{{"logit_softcap", "2"}}})
      out.push_back({"pre_norm", pe, o});
  return out;
}

class ModelOnEveryBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(GetParam()); }
  Backend& be() { return *testing::builtin_backend(GetParam()); }
  Built build_on(Backend& backend, const ModelConfig& c, const Variant& v, std::uint64_t seed = 7) {
    return build(backend, c, v.block, v.pe, "gelu", seed, v.attention);
  }
};

TEST_P(ModelOnEveryBackend, LogitsAgreeWithTheReferenceBackend) {
  Backend& ref = *testing::builtin_backend("reference");
  // Two items of different lengths: the first is padded (in source and target).
  const std::vector<Example> lm = {{{}, {6, 7}}, {{}, {3, 4, 5, 6, 7, 8, 9}}},
                             s2s = {{{3, 4, 5}, {6, 7}}, {{3, 4, 5, 6, 7, 8, 9}, {6, 7, 8, 9, 10}}};
  for (const Arch arch : {Arch::Decoder, Arch::EncoderDecoder}) {
    const ModelConfig c = tiny(arch);
    const std::vector<Example>& examples = arch == Arch::Decoder ? lm : s2s;
    for (const Variant& v : variants()) {
      SCOPED_TRACE(name_of(v) + (arch == Arch::Decoder ? " decoder" : " encoder-decoder"));
      const Built here = build_on(be(), c, v), there = build_on(ref, c, v);
      const std::vector<float> got = logits_of(be(), *here.model, batch_of(be(), examples, c));  // [2, T, V]
      const std::vector<float> want = logits_of(ref, *there.model, batch_of(ref, examples, c));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-3 * std::abs(want[i])) << "logit " << i;
    }
  }
}

TEST_P(ModelOnEveryBackend, TheCausalMaskAndPaddingHold) {
  const ModelConfig lm = tiny(Arch::Decoder), s2s = tiny(Arch::EncoderDecoder);
  const std::size_t V = static_cast<std::size_t>(lm.vocab_size);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(name_of(v));
    // Changing tokens 3.. moves no logit of positions 0..3 (inputs bos,3,4,5), and some later one.
    const Built m = build_on(be(), lm, v);
    const std::vector<float> a = logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 6, 7, 8}}}, lm));
    const std::vector<float> b = logits_of(be(), *m.model, batch_of(be(), {{{}, {3, 4, 5, 9, 10, 3}}}, lm));
    for (std::size_t i = 0; i < 4 * V; ++i) ASSERT_NEAR(a[i], b[i], 1e-6f) << "logit " << i << " saw a later token";
    float moved = 0.0f;
    for (std::size_t i = 4 * V; i < a.size(); ++i) moved = std::max(moved, std::abs(a[i] - b[i]));
    EXPECT_GT(moved, 1e-4f) << "the changed tokens must change the later positions";
    // An item padded beside a longer one has the logits it has alone.
    const Built t = build_on(be(), s2s, v);
    const Example shortest{{3, 4, 5}, {6, 7}}, longer{{3, 4, 5, 6, 7, 8, 9}, {6, 7, 8, 9, 10}};
    const std::vector<float> alone = logits_of(be(), *t.model, batch_of(be(), {shortest}, s2s));           // [1, 3, V]
    const std::vector<float> padded = logits_of(be(), *t.model, batch_of(be(), {shortest, longer}, s2s));  // [2, 6, V]
    for (std::size_t i = 0; i < alone.size(); ++i) ASSERT_NEAR(alone[i], padded[i], 1e-5f) << "logit " << i;
  }
}

TEST_P(ModelOnEveryBackend, DecodingWithTheCacheEqualsRecomputation) {
  const ModelConfig lm = tiny(Arch::Decoder), s2s = tiny(Arch::EncoderDecoder);
  GenerateOptions greedy;
  greedy.max_tokens = 6;
  const std::vector<Example> sources = {{{3, 4, 5, 6}, {}}, {{7, 8, 9, 10, 4, 5, 6}, {}}, {{5}, {}}};
  for (const Variant& v : variants()) {
    SCOPED_TRACE(name_of(v));
    std::size_t tokens = 0;
    const Built m = build_on(be(), lm, v, 3);
    const auto cached = m.model->generate(be(), kPrompts, greedy);
    ASSERT_EQ(cached.size(), kPrompts.size());
    for (std::size_t i = 0; i < kPrompts.size(); ++i) {
      EXPECT_EQ(cached[i], naive_continuation(be(), *m.model, lm, kPrompts[i], greedy.max_tokens)) << "prompt " << i;
      tokens += cached[i].size();
    }
    const Built t = build_on(be(), s2s, v, 3);
    const auto decoded = t.model->greedy_decode(be(), batch_of(be(), sources, s2s), 7);
    ASSERT_EQ(decoded.size(), sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      EXPECT_EQ(decoded[i], naive_greedy(be(), *t.model, s2s, sources[i], 7)) << "source " << i;
      tokens += decoded[i].size();
    }
    EXPECT_GT(tokens, 0u) << "an untrained model should emit something other than eos at once";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, ModelOnEveryBackend, ::testing::ValuesIn(testing::builtin_backend_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ablate::model::test
