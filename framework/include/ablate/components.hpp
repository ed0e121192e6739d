// The model's component kinds "ffn", "positional_encoding" and "block" (and, in attention.hpp,
// "attention"). The model (framework/model/) is assembled from these interfaces only, so each
// variant (ReLU or GELU FFN, sinusoidal, learned or rotary positions, post- or pre-norm) is its own plugin.
//
// One plugin instance is created per use site (one FFN per layer, one block per layer, one
// positional encoding per stack) and owns its parameters: `build` adds them to the model's
// ParameterStore under the scope's dotted prefix and keeps pointers to them (the store's
// addresses are stable); `forward` reads them through Graph::parameter. Shapes use the
// vocabulary of backend.hpp: B batch, T length, H heads, Dh head width, D model width, F feed-forward width.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ablate/autograd.hpp"
#include "ablate/parameters.hpp"
#include "ablate/plugin.hpp"

namespace ablate {

// The model's sizes and regularisation, passed to every component's build. A run fills every field
// from the spec; the initial values are the spec's defaults (docs/spec-reference.md), held equal
// by a test (tests/framework/train/experiment_test.cpp).
struct ModelDims {
  std::int64_t d_model = 512;      // D: width of the residual stream
  std::int64_t heads = 8;          // H: attention heads (Dh = D / H)
  std::int64_t d_ff = 2048;        // F: inner width of the feed-forward network
  float dropout = 0.1f;            // residual-branch and FFN dropout (identity outside training)
  float attention_dropout = 0.0f;  // on the attention probabilities
  float norm_eps = 1e-5f;          // epsilon of every LayerNorm / RMSNorm
  bool qkv_bias = true;            // bias on the q, k, v projections
  bool out_bias = true;            // bias on the attention output projection
  // The stack a component is built for, set by the model per stack (not spec keys of their own):
  std::int64_t layers = 1;  // L: layers of the stack (encoder or decoder)
  bool causal = false;      // the stack's self-attention sees only earlier positions
  // The layer (0 .. layers-1) a block, attention or FFN is built for (differential attention's
  // lambda_init(l), DeepNet's depth scaling); 0 for a stack's positional encoding.
  std::int64_t layer = 0;
  // The longest input the run trains the stack on, in positions (the task's source length for an
  // encoder, its target length + bos for a decoder): what a rotary scaling (YaRN, NTK) stretches
  // from. 0 when the host does not know it (a component built outside a run).
  std::int64_t context = 0;
};

// Where a component puts its parameters: a dotted name prefix ("encoder.layers.1.ffn") in a
// ParameterStore, with the seed their initial values are drawn from (keyed by (seed, name), so
// adding a parameter never changes the others).
class BOOST_SYMBOL_VISIBLE ParamScope {
 public:
  ParamScope(ParameterStore& store, std::uint64_t seed, std::string prefix = {});

  // Adds "<prefix>.<leaf>" (just "<leaf>" with an empty prefix), e.g. leaf "in.weight" in scope
  // "encoder.layers.1.ffn" -> "encoder.layers.1.ffn.in.weight". Throws ablate::Error on a
  // duplicate name or an empty leaf. The reference stays valid as long as the store.
  Parameter& param(const std::string& leaf, const Shape& shape, const Init& init) const;
  // The scope "<prefix>.<name>" in the same store with the same seed.
  ParamScope child(const std::string& name) const;
  // "<prefix>.<leaf>": the name param(leaf, ...) gives.
  std::string name(const std::string& leaf) const;

  const std::string& prefix() const { return prefix_; }
  ParameterStore& store() const { return *store_; }
  // The parameters added under this scope ("<prefix>." names), in creation order.
  std::vector<Parameter*> parameters() const;
  std::uint64_t seed() const { return seed_; }

 private:
  ParameterStore* store_;
  std::uint64_t seed_;
  std::string prefix_;
};

// A LayerNorm (gamma ones, beta zeros), RMSNorm (gamma only) or ScaleNorm (Nguyen & Salazar
// 2019: g x / ||x||, one scalar g, initially sqrt(D)) over the last dim D: the norm blocks place
// around sublayers and the model puts after a pre-norm stack.
enum class NormKind { LayerNorm, RMSNorm, ScaleNorm };
// "layer_norm" -> LayerNorm, "rms_norm" -> RMSNorm, "scale_norm" -> ScaleNorm; anything else
// throws ablate::Error. kNormChoices: the three names, for a plugin's `norm` option.
NormKind parse_norm_kind(const std::string& name);
inline constexpr const char* kNormChoices = "layer_norm|rms_norm|scale_norm";

class BOOST_SYMBOL_VISIBLE NormLayer {
 public:
  NormLayer() = default;
  // Adds "<scope>.gamma" [D] (and "<scope>.beta" [D] for LayerNorm), or "<scope>.g" [1] for ScaleNorm.
  NormLayer(const ParamScope& scope, NormKind kind, std::int64_t d, float eps);
  NormKind kind() const { return kind_; }
  // x: [..., D] -> [..., D]
  Var operator()(Graph& g, const Var& x) const;

