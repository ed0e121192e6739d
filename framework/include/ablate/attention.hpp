// Kind "attention": the attention sublayer as a plugin (its projections, its k/v heads, what it
// does to q and k before the product), and what the model hands it for one call: the memory of a
// cross-attention, the mask, the positions that act inside attention, and the key/value cache.
// The built-in attention/mha is one such plugin; docs/architecture.md shows where it sits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace ablate {

// Which attention of a layer: over the layer's own input (Self), or from the decoder to the
// encoder output (Cross).
enum class AttentionRole : std::uint8_t { Self = 0, Cross = 1 };
const char* attention_role_name(AttentionRole role);  // "self" | "cross"

// Keys and values split into heads: k, v [B, Hkv, S, Dh] (Hkv = H for multi-head attention).
struct KeyValues {
  Var k, v;
};

// The keys and values of one attention sublayer across the steps of an incremental decode
// (generation, greedy decoding): one per attention per layer, owned by the model, created before
// the first step and used for every step. Allocate once: the buffers [B, Hkv, capacity, Dh] are
// made (zero-filled) at the first append, in the dtype and head count of the first keys.
class BOOST_SYMBOL_VISIBLE KeyValueCache {
 public:
  // capacity: the most positions a self-attention's cache will hold (prompt + new tokens).
  explicit KeyValueCache(std::int64_t capacity) : capacity_(capacity) {}

  // Self-attention: writes k, v [B, Hkv, T, Dh] at rows length() .. length()+T-1 and returns the
  // whole buffers [B, Hkv, capacity, Dh] as constants (rows from length()+T on are unwritten: the
  // model's mask, key_lengths = positions so far, hides them). Throws ablate::Error past capacity
  // or when k, v change shape or dtype between steps.
  KeyValues append(Graph& g, const Var& k, const Var& v);
  // Positions written so far.
  std::int64_t length() const { return length_; }
  std::int64_t capacity() const { return capacity_; }

  // Cross-attention: the memory's keys and values are computed at the first step and kept.
  bool has_memory() const { return memory_.k.defined(); }
  const KeyValues& memory() const { return memory_; }
  void keep_memory(const KeyValues& kv) { memory_ = kv; }

 private:
  std::int64_t capacity_;
  std::int64_t length_ = 0;
  Tensor k_, v_;
  KeyValues memory_;
};

// Positions that act inside attention (a positional encoding that rotates q and k, e.g. rotary),
// as the model hands them to an attention: the model implements it around the stack's positional
// encoding, so what that plugin throws is reported as its own fault. Absent (null in the call)
// when the encoding only adds to the embeddings, and for cross-attention unless the encoding
// asks for it (PositionalEncoding::in_cross_attention).
class BOOST_SYMBOL_VISIBLE AttentionPositions {
 public:
  virtual ~AttentionPositions() = default;
  // q [B, H, T, Dh] of the call's queries, at their absolute positions (offset .. offset+T-1).
  virtual Var queries(Graph& g, const Var& q) const = 0;
  // New keys [B, Hkv, S', Dh] at their absolute positions: the queries' in self-attention (the
  // keys a step appends to the cache), 0 .. S'-1 in cross-attention.
  virtual Var keys(Graph& g, const Var& k) const = 0;
};

// The AttentionPositions of a rotating PositionalEncoding, as the model hands them to its attentions
// (and the test kit, ablate/testing/kit.hpp, to the attention it checks): q rotated at
// `query_positions`, new keys at `key_positions` (I32 [T] and [S'] on the graph's backend; in
// self-attention both are the queries' absolute positions offset .. offset+T-1, in cross-attention
// the keys are at 0 .. S'-1). Each rotate is a guarded call: what the encoding throws is its fault.
class BOOST_SYMBOL_VISIBLE EncodingPositions final : public AttentionPositions {
 public:
  EncodingPositions(const PositionalEncoding& encoding, Tensor query_positions, Tensor key_positions)
      : encoding_(encoding), queries_(std::move(query_positions)), keys_(std::move(key_positions)) {}
  // q: [B, H, T, Dh] -> encoding.rotate_queries(q, query_positions)
  Var queries(Graph& g, const Var& q) const override;
  // k: [B, Hkv, S', Dh] -> encoding.rotate_keys(k, key_positions)
  Var keys(Graph& g, const Var& k) const override;
  // I32 [n] on `backend`: first, first+1, ..., first+n-1.
  static Tensor range(Backend& backend, std::int64_t first, std::int64_t n);

 private:
  const PositionalEncoding& encoding_;
  Tensor queries_, keys_;
};

// One call of an attention sublayer.
struct AttentionCall {
  Var x;       // [B, T, D]: the queries' input (the block has normalised it, or not)
  Var memory;  // [B, S, D]: the keys' and values' input of a cross-attention; undefined for Self
  // Causal / key lengths / query offset, `probs` when the model logs the probabilities, and the
  // logit bias / ALiBi slopes of a positional encoding that biases the logits (pass them on to
  // ops::attention). The attention sets dropout (its own, from ModelDims::attention_dropout) and
  // may set scale.
  ops::AttentionOptions mask;
  const AttentionPositions* positions = nullptr;  // null: no positions act inside this attention
  KeyValueCache* cache = nullptr;                 // null: no incremental decoding (training, a full pass)
};

