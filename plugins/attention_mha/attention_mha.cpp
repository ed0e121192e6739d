// Plugin attention/mha: multi-head attention of "Attention Is All You Need" (section 3.2.2), the
// default attention sublayer: a fused q/k/v projection for self-attention (q, and a fused k/v of the
// memory, for cross-attention), scaled dot-product attention reading the heads where the projection
// keeps them (ops::packed_attention; split and merged by backend ops where something acts on them).
// Options: kv_heads < heads shares each k/v head among a group of query heads (grouped-query
// attention, Ainslie et al. 2023; 1 = multi-query, Shazeer 2019) without repeating k and v;
// qk_norm normalises each head's q and k (Dehghani et al. 2023); logit_softcap bounds the logits.
// The projections, heads, positions and cache are ablate::AttentionProjections, which variants share.
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
  // (K = D without grouping), the projections of ablate::AttentionProjections:
  //   Self:  qkv.weight [D + 2K, D] (+ qkv.bias)       Cross: q.weight [D, D], kv.weight [2K, D] (+ biases)
  //   both:  out.weight [D, D] (+ out.bias [D])
  //   qk_norm: q_norm and k_norm, a norm of the kind over Dh shared by the heads (gamma [Dh], ...)
  // Weights are Xavier-uniform (as PyTorch's nn.MultiheadAttention), biases zero.
  // heads divide d_model, and kv_heads divides heads.
  void check(const ablate::ModelDims& dims) const override { projections_.check(dims, kv_heads_option_); }

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, ablate::AttentionRole role) override {
    projections_.build(scope, dims, role, kv_heads_option_);
    dropout_ = dims.attention_dropout;
    if (qk_norm_ != "none") {
      const ablate::NormKind kind = ablate::parse_norm_kind(qk_norm_);
      q_norm_.emplace(scope.child("q_norm"), kind, dims.d_model / dims.heads, dims.norm_eps);
      k_norm_.emplace(scope.child("k_norm"), kind, dims.d_model / dims.heads, dims.norm_eps);
    }
  }

  // x: [B, T, D] (memory: [B, S, D]) -> [B, T, D]
  Var forward(ablate::Graph& g, const ablate::AttentionCall& call) const override {
    ablate::ops::AttentionOptions mask = call.mask;
    mask.dropout = dropout_;
    mask.softcap = softcap_;
    if (!q_norm_) return projections_.attend(g, call, mask);
    return projections_.attend(g, call, mask, [this](ablate::Graph& g, const Var& x, bool key) {  // qk norm, before positions
      return (key ? *k_norm_ : *q_norm_)(g, x);
    });
  }

 private:
  std::int64_t kv_heads_option_;  // 0: model.heads
  std::string qk_norm_;           // none | layer_norm | rms_norm | scale_norm
  float softcap_;                 // logits -> softcap * tanh(logits / softcap); 0: none
  ablate::AttentionProjections projections_{"attention/mha"};
  std::optional<ablate::NormLayer> q_norm_, k_norm_;  // over Dh: q [B, H, T, Dh], k [B, Hkv, S, Dh]
  float dropout_ = 0.0f;
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

ABLATE_PLUGIN("attention", "mha", "1.3.1",
              "multi-head attention, fused q/k/v projection, scaled dot-product (Vaswani et al. 2017); grouped k/v heads, "
              "qk norm, logit soft-capping",
              ablate::options_of(kOptions), create)

}  // namespace attention_mha
