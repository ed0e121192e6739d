// Tiny random Transformers for the model tests, on any backend: the components from the built-in
// plugins, a batch uploaded to the backend, the logits read back, and greedy decoding by full
// recomputation (what the KV cache must reproduce). Shared by transformer_test.cpp (reference
// backend) and tests/backends/model_on_backends_test.cpp (every backend plugin found).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend_test_util.hpp"
#include "model/transformer.hpp"

namespace ablate::model::test {

using Options = std::map<std::string, std::string>;

// Components by name: "learned" with max_len 32; "t5_per_layer" is t5_relative_bias with a table
// per layer; `attention` are mha's options.
inline ComponentFactory components(const std::string& block, const std::string& pe, const std::string& ffn,
                                   const Options& attention = {}) {
  ComponentFactory f;
  f.block = [block] { return testing::builtin_registry().create<Block>(block); };
  f.attention = [attention] { return testing::builtin_registry().create<Attention>("mha", attention); };
  f.positional_encoding = [pe] {
    if (pe == "t5_per_layer")
      return testing::builtin_registry().create<PositionalEncoding>("t5_relative_bias", {{"per_layer", "true"}});
    return testing::builtin_registry().create<PositionalEncoding>(pe, pe == "learned" ? Options{{"max_len", "32"}} : Options{});
  };
  f.ffn = [ffn] { return testing::builtin_registry().create<FeedForward>(ffn); };
  return f;
}

// D 8, 2 heads, F 16, two layers per stack, V 11, no dropout.
inline ModelConfig tiny(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.dims.d_model = 8;
  c.dims.heads = 2;
  c.dims.d_ff = 16;
  c.dims.dropout = 0.0f;
  c.dims.attention_dropout = 0.0f;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.vocab_size = 11;
  c.embedding_dropout = 0.0f;
  return c;
}

struct Built {
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<Transformer> model;
};
inline Built build(Backend& be, const ModelConfig& c, const std::string& block = "post_norm",
                   const std::string& pe = "sinusoidal", const std::string& ffn = "relu", std::uint64_t seed = 7,
                   const Options& attention = {}) {
  Built b;
  b.store = std::make_unique<ParameterStore>(be);
  b.model = std::make_unique<Transformer>(c, components(block, pe, ffn, attention), *b.store, seed);
  return b;
}

inline DeviceBatch batch_of(Backend& be, const std::vector<Example>& examples, const ModelConfig& c) {
  return upload_batch(be, make_batch(examples), c, DType::F32);
}

// logits: [B, T, V] as floats
inline std::vector<float> logits_of(Backend& be, const Transformer& m, const DeviceBatch& batch) {
  Graph g(be, 1, 0, /*training=*/false, /*grad=*/false);
  return testing::host(be, m.logits(g, batch).value());
}

// Greedy decoding by recomputing the whole prefix each step: what the KV cache must reproduce.
inline std::vector<std::int32_t> naive_greedy(Backend& be, const Transformer& m, const ModelConfig& c, const Example& e,
                                              std::size_t max_len) {
  std::vector<std::int32_t> out;
  for (std::size_t t = 0; t <= max_len; ++t) {
    Example prefix{e.src, out};                                                     // tgt_in = bos + out
    const std::vector<float> logits = logits_of(be, m, batch_of(be, {prefix}, c));  // [1, t+1, V]
    const float* last = logits.data() + t * static_cast<std::size_t>(c.vocab_size);
    const auto next = static_cast<std::int32_t>(std::max_element(last, last + c.vocab_size) - last);
    if (next == TaskInfo::kEos || t == max_len) break;
    out.push_back(next);
  }
  return out;
}

// Decoder-only continuation by recomputing the whole prefix each step: what generate's cache must
// reproduce. Greedy over the ids a model may generate (pad and bos never).
inline std::vector<std::int32_t> naive_continuation(Backend& be, const Transformer& m, const ModelConfig& c,
                                                    std::vector<std::int32_t> prompt, std::int64_t max_tokens) {
  std::vector<std::int32_t> out;
  while (static_cast<std::int64_t>(out.size()) < max_tokens) {
    const std::vector<float> logits = logits_of(be, m, batch_of(be, {{{}, prompt}}, c));  // [1, len + 1, V]: bos + prompt
    const float* last = logits.data() + prompt.size() * static_cast<std::size_t>(c.vocab_size);
    const auto next = static_cast<std::int32_t>(std::max_element(last + TaskInfo::kEos, last + c.vocab_size) - last);
    if (next == TaskInfo::kEos) break;
    out.push_back(next);
    prompt.push_back(next);
  }
  return out;
}

// Prompts of different lengths, bos alone among them.
inline const std::vector<std::vector<std::int32_t>> kPrompts = {{3, 4, 5}, {6, 7, 8, 9, 10, 3}, {}, {5}};

}  // namespace ablate::model::test
