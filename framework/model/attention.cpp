// Multi-head attention (attention.hpp): projections with a fused q/k/v matrix for
// self-attention, heads split/merged by backend ops, scaled dot-product attention in between.
#include "model/attention.hpp"

#include "ablate/error.hpp"

namespace ablate::model {

MultiHeadAttention::MultiHeadAttention(const ParamScope& scope, const ModelDims& dims, Kind kind)
    : kind_(kind), heads_(static_cast<int>(dims.heads)), dropout_(dims.attention_dropout) {
  const std::int64_t d = dims.d_model;
  if (dims.heads <= 0 || d % dims.heads != 0)
    throw Error("attention '" + scope.prefix() + "': heads " + std::to_string(dims.heads) + " does not divide d_model " +
                    std::to_string(d),
                "choose model.heads as a divisor of model.d_model");
  const std::string in = kind == Kind::Self ? "qkv" : "q";
  const std::int64_t in_rows = kind == Kind::Self ? 3 * d : d;
  in_w_ = &scope.param(in + ".weight", {in_rows, d}, Init::xavier_uniform());
  if (dims.qkv_bias) in_b_ = &scope.param(in + ".bias", {in_rows}, Init::zeros());
  if (kind == Kind::Cross) {
    kv_w_ = &scope.param("kv.weight", {2 * d, d}, Init::xavier_uniform());
    if (dims.qkv_bias) kv_b_ = &scope.param("kv.bias", {2 * d}, Init::zeros());
  }
  out_w_ = &scope.param("out.weight", {d, d}, Init::xavier_uniform());
  if (dims.out_bias) out_b_ = &scope.param("out.bias", {d}, Init::zeros());
}

MultiHeadAttention::Projected MultiHeadAttention::project_self(Graph& g, const Var& x) const {
  if (kind_ != Kind::Self) throw Error("MultiHeadAttention::project_self on a cross-attention");
  const Var qkv = ops::linear(g, x, g.parameter(*in_w_), bias_of(g, in_b_));  // [B, T, 3D]
  return {ops::split_heads(g, qkv, heads_, 3, 0), {ops::split_heads(g, qkv, heads_, 3, 1), ops::split_heads(g, qkv, heads_, 3, 2)}};
}

KeyValues MultiHeadAttention::project_memory(Graph& g, const Var& memory) const {
  if (kind_ != Kind::Cross) throw Error("MultiHeadAttention::project_memory on a self-attention");
  const Var kv = ops::linear(g, memory, g.parameter(*kv_w_), bias_of(g, kv_b_));  // [B, S, 2D]
  return {ops::split_heads(g, kv, heads_, 2, 0), ops::split_heads(g, kv, heads_, 2, 1)};
}

Var MultiHeadAttention::project_query(Graph& g, const Var& x) const {
  if (kind_ != Kind::Cross) throw Error("MultiHeadAttention::project_query on a self-attention");
  return ops::split_heads(g, ops::linear(g, x, g.parameter(*in_w_), bias_of(g, in_b_)), heads_);  // [B, H, T, Dh]
}

Var MultiHeadAttention::attend(Graph& g, const Var& q, const KeyValues& kv, ops::AttentionOptions mask) const {
  mask.dropout = dropout_;
  const Var heads = ops::attention(g, q, kv.k, kv.v, mask);                                 // [B, H, T, Dh]
  return ops::linear(g, ops::merge_heads(g, heads), g.parameter(*out_w_), bias_of(g, out_b_));  // [B, T, D]
}

Var MultiHeadAttention::forward(Graph& g, const Var& x, const Var& memory, ops::AttentionOptions mask) const {
  if (kind_ == Kind::Self) {
    const Projected p = project_self(g, x);
    return attend(g, p.q, p.kv, mask);
  }
  if (!memory.defined()) throw Error("MultiHeadAttention::forward: cross-attention needs the encoder output");
  return attend(g, project_query(g, x), project_memory(g, memory), mask);
}

}  // namespace ablate::model
