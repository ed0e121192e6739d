// Plugin attention/mha: multi-head attention of "Attention Is All You Need" (section 3.2.2), the
// default attention sublayer: a fused q/k/v projection for self-attention (q, and a fused k/v of the
// memory, for cross-attention), heads split and merged by backend ops, scaled dot-product attention.
#include "ablate/attention.hpp"

namespace attention_mha {

using ablate::Var;

class MultiHeadAttention final : public ablate::Attention {
 public:
  // Adds, under `scope` ("decoder.layers.0.self_attn"), with D = dims.d_model:
  //   Self:  qkv.weight [3D, D] (+ qkv.bias [3D])       Cross: q.weight [D, D], kv.weight [2D, D] (+ biases)
  //   both:  out.weight [D, D] (+ out.bias [D])
  // Weights are Xavier-uniform (as PyTorch's nn.MultiheadAttention), biases zero.
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, ablate::AttentionRole role) override {
    const std::int64_t d = dims.d_model;
    if (dims.heads <= 0 || d % dims.heads != 0)
      throw ablate::Error("attention/mha in '" + scope.prefix() + "': heads " + std::to_string(dims.heads) +
                              " does not divide d_model " + std::to_string(d),
                          "choose model.heads as a divisor of model.d_model");
    role_ = role;
    heads_ = static_cast<int>(dims.heads);
    dropout_ = dims.attention_dropout;
    const bool self = role == ablate::AttentionRole::Self;
    const std::string in = self ? "qkv" : "q";
    in_w_ = &scope.param(in + ".weight", {self ? 3 * d : d, d}, ablate::Init::xavier_uniform());
    if (dims.qkv_bias) in_b_ = &scope.param(in + ".bias", {self ? 3 * d : d}, ablate::Init::zeros());
    if (!self) {
      kv_w_ = &scope.param("kv.weight", {2 * d, d}, ablate::Init::xavier_uniform());
      if (dims.qkv_bias) kv_b_ = &scope.param("kv.bias", {2 * d}, ablate::Init::zeros());
    }
    out_w_ = &scope.param("out.weight", {d, d}, ablate::Init::xavier_uniform());
    if (dims.out_bias) out_b_ = &scope.param("out.bias", {d}, ablate::Init::zeros());
  }

  // x: [B, T, D] (memory: [B, S, D]) -> [B, T, D]
  Var forward(ablate::Graph& g, const ablate::AttentionCall& call) const override {
    namespace ops = ablate::ops;
    if (!out_w_) throw ablate::Error("attention/mha: forward before build", "call build(scope, dims, role) once first");
    Var q;
    ablate::KeyValues kv;
    if (role_ == ablate::AttentionRole::Self) {
      const Var qkv = ops::linear(g, call.x, g.parameter(*in_w_), bias(g, in_b_));  // [B, T, 3D]
      q = ops::split_heads(g, qkv, heads_, 3, 0);                                   // [B, H, T, Dh]
      kv = {ops::split_heads(g, qkv, heads_, 3, 1), ops::split_heads(g, qkv, heads_, 3, 2)};
      if (call.positions) kv.k = call.positions->keys(g, kv.k);
      if (call.cache) kv = call.cache->append(g, kv.k, kv.v);  // [B, H, S, Dh]: every step's keys
    } else {
      q = ops::split_heads(g, ops::linear(g, call.x, g.parameter(*in_w_), bias(g, in_b_)), heads_);  // [B, H, T, Dh]
      if (call.cache && call.cache->has_memory()) {
        kv = call.cache->memory();
      } else {
        if (!call.memory.defined())
          throw ablate::Error("attention/mha: a cross-attention call without the encoder output");
        const Var m = ops::linear(g, call.memory, g.parameter(*kv_w_), bias(g, kv_b_));  // [B, S, 2D]
        kv = {ops::split_heads(g, m, heads_, 2, 0), ops::split_heads(g, m, heads_, 2, 1)};
        if (call.positions) kv.k = call.positions->keys(g, kv.k);
        if (call.cache) call.cache->keep_memory(kv);
      }
    }
    if (call.positions) q = call.positions->queries(g, q);
    ops::AttentionOptions mask = call.mask;
    mask.dropout = dropout_;
    const Var heads = ops::attention(g, q, kv.k, kv.v, mask);                                   // [B, H, T, Dh]
    return ops::linear(g, ops::merge_heads(g, heads), g.parameter(*out_w_), bias(g, out_b_));  // [B, T, D]
  }

 private:
  static Var bias(ablate::Graph& g, ablate::Parameter* p) { return p ? g.parameter(*p) : Var(); }

  ablate::AttentionRole role_ = ablate::AttentionRole::Self;
  int heads_ = 1;
  float dropout_ = 0.0f;
  ablate::Parameter* in_w_ = nullptr;  // Self: qkv [3D, D]; Cross: q [D, D]
  ablate::Parameter* in_b_ = nullptr;
  ablate::Parameter* kv_w_ = nullptr;  // Cross only: kv [2D, D]
  ablate::Parameter* kv_b_ = nullptr;
  ablate::Parameter* out_w_ = nullptr;  // [D, D]
  ablate::Parameter* out_b_ = nullptr;
};

ablate::Component* create(const ablate::Options&) { return new MultiHeadAttention(); }

ABLATE_PLUGIN("attention", "mha", "1.0.0",
              "multi-head attention, fused q/k/v projection, scaled dot-product (Vaswani et al. 2017)",
              ablate::kNoOptions, create)

}  // namespace attention_mha
