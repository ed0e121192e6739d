// The Transformer models (transformer.hpp): stacks of plugin blocks around plugin attentions and
// FFNs, embeddings with plugin positional encodings, the output projection (tied or not), greedy
// decoding and decoder-only continuation with per-layer key/value caches, all through layer_step.
#include "model/transformer.hpp"

#include <algorithm>
#include <cmath>

#include "ablate/error.hpp"
#include "plugin_host/plugin_call.hpp"

namespace ablate::model {
namespace {

Tensor upload_i32(Backend& be, const Shape& shape, const std::vector<std::int32_t>& host) {
  Tensor t = be.empty(shape, DType::I32);
  be.copy_from_host(t, host.data());
  return t;
}

// Host argmax over the last dim of logits [N, V] (F32 or BF16 on the backend).
std::vector<std::int32_t> argmax_rows(Backend& be, const Tensor& logits) {
  const std::int64_t v = logits.shape().last(), n = logits.shape().rows();
  const std::vector<float> host = host_floats(be, logits);
  std::vector<std::int32_t> out(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = host.data() + r * v;
    out[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(std::max_element(row, row + v) - row);
  }
  return out;
}

// The next token from one row of logits [V] (host floats): the argmax at temperature 0, else
// the token whose cumulative share of softmax(logits / temperature) over the top_k most likely
// (or all) tokens first exceeds u in [0, 1). pad and bos are never chosen: no target is either.
std::int32_t choose_token(const float* row, std::int64_t V, const GenerateOptions& o, float u) {
  constexpr std::int32_t kFirst = TaskInfo::kEos;
  if (o.temperature <= 0.0) return static_cast<std::int32_t>(std::max_element(row + kFirst, row + V) - row);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(V - kFirst));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = kFirst + static_cast<std::int32_t>(i);
  if (o.top_k > 0 && static_cast<std::size_t>(o.top_k) < ids.size()) {
    const auto more_likely = [row](std::int32_t a, std::int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
    std::partial_sort(ids.begin(), ids.begin() + o.top_k, ids.end(), more_likely);
    ids.resize(static_cast<std::size_t>(o.top_k));
  }
  float top = row[ids.front()];
  for (std::int32_t id : ids) top = std::max(top, row[id]);
  std::vector<double> weight(ids.size());
  double total = 0.0;
  for (std::size_t i = 0; i < ids.size(); ++i)
    total += weight[i] = std::exp((static_cast<double>(row[ids[i]]) - top) / o.temperature);
  const double target = static_cast<double>(u) * total;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if ((cumulative += weight[i]) > target) return ids[i];
  return ids.back();  // rounding (or NaN logits): the last candidate
}

}  // namespace

DeviceBatch upload_batch(Backend& be, const HostBatch& hb, const ModelConfig& config, DType compute) {
  DeviceBatch d;
  d.B = hb.B;
  d.S = hb.S;
  d.T = hb.T;
  const auto B = static_cast<std::size_t>(hb.B);
  const bool uses_src = config.arch != Arch::Decoder;
  if (uses_src && hb.S == 0)
    throw Error(
        std::string("model.arch ") + to_string(config.arch) + " reads a source sequence, but the task's examples have none",
        "a language-model task trains model.arch: decoder");
  if (!uses_src && hb.S != 0)
    throw Error("model.arch decoder is a language model, but the task's examples have a source sequence",
                "use model.arch: encoder_decoder for a sequence-to-sequence task");
  if (uses_src) {
    d.src = upload_i32(be, {hb.B, hb.S}, hb.src);
    d.src_lengths = upload_i32(be, {hb.B}, hb.src_lengths);
  }
  std::vector<std::int32_t> targets;
  if (config.arch == Arch::Encoder && config.num_classes > 0) {  // classification: the class is the only target token
    targets.resize(B);
    std::vector<float> pool(B * static_cast<std::size_t>(hb.S), 0.0f);
    for (std::size_t b = 0; b < B; ++b) {
      const std::int32_t cls = hb.tgt_out[b * static_cast<std::size_t>(hb.T)];
      if (hb.tgt_lengths[b] != 2 || cls < 0 || cls >= config.num_classes)
        throw Error("classifier: batch item " + std::to_string(b) + " has no single class in [0, " +
                        std::to_string(config.num_classes) + ") as its target",
                    "a classification task gives one target token, the class id");
      targets[b] = cls;
      const std::int32_t len = std::max(hb.src_lengths[b], 1);
      float* row = pool.data() + b * static_cast<std::size_t>(hb.S);
      if (config.pooling == Pooling::First)
        row[0] = 1.0f;
      else
        std::fill(row, row + len, 1.0f / static_cast<float>(len));
    }
    Tensor pool32 = be.empty({hb.B, 1, hb.S}, DType::F32);
    be.copy_from_host(pool32, pool.data());
    d.pool = pool32;
    if (compute != DType::F32) {
      d.pool = be.empty(pool32.shape(), compute);
      be.cast(d.pool, pool32);
    }
    d.targets = upload_i32(be, {hb.B, 1}, targets);
    d.target_tokens = hb.B;
    return d;
  }
  if (config.arch == Arch::Encoder) {  // tagging: one target per source position
    targets.assign(B * static_cast<std::size_t>(hb.S), HostBatch::kIgnore);
    for (std::size_t b = 0; b < B; ++b) {
      const std::int32_t len = hb.src_lengths[b];
      if (hb.tgt_lengths[b] - 1 != len)
        throw Error("model.arch encoder tags each source position, but batch item " + std::to_string(b) + " has a source of " +
                        std::to_string(len) + " tokens and a target of " + std::to_string(hb.tgt_lengths[b] - 1),
                    "an encoder-only model needs targets as long as their sources (copy, reverse, sort); use "
                    "model.arch: encoder_decoder otherwise");
      std::copy_n(hb.tgt_out.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(hb.T)), len,
                  targets.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(hb.S)));
      d.target_tokens += len;
    }
    d.targets = upload_i32(be, {hb.B, hb.S}, targets);
    return d;
  }
  d.tgt_in = upload_i32(be, {hb.B, hb.T}, hb.tgt_in);
  d.tgt_lengths = upload_i32(be, {hb.B}, hb.tgt_lengths);
  d.targets = upload_i32(be, {hb.B, hb.T}, hb.tgt_out);
  d.target_tokens = std::count_if(hb.tgt_out.begin(), hb.tgt_out.end(), [](std::int32_t t) { return t != HostBatch::kIgnore; });
  return d;
}

