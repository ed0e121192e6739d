// The Transformer models, assembled from the component interfaces (block, attention,
// positional_encoding and ffn plugins): encoder-only (per-position tagging, or a pooled
// classifier), decoder-only causal LM (continuing prompts, greedy or sampled), and encoder-decoder
// seq2seq with teacher forcing and greedy decoding, both over an incremental key/value cache. Every
// pass (training, evaluation, generation, decoding) runs a layer through one path, layer_step. The
// model knows no spec and no plugin registry: the runner maps the spec to a ModelConfig and hands
// in a ComponentFactory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ablate/attention.hpp"
#include "ablate/components.hpp"
#include "ablate/constant_cache.hpp"
#include "ablate/philox.hpp"
#include "ablate/task.hpp"
#include "core/architecture.hpp"

namespace ablate::model {

using ablate::Arch;  // one enum each with the spec's (core/architecture.hpp)
using ablate::Pooling;

struct ModelConfig {
  Arch arch = Arch::EncoderDecoder;
  ModelDims dims;  // D, H, F, dropouts, norm eps, q/k/v and output biases
  std::int64_t encoder_layers = 6;
  std::int64_t decoder_layers = 6;
  std::int64_t vocab_size = 0;  // V: one vocabulary for source and target
  // ModelDims::context of the encoder (source positions) and the decoder (target + bos); 0 unknown.
  std::int64_t source_context = 0, target_context = 0;
  float embedding_dropout = 0.1f;  // on embeddings + positions
  bool scale_embedding = true;     // embeddings * sqrt(D) before the positions are added
  bool embedding_norm = false;     // LayerNorm(embeddings + positions) before the embedding dropout (BERT)
  float embedding_norm_eps = 1e-12f;
  // > 0: FixNorm: every word embedding (the tables and the vocabulary projection's rows, not a
  // classifier's) divided by its L2 norm and multiplied by this length before use.
  float fixnorm = 0.0f;
  bool causal = true;               // decoder self-attention masks later positions (false: the future leaks)
  bool final_norm = true;           // a norm after a stack whose blocks want one (pre-norm)
  bool tie_embeddings = true;       // the output projection is the (decoder's) embedding table
  bool share_embeddings = false;    // encoder-decoder: the decoder's embedding table is the encoder's
  std::int64_t num_classes = 0;     // > 0: encoder-only classifier over pooled states
  Pooling pooling = Pooling::Mean;  // of the classifier
};

// One new component per use site; the runner wraps the plugin registry (and the spec's options).
struct ComponentFactory {
  std::function<std::shared_ptr<Block>()> block;
  std::function<std::shared_ptr<Attention>()> attention;
  std::function<std::shared_ptr<PositionalEncoding>()> positional_encoding;
  std::function<std::shared_ptr<FeedForward>()> ffn;
};

// A batch on the backend, laid out for the model's architecture.
struct DeviceBatch {
  std::int64_t B = 0, S = 0, T = 0;
  Tensor src, src_lengths;         // I32 [B, S], [B]          (Encoder, EncoderDecoder)
  Tensor tgt_in, tgt_lengths;      // I32 [B, T], [B]          (Decoder, EncoderDecoder): bos + target
  Tensor targets;                  // I32, the logits' leading shape: [B, T] (next tokens + eos),
                                   // [B, S] (Encoder tagging) or [B, 1] (classes); kIgnore = no loss
  Tensor pool;                     // [B, 1, S] compute dtype: pooling weights (classifier only)
  std::int64_t target_tokens = 0;  // positions that count in the loss
};

// Checks the batch fits the architecture (Encoder tagging: each target as long as its source;
// classification: one target token, the class, in [0, num_classes)) and uploads it. Throws
// ablate::Error naming the example otherwise.
DeviceBatch upload_batch(Backend& backend, const HostBatch& batch, const ModelConfig& config, DType compute);

// What a probe pass records besides its result (logging steps; no effect on the result): the
// attention probabilities of every attention, and each layer's output (the residual stream).
struct ForwardCapture {
  struct Attention {
    std::string stack;  // "encoder" | "decoder"
    std::string kind;   // "self" | "cross"
    int layer = 0;
    Tensor probs;            // F32 [B, H, T, S]; [B, H, 1, S] for one decoding step
    std::int64_t step = -1;  // greedy decoding: the decode step t (query position); -1 in a full forward
  };
  struct Residual {
    std::string stack;
    int layer = 0;
    Tensor x;  // [B, T, D]: the layer's output
  };
  std::vector<Attention> attention;
  std::vector<Residual> residuals;
};

// Decoder-only continuation (Transformer::generate): how many tokens, and how each is chosen.
struct GenerateOptions {
  std::int64_t max_tokens = 0;  // N: new tokens per prompt (fewer where eos comes first)
  double temperature = 0.0;     // 0: greedy (argmax); > 0: sample from softmax(logits / temperature)
  std::int64_t top_k = 0;       // > 0: sample among the k most likely tokens only; 0: all
  // Sampling draws: the uniform of prompt i's n-th new token is philox_uniform4(key, i << 32 | n)[0],
  // so a continuation is a function of (key, prompt, model) alone: the same after a resume.
  RngKey key;
};

// The capabilities of a positional encoding (PositionalEncoding::capabilities on a default-
// initialised struct), the call guarded as every plugin call is (a throw is its plugin fault).
PositionCapabilities position_capabilities(const PositionalEncoding& positions);

class Transformer {
 public:
  // Builds every parameter into `store` ("encoder.layers.0.self_attn.qkv.weight", ...), drawn
  // from `seed`. Throws ablate::Error for an impossible configuration.
  Transformer(const ModelConfig& config, const ComponentFactory& components, ParameterStore& store, std::uint64_t seed);