// Kind "attention": one instance per attention sublayer (self and cross are separate instances,
// built with their role). Output [B, T, D].
class BOOST_SYMBOL_VISIBLE Attention : public Component {
 public:
  static constexpr const char* kKind = "attention";
  // Refuses model sizes this attention cannot be built with (throws ablate::Error saying why, e.g.
  // k/v heads that do not divide model.heads). The host calls it before any run starts, so the
  // refusal is a spec error at `ablate validate`; build calls it too.
  virtual void check(const ModelDims& dims) const { (void)dims; }
  // Adds this attention's parameters under `scope` ("decoder.layers.0.self_attn").
  virtual void build(const ParamScope& scope, const ModelDims& dims, AttentionRole role) = 0;
  // x: [B, T, D] (and memory [B, S, D]) -> [B, T, D]. With a cache, a Self call appends its new
  // keys/values and attends over all of them; a Cross call computes the memory's once.
  virtual Var forward(Graph& g, const AttentionCall& call) const = 0;
};

// What every multi-head attention shares, as attention/mha does it, so that a variant is only the
// part between them: the projections and heads in, the call's positions, cache and memory, and
// the merge and output projection out. build() adds under `scope`, with D = dims.d_model and
// K = Hkv * Dh: Self: qkv.weight [D + 2K, D] (+ qkv.bias); Cross: q.weight [D, D], kv.weight
// [2K, D] (+ biases); both: out.weight [D, D] (+ out.bias): Xavier-uniform weights, zero biases,
// biases as dims.qkv_bias / out_bias say. Errors name `plugin` ("attention/gated").
class BOOST_SYMBOL_VISIBLE AttentionProjections {
 public:
  explicit AttentionProjections(std::string plugin) : plugin_(std::move(plugin)) {}
  // Throws ablate::Error when heads do not divide d_model or `kv_heads` (0: dims.heads) does not
  // divide heads: what Attention::check says.
  void check(const ModelDims& dims, std::int64_t kv_heads = 0) const;
  void build(const ParamScope& scope, const ModelDims& dims, AttentionRole role, std::int64_t kv_heads = 0);

  // A function of each head's q [B, H, T, Dh] (key false) and new k [B, Hkv, S', Dh] (key true)
  // before positions act and the cache keeps k (mha's qk_norm); empty: none.
  using BeforePositions = std::function<Var(Graph& g, const Var& x, bool key)>;
  struct Heads {
    Var q;         // [B, H, T, Dh], positions applied
    KeyValues kv;  // [B, Hkv, S, Dh]: positions applied, with every cached step's (Self), or the memory's (Cross)
  };
  // call.x (and call.memory) -> the heads ops::attention takes, the cache appended to (Self) or its
  // memory kept (Cross).
  Heads heads(Graph& g, const AttentionCall& call, const BeforePositions& before_positions = {}) const;
  // heads: [B, H, T, Dh] -> Linear_out(merge_heads(heads)): [B, T, D].
  Var output(Graph& g, const Var& heads) const;
  // The whole sublayer, call.x (and call.memory) -> [B, T, D]: output(ops::attention(heads(...),
  // options)). Where nothing acts on the heads between the projections and the attention (no
  // before_positions, no call.positions, no call.cache), the heads stay in the projections' rows
  // (ops::packed_attention: no copies split or merge them); the results are the same.
  Var attend(Graph& g, const AttentionCall& call, const ops::AttentionOptions& options,
             const BeforePositions& before_positions = {}) const;

  int head_count() const { return heads_; }
  int kv_head_count() const { return kv_heads_; }

 private:
  void check_built() const;
  Var project_in(Graph& g, const Var& x) const;      // [B, T, D] -> Self: qkv [B, T, D + 2K]; Cross: q [B, T, D]
  Var project_memory(Graph& g, const Var& m) const;  // Cross: [B, S, D] -> kv [B, S, 2K]
  Var project_out(Graph& g, const Var& x) const;     // [B, T, D] -> [B, T, D]
  std::string plugin_;
  AttentionRole role_ = AttentionRole::Self;
  int heads_ = 1, kv_heads_ = 1;
  std::int64_t width_ = 0, kv_width_ = 0;  // D = H * Dh and K = Hkv * Dh
  Parameter* in_w_ = nullptr;              // Self: qkv [D + 2K, D]; Cross: q [D, D]
  Parameter* in_b_ = nullptr;
  Parameter* kv_w_ = nullptr;  // Cross only: kv [2K, D]
  Parameter* kv_b_ = nullptr;
  Parameter* out_w_ = nullptr;  // [D, D]
  Parameter* out_b_ = nullptr;
};

}  // namespace ablate