Transformer::Transformer(const ModelConfig& config, const ComponentFactory& components, ParameterStore& store, std::uint64_t seed)
    : config_(config) {
  const ModelDims& dims = config.dims;
  if (config.vocab_size <= 3)
    throw Error("model: vocabulary of " + std::to_string(config.vocab_size) + " tokens", "the task must give vocab_size > 3");
  if (config.arch == Arch::Decoder && config.num_classes > 0) throw Error("model: a classifier head needs model.arch encoder");
  if (config.share_embeddings && config.arch != Arch::EncoderDecoder)
    throw Error("model: share_embeddings needs model.arch encoder_decoder (the only model with two embedding tables)");
  const ParamScope root(store, seed);
  if (config.arch != Arch::Decoder) encoder_ = build_stack("encoder", config.encoder_layers, false, components, root);
  if (config.arch != Arch::Encoder)
    decoder_ = build_stack("decoder", config.decoder_layers, config.arch == Arch::EncoderDecoder, components, root);
  const std::int64_t d = dims.d_model;
  if (config.num_classes > 0) {
    out_w_ = &root.param("classifier.weight", {config.num_classes, d}, Init::xavier_uniform());
    out_b_ = &root.param("classifier.bias", {config.num_classes}, Init::zeros());
  } else if (!config.tie_embeddings) {
    out_w_ = &root.param("output.weight", {config.vocab_size, d}, Init::xavier_uniform());
    out_b_ = &root.param("output.bias", {config.vocab_size}, Init::zeros());
  }
}

PositionCapabilities position_capabilities(const PositionalEncoding& positions) {
  return plugin_call(positions, "capabilities", [&] { return capabilities_of(positions); });
}