 private:
  NormKind kind_ = NormKind::LayerNorm;
  Parameter* gamma_ = nullptr;  // [D], or ScaleNorm's g [1]
  Parameter* beta_ = nullptr;   // null but for LayerNorm
  float eps_ = 1e-5f;
  Tensor unit_;  // ScaleNorm: ones [D] F32, the fixed gamma of the RMS norm it scales (x / rms(x) = sqrt(D) x / ||x||)
};

// Kind "ffn": the position-wise feed-forward sublayer, y[B, T, D] = FFN(x[B, T, D]).
class BOOST_SYMBOL_VISIBLE FeedForward : public Component {
 public:
  static constexpr const char* kKind = "ffn";
  // Adds this FFN's parameters under `scope` (e.g. "encoder.layers.1.ffn").
  virtual void build(const ParamScope& scope, const ModelDims& dims) = 0;
  // x: [B, T, D] -> [B, T, D]. Dropout inside the FFN (if any) uses dims.dropout.
  virtual Var forward(Graph& g, const Var& x) const = 0;
};

// What a positional encoding does besides forward(), and what the model asks of it. The host
// default-initialises one and hands it to capabilities(), which sets the fields it needs: a field
// appended in a later Ablate reaches an older plugin as its default (so adding one needs no
// vtable change and no kPluginApiVersion bump; docs/writing-plugins.md, "Keeping the API stable").
// Append only; a default always means "as before the field existed".
struct PositionCapabilities {
  // The number of positions it can represent (0 .. max_positions-1), or 0 for no limit. The host
  // checks it against the task's longest sequence before training (a spec error then).
  std::int64_t max_positions = 0;
  // It acts inside attention: the model hands every self-attention of the stack a rotate() of its
  // queries and keys (AttentionPositions in attention.hpp).
  bool rotates = false;
  // It adds to the logits of every self-attention of the stack: the model puts logit_bias() into
  // each call's mask.
  bool biases_logits = false;
  // Each layer has a bias of its own: the model asks logit_bias() once per layer and pass (layer =
  // 0 .. dims.layers-1); otherwise once per pass (layer = 0) for all layers.
  bool bias_per_layer = false;
  // Cross-attentions get the rotation or bias too (queries at their positions, memory keys at
  // 0 .. S-1).
  bool in_cross_attention = false;
};

// Kind "positional_encoding": where the position of a token enters the model. One kind with
// capabilities rather than one kind per mechanism, so that `model.positional_encoding` is one
// factor of an ablation whatever the mechanism (docs/architecture.md): an encoding
//  - adds to the (scaled) token embeddings before the first layer (forward: sinusoidal, learned),
//  - and/or rotates q and k inside self-attention at absolute positions (rotates: rotary),
//  - and/or adds to the attention logits (biases_logits: ALiBi slopes, a relative-position bias);
// an encoding that acts only inside attention returns x unchanged from forward. Embedding dropout
// is the model's.
class BOOST_SYMBOL_VISIBLE PositionalEncoding : public Component {
 public:
  static constexpr const char* kKind = "positional_encoding";
  // Adds this encoding's parameters (if any) under `scope` (e.g. "encoder.positions").
  virtual void build(const ParamScope& scope, const ModelDims& dims) = 0;
  // x: [B, T, D] embeddings of positions offset .. offset+T-1 -> [B, T, D]. offset > 0 in
  // incremental decoding (one new token per step). Throws ablate::Error (naming the position
  // and the limit) for positions the encoding cannot represent.
  virtual Var forward(Graph& g, const Var& x, std::int64_t offset) const = 0;
  // Sets the fields of `caps` (default-initialised by the host) that this encoding needs; a
  // function of the options only (validation asks before build(), the model after). The default
  // sets none: an encoding that adds to the embeddings with no position limit.
  virtual void capabilities(PositionCapabilities& caps) const { (void)caps; }