  // Teacher-forced logits, aligned with batch.targets:
  //   EncoderDecoder, Decoder: [B, T, V] (decoder self-attention causal + key padding)
  //   Encoder: [B, S, V] per source position, or [B, 1, C] with a classifier
  Var logits(Graph& g, const DeviceBatch& batch, ForwardCapture* capture = nullptr) const;

  // Greedy predictions, content tokens only (bos/eos stripped), one per batch item:
  //   EncoderDecoder: decodes up to max_len tokens (+ eos) one step at a time, each step a
  //     single query over the key/value cache of the previous steps at position t;
  //   Encoder: the argmax at each source position (tagging) or the class (classifier).
  // Runs without gradient or dropout (eval). Decoder-only models continue prompts with generate().
  // `cross` (EncoderDecoder) receives the cross-attention of every layer at every decoding step
  // (kind "cross", step = t, probs [B, H, 1, S]): the decode-step x source-position heatmaps.
  std::vector<std::vector<std::int32_t>> greedy_decode(Backend& backend, const DeviceBatch& batch, std::int64_t max_len,
                                                       ForwardCapture* cross = nullptr) const;

  // Decoder (causal): continues each prompt (content tokens; bos is put before it) by up to
  // options.max_tokens new tokens over a per-layer key/value cache: the prompts' common length
  // runs as one causal pass at positions 0.., then one token per step at position t (the
  // positional encoding's offset), the prompt's own tokens fed until it is used up. Stops at eos
  // (not returned). pad and bos are never chosen. Returns the new content tokens per prompt.
  // Without gradient or dropout. Throws ablate::Error for another architecture or model.causal false.
  std::vector<std::vector<std::int32_t>> generate(Backend& backend, const std::vector<std::vector<std::int32_t>>& prompts,
                                                  const GenerateOptions& options) const;

  const ModelConfig& config() const { return config_; }
  // The positions every stack's positional encoding represents (PositionCapabilities::max_positions,
  // the smallest over the stacks), or 0 for no limit.
  std::int64_t max_positions() const;