Transformer::Stack Transformer::build_stack(const std::string& name, std::int64_t layers, bool cross,
                                            const ComponentFactory& components, const ParamScope& root) const {
  ModelDims dims = config_.dims;  // what the stack's components are built for
  dims.layers = layers;
  dims.causal = name == "decoder" && config_.causal;
  dims.layer = 0;
  dims.context = name == "decoder" ? config_.target_context : config_.source_context;
  const ParamScope scope = root.child(name);
  Stack s;
  s.name = name;
  // N(0, D^-1/2): unit variance after the sqrt(D) scaling (fairseq's choice for the paper's model).
  // With share_embeddings the decoder reads the encoder's table (built first): one parameter.
  s.embedding = cross && config_.share_embeddings
                    ? encoder_->embedding
                    : &scope.param("embedding.weight", {config_.vocab_size, dims.d_model},
                                   Init::normal(1.0f / std::sqrt(static_cast<float>(dims.d_model))));
  s.positions = components.positional_encoding();
  plugin_call(*s.positions, "build", [&] { s.positions->build(scope.child("positions"), dims); });
  s.position_caps = position_capabilities(*s.positions);
  s.rotates = s.position_caps.rotates;
  s.biases = s.position_caps.biases_logits;
  s.bias_per_layer = s.biases && s.position_caps.bias_per_layer;
  s.in_cross = cross && (s.rotates || s.biases) && s.position_caps.in_cross_attention;
  if (config_.embedding_norm)
    s.embedding_norm = NormLayer(scope.child("embedding_norm"), NormKind::LayerNorm, dims.d_model, config_.embedding_norm_eps);
  for (std::int64_t i = 0; i < layers; ++i) {
    const ParamScope ls = scope.child("layers").child(std::to_string(i));
    ModelDims layer_dims = dims;
    layer_dims.layer = i;
    Layer layer;
    layer.roles = {SublayerRole::SelfAttention};
    if (cross) layer.roles.push_back(SublayerRole::CrossAttention);
    layer.roles.push_back(SublayerRole::FeedForward);
    layer.block = components.block();
    plugin_call(*layer.block, "build", [&] { layer.block->build(ls, layer_dims, layer.roles); });
    layer.self_attn = components.attention();
    plugin_call(*layer.self_attn, "build",
                [&] { layer.self_attn->build(ls.child("self_attn"), layer_dims, AttentionRole::Self); });
    if (cross) {
      layer.cross_attn = components.attention();
      plugin_call(*layer.cross_attn, "build",
                  [&] { layer.cross_attn->build(ls.child("cross_attn"), layer_dims, AttentionRole::Cross); });
    }
    layer.ffn = components.ffn();
    plugin_call(*layer.ffn, "build", [&] { layer.ffn->build(ls.child("ffn"), layer_dims); });
    plugin_call(*layer.block, "init_sublayers", [&] { layer.block->init_sublayers(ls, layer_dims, layer.roles); });
    s.layers.push_back(std::move(layer));
  }
  if (!s.layers.empty() && config_.final_norm) {
    const Block& block = *s.layers.front().block;
    if (plugin_call(block, "wants_final_norm", [&] { return block.wants_final_norm(); }))
      s.final_norm = NormLayer(scope.child("final_norm"), plugin_call(block, "norm_kind", [&] { return block.norm_kind(); }),
                               dims.d_model, dims.norm_eps);
  }
  return s;
}

std::int64_t Transformer::max_positions() const {
  std::int64_t limit = 0;
  for (const std::optional<Stack>* s : {&encoder_, &decoder_})
    if (*s) {
      const std::int64_t n = (*s)->position_caps.max_positions;
      if (n > 0) limit = limit > 0 ? std::min(limit, n) : n;
    }
  return limit;
}