  // x: [B, H, T, Dh] (q, or k with H = Hkv) at the absolute positions `positions` (I32 [T], on the
  // graph's backend) -> [B, H, T, Dh]. Called only when capabilities say `rotates`, through
  // rotate_queries and rotate_keys, whose defaults call it for both.
  virtual Var rotate(Graph& g, const Var& x, const Tensor& positions) const {
    (void)g, (void)positions;
    return x;
  }
  // The queries q: [B, H, T, Dh] and the keys k: [B, Hkv, S', Dh] apart, for an encoding that
  // treats them differently (xPos scales q by zeta^(n/s) and k by zeta^(-m/s), so that q.k decays
  // with m - n). Default: rotate(g, x, positions) for both.
  virtual Var rotate_queries(Graph& g, const Var& q, const Tensor& positions) const { return rotate(g, q, positions); }
  virtual Var rotate_keys(Graph& g, const Var& k, const Tensor& positions) const { return rotate(g, k, positions); }

  // What is added to the logits of queries at positions offset .. offset+T-1 over keys at
  // 0 .. S-1 (ops::AttentionOptions) in layer `layer`: `slopes` F32 [H] for ALiBi's
  // -slope_h * |i - j| (computed in the attention kernel, nothing [T, S] materialised) and/or
  // `bias` F32 [1 or H, T, S] (a Var: a learned bias gets its gradient). Called only when
  // capabilities say `biases_logits`.
  struct LogitBias {
    Var bias;
    Tensor slopes;
  };
  virtual LogitBias logit_bias(Graph& g, std::int64_t T, std::int64_t S, std::int64_t offset, std::int64_t layer) const {
    (void)g, (void)T, (void)S, (void)offset, (void)layer;
    return {};
  }
};

// The capabilities of `positions`: capabilities() on a default-initialised struct (the host asks
// through a guarded call; tests and plugin authors through this).
inline PositionCapabilities capabilities_of(const PositionalEncoding& positions) {
  PositionCapabilities caps;
  positions.capabilities(caps);
  return caps;
}

// The sublayers of a layer, by role: self-attention, cross-attention (encoder-decoder's decoder
// only), feed-forward. A layer's roles in order: {SelfAttention, FeedForward}, or
// {SelfAttention, CrossAttention, FeedForward}.
enum class SublayerRole : std::uint8_t { SelfAttention = 0, CrossAttention = 1, FeedForward = 2 };
const char* sublayer_role_name(SublayerRole role);  // "self_attention" | "cross_attention" | "ffn"
// The index of `role` among the `roles` a block was built with (its "norm<i>", "alpha<i>"); throws
// ablate::Error "<owner>: no <what> for the <role> sublayer" when it is not one of them.
std::size_t sublayer_index(const std::vector<SublayerRole>& roles, SublayerRole role, const std::string& owner,
                           const std::string& what);

// What a block is handed to run its layer: the sublayers by role. The model implements it (each
// call runs the attention or FFN plugin, guarded); tests and plugin authors use SublayerFunctions.
class BOOST_SYMBOL_VISIBLE Sublayers {
 public:
  virtual ~Sublayers() = default;
  // The layer's roles, in order.
  virtual const std::vector<SublayerRole>& roles() const = 0;
  // Sublayer `role` on h: [B, T, D] -> [B, T, D], its raw output (no residual, no dropout).
  // Throws ablate::Error for a role the layer does not have (checked here, for every implementation).
  Var operator()(Graph& g, SublayerRole role, const Var& h) const;
  bool has(SublayerRole role) const;

 protected:
  // Runs sublayer `role`, one of roles().
  virtual Var run(Graph& g, SublayerRole role, const Var& h) const = 0;
};

// Sublayers from one function (a test's stand-ins for attention and FFN).
class BOOST_SYMBOL_VISIBLE SublayerFunctions final : public Sublayers {
 public:
  using Function = std::function<Var(Graph&, SublayerRole, const Var&)>;
  SublayerFunctions(std::vector<SublayerRole> roles, Function f) : roles_(std::move(roles)), f_(std::move(f)) {}
  const std::vector<SublayerRole>& roles() const override { return roles_; }

 protected:
  Var run(Graph& g, SublayerRole role, const Var& h) const override { return f_(g, role, h); }

