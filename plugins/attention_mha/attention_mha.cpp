// Plugin attention/mha: multi-head attention of "Attention Is All You Need" (section 3.2.2), the
// default attention sublayer: a fused q/k/v projection for self-attention (q, and a fused k/v of the
// memory, for cross-attention), heads split and merged by backend ops, scaled dot-product attention.
// Options: kv_heads < heads shares each k/v head among a group of query heads (grouped-query
// attention, Ainslie et al. 2023; 1 = multi-query, Shazeer 2019) without repeating k and v;
// qk_norm normalises each head's q and k (Dehghani et al. 2023); logit_softcap bounds the logits.
#include <limits>
#include <optional>
#include <sstream>

#include "ablate/attention.hpp"

namespace attention_mha {

using ablate::Var;

class MultiHeadAttention final : public ablate::Attention {
 public:
  explicit MultiHeadAttention(const ablate::Options& o)
      : kv_heads_option_(o.get_int("kv_heads")),
        qk_norm_(o.get_string("qk_norm")),
        softcap_(static_cast<float>(o.get_float("logit_softcap"))) {
    if (kv_heads_option_ < 0)
      throw ablate::Error("attention/mha: kv_heads must be >= 0 (0: as many as model.heads), got " +
                          std::to_string(kv_heads_option_));
    // The cap is computed in f32 (c tanh(x / c)): past f32's range it is inf and every logit NaN.
    const double softcap = o.get_float("logit_softcap");
    if (!(softcap >= 0.0) || !(softcap <= std::numeric_limits<float>::max())) {
      std::ostringstream got;
      got << softcap;
      throw ablate::Error(
          "attention/mha: logit_softcap must be >= 0 and within f32's range (at most 3.4e38; 0: none), got " + got.str(),
          "soft-capping bounds logits to (-c, c); Gemma 2 uses c = 50");
    }
  }

  // Adds, under `scope` ("decoder.layers.0.self_attn"), with D = dims.d_model and K = kv_heads * Dh
  // (K = D without grouping):
  //   Self:  qkv.weight [D + 2K, D] (+ qkv.bias)       Cross: q.weight [D, D], kv.weight [2K, D] (+ biases)
  //   both:  out.weight [D, D] (+ out.bias [D])
  //   qk_norm: q_norm and k_norm, a norm of the kind over Dh shared by the heads (gamma [Dh], ...)
  // Weights are Xavier-uniform (as PyTorch's nn.MultiheadAttention), biases zero.
  // heads divide d_model, and kv_heads divides heads.
  void check(const ablate::ModelDims& dims) const override {
    if (dims.heads <= 0 || dims.d_model % dims.heads != 0)
      throw ablate::Error(
          "attention/mha: heads " + std::to_string(dims.heads) + " does not divide d_model " + std::to_string(dims.d_model),
          "choose model.heads as a divisor of model.d_model");
    const std::int64_t kv_heads = kv_heads_of(dims);
    if (kv_heads > dims.heads || dims.heads % kv_heads != 0)
      throw ablate::Error(
          "attention/mha: kv_heads " + std::to_string(kv_heads) + " must divide model.heads " + std::to_string(dims.heads),
          "1 is multi-query attention, model.heads (or 0) is multi-head attention");
  }

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, ablate::AttentionRole role) override {
    check(dims);
    const std::int64_t d = dims.d_model;
    const std::int64_t kv_heads = kv_heads_of(dims);
    role_ = role;
    heads_ = static_cast<int>(dims.heads);
    kv_heads_ = static_cast<int>(kv_heads);
    width_ = d;
    kv_width_ = kv_heads * (d / dims.heads);
    dropout_ = dims.attention_dropout;
    const bool self = role == ablate::AttentionRole::Self;
    const std::string in = self ? "qkv" : "q";
    const std::int64_t in_rows = self ? d + 2 * kv_width_ : d;
    in_w_ = &scope.param(in + ".weight", {in_rows, d}, ablate::Init::xavier_uniform());
    if (dims.qkv_bias) in_b_ = &scope.param(in + ".bias", {in_rows}, ablate::Init::zeros());
    if (!self) {
      kv_w_ = &scope.param("kv.weight", {2 * kv_width_, d}, ablate::Init::xavier_uniform());
      if (dims.qkv_bias) kv_b_ = &scope.param("kv.bias", {2 * kv_width_}, ablate::Init::zeros());
    }
    out_w_ = &scope.param("out.weight", {d, d}, ablate::Init::xavier_uniform());
    if (dims.out_bias) out_b_ = &scope.param("out.bias", {d}, ablate::Init::zeros());
    if (qk_norm_ != "none") {
      const ablate::NormKind kind = ablate::parse_norm_kind(qk_norm_);
      q_norm_.emplace(scope.child("q_norm"), kind, d / dims.heads, dims.norm_eps);
      k_norm_.emplace(scope.child("k_norm"), kind, d / dims.heads, dims.norm_eps);
    }
  }