Var Transformer::fix_norm(Graph& g, const Var& x) const {
  if (config_.fixnorm <= 0) return x;
  const std::int64_t D = config_.dims.d_model;
  Backend& be = g.backend();
  const Tensor gain = fixnorm_gain_.get({&be, x.dtype()}, [&] {
    const std::vector<float> host(static_cast<std::size_t>(D), config_.fixnorm / std::sqrt(static_cast<float>(D)));
    Tensor f32 = be.empty({D}, DType::F32);
    be.copy_from_host(f32, host.data());
    if (x.dtype() == DType::F32) return f32;
    Tensor out = be.empty({D}, x.dtype());  // the compute dtype under mixed precision
    be.cast(out, f32);
    return out;
  });
  // rms_norm(x) = x / sqrt(mean(x^2) + eps) * gain = x * fixnorm / ||x|| (eps far below mean(x^2))
  return ops::rms_norm(g, x, g.constant(gain, "fixnorm_gain"), 1e-12f);
}

Var Transformer::embed(Graph& g, const Stack& stack, const Tensor& ids, std::int64_t offset) const {
  Var x = fix_norm(g, ops::embedding(g, ids, g.parameter(*stack.embedding)));  // [B, T, D]
  if (config_.scale_embedding) x = ops::scale(g, x, std::sqrt(static_cast<float>(config_.dims.d_model)));
  x = plugin_call(*stack.positions, "forward", [&] { return stack.positions->forward(g, x, offset); });
  if (stack.embedding_norm) x = (*stack.embedding_norm)(g, x);
  return ops::dropout(g, x, config_.embedding_dropout);
}

Var Transformer::layer_step(Graph& g, const Stack& stack, std::size_t i, const Var& x, const Pass& pass,
                            const AttentionPositions* self_positions, const AttentionPositions* cross_positions) const {
  const Layer& L = stack.layers[i];
  LayerCache* cache = pass.cache ? &(*pass.cache)[i] : nullptr;
  // The layer's sublayers by role, as its block calls them; every plugin call guarded.
  class LayerSublayers final : public Sublayers {
   public:
    LayerSublayers(const Stack& stack, std::size_t i, const Pass& pass, LayerCache* cache,
                   const AttentionPositions* self_positions, const AttentionPositions* cross_positions)
        : stack_(stack),
          layer_(stack.layers[i]),
          i_(static_cast<int>(i)),
          pass_(pass),
          cache_(cache),
          self_positions_(self_positions),
          cross_positions_(cross_positions) {}
    const std::vector<SublayerRole>& roles() const override { return layer_.roles; }

   protected:
    Var run(Graph& g, SublayerRole role, const Var& h) const override {
      if (role == SublayerRole::FeedForward)
        return plugin_call(*layer_.ffn, "forward", [&] { return layer_.ffn->forward(g, h); });
      const bool self = role == SublayerRole::SelfAttention;
      const Attention& attention = self ? *layer_.self_attn : *layer_.cross_attn;
      AttentionCall call;
      call.x = h;
      call.memory = self ? Var() : pass_.memory;
      call.mask = self ? pass_.self_mask : pass_.cross_mask;
      call.positions = self ? self_positions_ : cross_positions_;
      call.cache = cache_ ? (self ? &cache_->self : &cache_->cross) : nullptr;
      const bool capture = pass_.capture && (pass_.decode_step < 0 || !self);
      Tensor probs;
      if (capture) call.mask.probs = &probs;
      Var y = plugin_call(attention, "forward", [&] { return attention.forward(g, call); });
      if (capture && !probs.defined())  // said here, not later by the logger as the backend's fault
        throw PluginError(plugin_of(attention) +
                              " did not hand over its attention probabilities: the run logs them "
                              "(log.attention) and set call.mask.probs, which it left empty",
                          "an attention plugin passes call.mask on to ops::attention, or fills *call.mask.probs with its "
                          "probabilities [B, H, T, S] (F32) itself (docs/writing-plugins.md); or set log.attention.every: 0");
      if (capture) pass_.capture->attention.push_back({stack_.name, self ? "self" : "cross", i_, probs, pass_.decode_step});
      return y;
    }

   private:
    const Stack& stack_;
    const Layer& layer_;
    int i_;
    const Pass& pass_;
    LayerCache* cache_;
    const AttentionPositions* self_positions_;
    const AttentionPositions* cross_positions_;
  };
  const LayerSublayers sublayers(stack, i, pass, cache, self_positions, cross_positions);
  Var y = plugin_call(*L.block, "forward", [&] { return L.block->forward(g, x, sublayers); });
  if (pass.capture && pass.decode_step < 0) pass.capture->residuals.push_back({stack.name, static_cast<int>(i), y.value()});
  return y;
}