 private:
  struct Layer {
    std::shared_ptr<Block> block;
    std::vector<SublayerRole> roles;  // {SelfAttention, (CrossAttention,) FeedForward}
    std::shared_ptr<Attention> self_attn;
    std::shared_ptr<Attention> cross_attn;  // null without cross-attention
    std::shared_ptr<FeedForward> ffn;
  };
  struct Stack {
    std::string name;                // "encoder" | "decoder"
    Parameter* embedding = nullptr;  // [V, D]
    std::shared_ptr<PositionalEncoding> positions;
    PositionCapabilities position_caps;       // what the positions do (asked once, after build)
    bool rotates = false;                     // positions rotate q/k inside self-attention (position_caps.rotates)
    bool biases = false;                      // positions add to the self-attention logits (.biases_logits)
    bool bias_per_layer = false;              // ... a bias of each layer's own (.bias_per_layer)
    bool in_cross = false;                    // ... and the same inside cross-attention (.in_cross_attention)
    std::optional<NormLayer> embedding_norm;  // "<stack>.embedding_norm" (model.embedding_norm)
    std::vector<Layer> layers;
    std::optional<NormLayer> final_norm;
  };
  // The key/value caches of one layer in an incremental decode.
  struct LayerCache {
    KeyValueCache self, cross;
  };
  // What one pass through a stack needs besides its input x [B, T, D].
  struct Pass {
    ops::AttentionOptions self_mask;           // causal / key lengths / query offset of the self-attentions
    ops::AttentionOptions cross_mask;          // key lengths of the memory
    Var memory;                                // [B, S, D]: the encoder output, for cross-attention
    std::int64_t offset = 0;                   // absolute position of x's first token
    std::vector<LayerCache>* cache = nullptr;  // one per layer in incremental decoding; null otherwise
    ForwardCapture* capture = nullptr;
    std::int64_t decode_step = -1;  // >= 0: a decoding step; capture takes its cross-attention only
  };

  Stack build_stack(const std::string& name, std::int64_t layers, bool cross, const ComponentFactory& components,
                    const ParamScope& root) const;
  // ids [B, T] -> dropout(norm?(positions(embedding(ids) * sqrt(D)?, offset))): [B, T, D]
  Var embed(Graph& g, const Stack& stack, const Tensor& ids, std::int64_t offset) const;
  // The one layer path: layer `i` of `stack` (its block around its attentions and FFN) on x [B, T, D].
  Var layer_step(Graph& g, const Stack& stack, std::size_t i, const Var& x, const Pass& pass,
                 const AttentionPositions* self_positions, const AttentionPositions* cross_positions) const;
  // Every layer of `stack` over x [B, T, D], then its final norm (if any): [B, T, D], with the
  // stack's positions inside attention (rotations, logit biases) prepared once for the pass.
  Var run_stack(Graph& g, const Stack& stack, Var x, const Pass& pass) const;
  // One empty cache per layer of `stack` for an incremental decode of at most `capacity` positions
  // (cross-attention caches keep the memory's keys and values).
  std::vector<LayerCache> new_caches(const Stack& stack, std::int64_t capacity) const;
  // h [B, T, D] -> [B, T, V]
  Var project_vocab(Graph& g, const Stack& stack, const Var& h) const;
  // FixNorm (config_.fixnorm > 0): rows [N, D] -> rows * fixnorm / ||row||, as RMS norm with a
  // constant gain fixnorm / sqrt(D) (uploaded once per backend and dtype); x itself when off.
  Var fix_norm(Graph& g, const Var& x) const;
  std::vector<std::vector<std::int32_t>> decode_seq2seq(Backend& backend, const DeviceBatch& batch, std::int64_t max_len,
                                                        ForwardCapture* cross) const;

  ModelConfig config_;
  std::optional<Stack> encoder_, decoder_;
  Parameter* out_w_ = nullptr;  // [V, D] (untied) or [C, D] (classifier)
  Parameter* out_b_ = nullptr;
  ConstantCache<std::pair<const Backend*, DType>> fixnorm_gain_;  // [D] of fix_norm
};

}  // namespace ablate::model