 private:
  std::vector<SublayerRole> roles_;
  Function f_;
};

// Kind "block": the wiring of one layer around its sublayers, i.e. where the norms and the
// residual adds sit, e.g. for every role r in order:
//   post_norm: x = Norm_r(x + Dropout(f_r(x)))      pre_norm: x = x + Dropout(f_r(Norm_r(x)))
// and a parallel block runs attention and FFN on one normalised input. Residual dropout uses
// dims.dropout (ops::dropout: the identity outside training).
class BOOST_SYMBOL_VISIBLE Block : public Component {
 public:
  static constexpr const char* kKind = "block";
  // Adds the block's parameters (its norms, gates) for a layer with `roles` under `scope`
  // (e.g. "decoder.layers.0").
  virtual void build(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles) = 0;
  // Called once per layer after its sublayers were built, with build()'s scope: their parameters
  // are under scope.child("self_attn"), ("cross_attn") and ("ffn") (ParamScope::parameters), and
  // a block may re-initialise or scale them (ParameterStore::scale_value): DeepNet's beta-scaled
  // initialisation. Default: nothing.
  virtual void init_sublayers(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles) {
    (void)scope, (void)dims, (void)roles;
  }
  // The layer: x [B, T, D] -> [B, T, D], calling each of sublayers.roles() once.
  virtual Var forward(Graph& g, const Var& x, const Sublayers& sublayers) const = 0;
  // True when the stack of these blocks must end with a norm (pre-norm: the residual stream
  // is never normalised otherwise). The model owns that final norm, of kind norm_kind().
  virtual bool wants_final_norm() const = 0;
  virtual NormKind norm_kind() const = 0;
};

// The state and forward pass every position-wise FFN shares: y = Linear_out(Dropout(act(Linear_in(x))))
// with D -> F -> D widths, the activation fused into the first linear. Parameters
// "<scope>.in.weight" [F, D], ".in.bias" [F], ".out.weight" [D, F], ".out.bias" [D]; Xavier-uniform
// weights, zero biases. Errors name the plugin (e.g. "ffn/relu").
class BOOST_SYMBOL_VISIBLE FeedForwardLayers {
 public:
  explicit FeedForwardLayers(std::string plugin) : plugin_(std::move(plugin)) {}
  void build(const ParamScope& scope, const ModelDims& dims);
  // x: [B, T, D] -> h: [B, T, F] -> y: [B, T, D]: output(g, hidden(g, x, act)), with h's dropout
  // in Linear_in's op (ops::linear_dropout: one pass where the backend fuses it).
  Var operator()(Graph& g, const Var& x, Activation act) const;
  // x: [B, T, D] -> act(Linear_in(x)): [B, T, F] (a plugin may transform it before output).
  Var hidden(Graph& g, const Var& x, Activation act) const;
  // h: [B, T, F] -> Linear_out(Dropout(h)): [B, T, D].
  Var output(Graph& g, const Var& h) const;

 private:
  void check_built() const;
  Var project_out(Graph& g, const Var& dropped) const;  // Linear_out

  std::string plugin_;
  float dropout_ = 0.0f;
  Parameter* w_in_ = nullptr;
  Parameter* b_in_ = nullptr;
  Parameter* w_out_ = nullptr;
  Parameter* b_out_ = nullptr;
};

// The state and forward pass of the gated FFNs (GLU variants, Shazeer 2020):
// y = Linear_out(Dropout(act(Linear_gate(x)) * Linear_up(x))) with D -> F' -> D widths, where
// F' = `hidden`, or floor(2 d_ff / 3) when hidden is 0: three matrices of F' hold as many weights
// as a two-matrix FFN of width d_ff. Parameters "<scope>.gate.weight" [F', D], ".up.weight"
// [F', D], ".out.weight" [D, F'] and, with bias, ".gate.bias", ".up.bias" [F'], ".out.bias" [D].
class BOOST_SYMBOL_VISIBLE GatedFeedForwardLayers {
 public:
  explicit GatedFeedForwardLayers(std::string plugin) : plugin_(std::move(plugin)) {}
  void build(const ParamScope& scope, const ModelDims& dims, std::int64_t hidden, bool bias);
  // x: [B, T, D] -> gate, up: [B, T, F'] -> y: [B, T, D]
  Var operator()(Graph& g, const Var& x, Activation act) const;
  static std::int64_t matched_hidden(std::int64_t d_ff) { return 2 * d_ff / 3; }

 private:
  std::string plugin_;
  float dropout_ = 0.0f;
  Parameter* w_gate_ = nullptr;
  Parameter* b_gate_ = nullptr;
  Parameter* w_up_ = nullptr;
  Parameter* b_up_ = nullptr;
  Parameter* w_out_ = nullptr;
  Parameter* b_out_ = nullptr;
};

// The state every norm-placement block shares: one NormLayer per sublayer, "<scope>.norm<i>" for
// the i-th of the layer's roles, looked up by role (errors name the block, e.g. "block/pre_norm").
class BOOST_SYMBOL_VISIBLE SublayerNorms {
 public:
  void build(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles, NormKind kind,
             const std::string& block);
  const NormLayer& operator[](SublayerRole role) const;
  std::size_t size() const { return norms_.size(); }

 private:
  std::vector<SublayerRole> roles_;
  std::vector<NormLayer> norms_;
  std::string block_;
};

}  // namespace ablate