Var Transformer::run_stack(Graph& g, const Stack& stack, Var x, const Pass& pass) const {
  const std::int64_t T = x.shape()[1];
  const bool cross = stack.in_cross && pass.memory.defined();
  std::optional<EncodingPositions> self_positions, cross_positions;
  if (stack.rotates) {  // queries at offset .. offset+T-1, keys there too (self) or at 0 .. S-1 (cross)
    const Tensor queries = EncodingPositions::range(g.backend(), pass.offset, T);
    self_positions.emplace(*stack.positions, queries, queries);
    if (cross)
      cross_positions.emplace(*stack.positions, queries, EncodingPositions::range(g.backend(), 0, pass.memory.shape()[1]));
  }
  // Logit biases of layer i, once per pass (or per layer and pass when bias_per_layer): the
  // self-attention keys are this pass's (T) or the whole cache.
  Pass biased = pass;
  const auto bias_layer = [&](std::size_t i) {
    const PositionalEncoding& pe = *stack.positions;
    const auto layer = static_cast<std::int64_t>(i);
    const auto into = [&](ops::AttentionOptions& mask, std::int64_t S) {
      const PositionalEncoding::LogitBias b =
          plugin_call(pe, "logit_bias", [&] { return pe.logit_bias(g, T, S, pass.offset, layer); });
      mask.bias = b.bias;
      mask.slopes = b.slopes;
    };
    into(biased.self_mask, pass.cache && !pass.cache->empty() ? pass.cache->front().self.capacity() : T);
    if (cross) into(biased.cross_mask, pass.memory.shape()[1]);
  };
  for (std::size_t i = 0; i < stack.layers.size(); ++i) {
    if (stack.biases && (i == 0 || stack.bias_per_layer)) bias_layer(i);
    x = layer_step(g, stack, i, x, biased, self_positions ? &*self_positions : nullptr,
                   cross_positions ? &*cross_positions : nullptr);
  }
  return stack.final_norm ? (*stack.final_norm)(g, x) : x;
}

std::vector<Transformer::LayerCache> Transformer::new_caches(const Stack& stack, std::int64_t capacity) const {
  std::vector<LayerCache> caches;
  for (std::size_t i = 0; i < stack.layers.size(); ++i) caches.push_back({KeyValueCache(capacity), KeyValueCache(0)});
  return caches;
}

Var Transformer::project_vocab(Graph& g, const Stack& stack, const Var& h) const {
  if (out_w_) return ops::linear(g, h, fix_norm(g, g.parameter(*out_w_)), g.parameter(*out_b_));
  return ops::linear(g, h, fix_norm(g, g.parameter(*stack.embedding)), Var());  // tied: logits = h · E^T
}

Var Transformer::logits(Graph& g, const DeviceBatch& batch, ForwardCapture* capture) const {
  Pass enc;
  enc.capture = capture;
  if (encoder_) {
    enc.self_mask.key_lengths = &batch.src_lengths;
    enc.memory = run_stack(g, *encoder_, embed(g, *encoder_, batch.src, 0), enc);  // [B, S, D]
    if (config_.arch == Arch::Encoder) {
      if (config_.num_classes > 0) {
        const Var pooled = ops::matmul(g, g.constant(batch.pool, "pool"), enc.memory);  // [B, 1, S]·[B, S, D] -> [B, 1, D]
        return ops::linear(g, pooled, g.parameter(*out_w_), g.parameter(*out_b_));      // [B, 1, C]
      }
      return project_vocab(g, *encoder_, enc.memory);  // [B, S, V]
    }
  }
  Pass dec;
  dec.capture = capture;
  dec.self_mask.causal = config_.causal;
  dec.self_mask.key_lengths = &batch.tgt_lengths;
  dec.memory = enc.memory;
  dec.cross_mask.key_lengths = &batch.src_lengths;
  const Var h = run_stack(g, *decoder_, embed(g, *decoder_, batch.tgt_in, 0), dec);
  return project_vocab(g, *decoder_, h);  // [B, T, V]
}