  // x: [B, T, D] (memory: [B, S, D]) -> [B, T, D]
  Var forward(ablate::Graph& g, const ablate::AttentionCall& call) const override {
    namespace ops = ablate::ops;
    if (!out_w_) throw ablate::Error("attention/mha: forward before build", "call build(scope, dims, role) once first");
    Var q;
    ablate::KeyValues kv;
    if (role_ == ablate::AttentionRole::Self) {
      const Var qkv = ops::linear(g, call.x, g.parameter(*in_w_), bias(g, in_b_));  // [B, T, D + 2K]
      if (kv_heads_ == heads_) {                     // three equal parts: split straight from the fused projection
        q = ops::split_heads(g, qkv, heads_, 3, 0);  // [B, H, T, Dh]
        kv = {ops::split_heads(g, qkv, heads_, 3, 1), ops::split_heads(g, qkv, heads_, 3, 2)};
      } else {                                                                // q [B, T, D] | k [B, T, K] | v [B, T, K]
        q = ops::split_heads(g, ops::slice_last(g, qkv, 0, width_), heads_);  // [B, H, T, Dh]
        kv = {ops::split_heads(g, ops::slice_last(g, qkv, width_, kv_width_), kv_heads_),  // [B, Hkv, T, Dh]
              ops::split_heads(g, ops::slice_last(g, qkv, width_ + kv_width_, kv_width_), kv_heads_)};
      }
      if (k_norm_) kv.k = (*k_norm_)(g, kv.k);
      if (call.positions) kv.k = call.positions->keys(g, kv.k);
      if (call.cache) kv = call.cache->append(g, kv.k, kv.v);  // [B, H, S, Dh]: every step's keys
    } else {
      q = ops::split_heads(g, ops::linear(g, call.x, g.parameter(*in_w_), bias(g, in_b_)), heads_);  // [B, H, T, Dh]
      if (call.cache && call.cache->has_memory()) {
        kv = call.cache->memory();
      } else {
        if (!call.memory.defined()) throw ablate::Error("attention/mha: a cross-attention call without the encoder output");
        const Var m = ops::linear(g, call.memory, g.parameter(*kv_w_), bias(g, kv_b_));           // [B, S, 2K]
        kv = {ops::split_heads(g, m, kv_heads_, 2, 0), ops::split_heads(g, m, kv_heads_, 2, 1)};  // [B, Hkv, S, Dh]
        if (k_norm_) kv.k = (*k_norm_)(g, kv.k);
        if (call.positions) kv.k = call.positions->keys(g, kv.k);
        if (call.cache) call.cache->keep_memory(kv);
      }
    }
    if (q_norm_) q = (*q_norm_)(g, q);
    if (call.positions) q = call.positions->queries(g, q);
    ops::AttentionOptions mask = call.mask;
    mask.dropout = dropout_;
    mask.softcap = softcap_;
    const Var heads = ops::attention(g, q, kv.k, kv.v, mask);                                  // [B, H, T, Dh]
    return ops::linear(g, ops::merge_heads(g, heads), g.parameter(*out_w_), bias(g, out_b_));  // [B, T, D]
  }

 private:
  static Var bias(ablate::Graph& g, ablate::Parameter* p) { return p ? g.parameter(*p) : Var(); }
  // The option kv_heads, 0 meaning model.heads.
  std::int64_t kv_heads_of(const ablate::ModelDims& dims) const { return kv_heads_option_ == 0 ? dims.heads : kv_heads_option_; }

  std::int64_t kv_heads_option_;
  std::string qk_norm_;                               // none | layer_norm | rms_norm | scale_norm
  float softcap_;                                     // logits -> softcap * tanh(logits / softcap); 0: none
  std::optional<ablate::NormLayer> q_norm_, k_norm_;  // over Dh: q [B, H, T, Dh], k [B, Hkv, S, Dh]
  ablate::AttentionRole role_ = ablate::AttentionRole::Self;
  int heads_ = 1, kv_heads_ = 1;
  std::int64_t width_ = 0, kv_width_ = 0;  // D = H * Dh and K = Hkv * Dh
  float dropout_ = 0.0f;
  ablate::Parameter* in_w_ = nullptr;  // Self: qkv [D + 2K, D]; Cross: q [D, D]
  ablate::Parameter* in_b_ = nullptr;
  ablate::Parameter* kv_w_ = nullptr;  // Cross only: kv [2K, D]
  ablate::Parameter* kv_b_ = nullptr;
  ablate::Parameter* out_w_ = nullptr;  // [D, D]
  ablate::Parameter* out_b_ = nullptr;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"kv_heads", ablate::OptionType::Int, "0", nullptr,
     "k/v heads, dividing model.heads: 0 = model.heads (multi-head), 1 = multi-query, between = grouped-query"},
    {"qk_norm", ablate::OptionType::String, "none", "none|layer_norm|rms_norm|scale_norm",
     "norm of each head's q and k over Dh before positions act (Dehghani et al. 2023); none = off"},
    {"logit_softcap", ablate::OptionType::Float, "0", nullptr,
     "c > 0 bounds the scaled logits to (-c, c) by c * tanh(logits / c) (Gemma 2: 50); 0 = off"},
};

ablate::Component* create(const ablate::Options& o) { return new MultiHeadAttention(o); }

ABLATE_PLUGIN("attention", "mha", "1.2.0",
              "multi-head attention, fused q/k/v projection, scaled dot-product (Vaswani et al. 2017); grouped k/v heads, "
              "qk norm, logit soft-capping",
              ablate::options_of(kOptions), create)

}  // namespace attention_mha