std::vector<std::vector<std::int32_t>> Transformer::greedy_decode(Backend& be, const DeviceBatch& batch, std::int64_t max_len,
                                                                  ForwardCapture* cross) const {
  if (config_.arch == Arch::EncoderDecoder) return decode_seq2seq(be, batch, max_len, cross);
  if (config_.arch == Arch::Decoder)
    throw Error(
        "greedy_decode: a decoder-only model has no source to decode from",
        "continue prompts with Transformer::generate; evaluate a language model with loss, perplexity and token_accuracy");
  Graph g(be, 0, 0, /*training=*/false, /*grad=*/false);
  const Var logits = this->logits(g, batch);
  const std::vector<std::int32_t> best = argmax_rows(be, logits.value());
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(batch.B));
  be.copy_to_host(lengths.data(), batch.src_lengths);
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(batch.B));
  const std::int64_t per_item = config_.num_classes > 0 ? 1 : batch.S;
  for (std::size_t b = 0; b < out.size(); ++b) {
    const auto first = best.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(per_item));
    out[b].assign(first, first + (config_.num_classes > 0 ? 1 : lengths[b]));
  }
  return out;
}

std::vector<std::vector<std::int32_t>> Transformer::generate(Backend& be, const std::vector<std::vector<std::int32_t>>& prompts,
                                                             const GenerateOptions& o) const {
  if (config_.arch != Arch::Decoder)
    throw Error(std::string("generate: continuation needs a decoder-only model, this one is ") + to_string(config_.arch),
                "an encoder-decoder decodes with greedy_decode");
  if (!config_.causal)
    throw Error(
        "generate: the decoder is not causal (model.causal false): each position sees the later ones, so a "
        "continuation cannot be computed one token at a time",
        "set model.causal: true to generate");
  if (o.max_tokens < 0 || !(o.temperature >= 0.0) || o.top_k < 0)
    throw Error("generate: max_tokens " + std::to_string(o.max_tokens) + ", temperature " + std::to_string(o.temperature) +
                    ", top_k " + std::to_string(o.top_k) + "; expected each >= 0",
                "temperature 0 is greedy decoding, top_k 0 samples from every token");
  const auto B = static_cast<std::int64_t>(prompts.size());
  std::vector<std::vector<std::int32_t>> out(prompts.size());
  if (B == 0 || o.max_tokens == 0) return out;
  const std::int64_t V = config_.vocab_size;
  // inputs[b] = bos + prompt b: its tokens at positions 0 .. L_b - 1.
  std::vector<std::vector<std::int32_t>> inputs(prompts.size());
  std::int64_t shortest = 0, longest = 0;
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    inputs[b].push_back(TaskInfo::kBos);
    inputs[b].insert(inputs[b].end(), prompts[b].begin(), prompts[b].end());
    const auto len = static_cast<std::int64_t>(inputs[b].size());
    shortest = b == 0 ? len : std::min(shortest, len);
    longest = std::max(longest, len);
  }
  // The last new token is never fed back: positions 0 .. longest + max_tokens - 2.
  const std::int64_t S = longest + o.max_tokens - 1;

  Graph g(be, 0, 0, /*training=*/false, /*grad=*/false);
  std::vector<LayerCache> cache = new_caches(*decoder_, S);
  Tensor filled = be.empty({B}, DType::I32);  // keys written so far (the same for every item)

  // ids [B, T] at positions first .. first+T-1 through the stack, appending their keys/values
  // to the cache: logits [B, T, V] on the host.
  const auto run = [&](const std::vector<std::int32_t>& ids, std::int64_t T, std::int64_t first) {
    be.fill(filled, static_cast<float>(first + T));
    Pass pass;
    pass.self_mask.causal = true;  // the pass's queries see the keys up to their own position
    pass.self_mask.query_offset = first;
    pass.self_mask.key_lengths = &filled;
    pass.offset = first;
    pass.cache = &cache;
    const Var h = run_stack(g, *decoder_, embed(g, *decoder_, upload_i32(be, {B, T}, ids), first), pass);  // [B, T, D]
    return host_floats(be, project_vocab(g, *decoder_, h).value());                                        // [B, T, V]
  };

  // The prompts' common part in one causal pass, then one position per step.
  std::vector<std::int32_t> ids;
  for (const auto& in : inputs) ids.insert(ids.end(), in.begin(), in.begin() + shortest);
  std::vector<float> logits = run(ids, shortest, 0);
  std::int64_t rows = shortest;  // positions in `logits`; its last row is position t - 1
  std::vector<bool> done(prompts.size(), false);
  for (std::int64_t t = shortest;; ++t) {
    bool all_done = true;
    for (std::size_t b = 0; b < prompts.size(); ++b) {
      const auto len = static_cast<std::int64_t>(inputs[b].size());
      if (!done[b] && t >= len) {  // position t - 1 held the prompt's last token or a new one: choose the next
        const float* row = logits.data() + (static_cast<std::int64_t>(b) * rows + rows - 1) * V;
        float u[4] = {};
        if (o.temperature > 0.0) philox_uniform4(o.key, (static_cast<std::uint64_t>(b) << 32) | out[b].size(), u);
        const std::int32_t next = choose_token(row, V, o, u[0]);
        if (next == TaskInfo::kEos)
          done[b] = true;
        else
          out[b].push_back(next);
        if (static_cast<std::int64_t>(out[b].size()) == o.max_tokens) done[b] = true;
      }
      all_done = all_done && done[b];
    }
    if (all_done || t >= S) break;
    ids.assign(prompts.size(), TaskInfo::kEos);  // a finished item's input: anything valid, its output is unused
    for (std::size_t b = 0; b < prompts.size(); ++b) {
      const auto len = static_cast<std::int64_t>(inputs[b].size());
      if (t < len)
        ids[b] = inputs[b][static_cast<std::size_t>(t)];
      else if (!done[b])
        ids[b] = out[b].back();
    }
    logits = run(ids, 1, t);
    rows = 1;
  }
  return out;
}

std::vector<std::vector<std::int32_t>> Transformer::decode_seq2seq(Backend& be, const DeviceBatch& batch, std::int64_t max_len,
                                                                   ForwardCapture* cross) const {
  const std::int64_t B = batch.B;
  const std::int64_t steps = max_len + 1;  // max_len tokens, then eos
  Graph g(be, 0, 0, /*training=*/false, /*grad=*/false);
  Pass pass;
  {
    Pass enc;
    enc.self_mask.key_lengths = &batch.src_lengths;
    pass.memory = run_stack(g, *encoder_, embed(g, *encoder_, batch.src, 0), enc);  // [B, S, D]
  }
  // Per layer: the self-attention cache of the steps so far, and the memory's keys/values (kept at step 0).
  std::vector<LayerCache> cache = new_caches(*decoder_, steps);
  Tensor filled = be.empty({B}, DType::I32);  // keys written so far, per batch item
  pass.self_mask.key_lengths = &filled;
  pass.cross_mask.key_lengths = &batch.src_lengths;
  pass.cache = &cache;
  pass.capture = cross;

  std::vector<std::int32_t> token(static_cast<std::size_t>(B), TaskInfo::kBos);
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);
  for (std::int64_t t = 0; t < steps; ++t) {
    const Tensor ids = upload_i32(be, {B, 1}, token);
    be.fill(filled, static_cast<float>(t + 1));
    pass.offset = t;
    pass.self_mask.query_offset = t;  // the query's absolute position (ALiBi's distances; no causal mask here)
    pass.decode_step = t;
    const Var h = run_stack(g, *decoder_, embed(g, *decoder_, ids, /*offset=*/t), pass);             // [B, 1, D] at position t
    const std::vector<std::int32_t> next = argmax_rows(be, project_vocab(g, *decoder_, h).value());  // [B]
    bool all_done = true;
    for (std::size_t b = 0; b < out.size(); ++b) {
      if (!done[b]) {
        if (next[b] == TaskInfo::kEos || t == steps - 1)
          done[b] = true;
        else
          out[b].push_back(next[b]);
      }
      token[b] = next[b];
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  return out;
}

}  // namespace ablate::model
