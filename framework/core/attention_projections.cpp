// AttentionProjections (ablate/attention.hpp): the projections, heads, positions and cache handling
// every multi-head attention shares, written once (attention/mha and variants out of tree use it).
#include "ablate/attention.hpp"

#include "ablate/error.hpp"

namespace ablate {
namespace {

Var bias(Graph& g, Parameter* p) { return p ? g.parameter(*p) : Var(); }

}  // namespace

void AttentionProjections::check(const ModelDims& dims, std::int64_t kv_heads) const {
  if (dims.heads <= 0 || dims.d_model % dims.heads != 0)
    throw Error(plugin_ + ": heads " + std::to_string(dims.heads) + " does not divide d_model " + std::to_string(dims.d_model),
                "choose model.heads as a divisor of model.d_model");
  const std::int64_t kv = kv_heads == 0 ? dims.heads : kv_heads;
  if (kv < 1 || kv > dims.heads || dims.heads % kv != 0)
    throw Error(plugin_ + ": kv_heads " + std::to_string(kv) + " must divide model.heads " + std::to_string(dims.heads),
                "1 is multi-query attention, model.heads (or 0) is multi-head attention");
}

void AttentionProjections::build(const ParamScope& scope, const ModelDims& dims, AttentionRole role, std::int64_t kv_heads) {
  check(dims, kv_heads);
  const std::int64_t d = dims.d_model, kv = kv_heads == 0 ? dims.heads : kv_heads;
  role_ = role;
  heads_ = static_cast<int>(dims.heads);
  kv_heads_ = static_cast<int>(kv);
  width_ = d;
  kv_width_ = kv * (d / dims.heads);
  const bool self = role == AttentionRole::Self;
  const std::string in = self ? "qkv" : "q";
  const std::int64_t in_rows = self ? d + 2 * kv_width_ : d;
  in_w_ = &scope.param(in + ".weight", {in_rows, d}, Init::xavier_uniform());
  if (dims.qkv_bias) in_b_ = &scope.param(in + ".bias", {in_rows}, Init::zeros());
  if (!self) {
    kv_w_ = &scope.param("kv.weight", {2 * kv_width_, d}, Init::xavier_uniform());
    if (dims.qkv_bias) kv_b_ = &scope.param("kv.bias", {2 * kv_width_}, Init::zeros());
  }
  out_w_ = &scope.param("out.weight", {d, d}, Init::xavier_uniform());
  if (dims.out_bias) out_b_ = &scope.param("out.bias", {d}, Init::zeros());
}

void AttentionProjections::check_built() const {
  if (!out_w_) throw Error(plugin_ + ": forward before build", "call build(scope, dims, role) once first");
}

Var AttentionProjections::project_in(Graph& g, const Var& x) const {
  return ops::linear(g, x, g.parameter(*in_w_), bias(g, in_b_));
}

Var AttentionProjections::project_memory(Graph& g, const Var& m) const {
  return ops::linear(g, m, g.parameter(*kv_w_), bias(g, kv_b_));
}

Var AttentionProjections::project_out(Graph& g, const Var& x) const {
  return ops::linear(g, x, g.parameter(*out_w_), bias(g, out_b_));
}

AttentionProjections::Heads AttentionProjections::heads(Graph& g, const AttentionCall& call,
                                                        const BeforePositions& before_positions) const {
  check_built();
  const auto before = [&](const Var& x, bool key) { return before_positions ? before_positions(g, x, key) : x; };
  Heads h;
  if (role_ == AttentionRole::Self) {
    const Var qkv = project_in(g, call.x);           // [B, T, D + 2K]
    if (kv_heads_ == heads_) {                       // three equal parts: split straight from the fused projection
      h.q = ops::split_heads(g, qkv, heads_, 3, 0);  // [B, H, T, Dh]
      h.kv = {ops::split_heads(g, qkv, heads_, 3, 1), ops::split_heads(g, qkv, heads_, 3, 2)};
    } else {                                                                  // q [B, T, D] | k [B, T, K] | v [B, T, K]
      h.q = ops::split_heads(g, ops::slice_last(g, qkv, 0, width_), heads_);  // [B, H, T, Dh]
      h.kv = {ops::split_heads(g, ops::slice_last(g, qkv, width_, kv_width_), kv_heads_),  // [B, Hkv, T, Dh]
              ops::split_heads(g, ops::slice_last(g, qkv, width_ + kv_width_, kv_width_), kv_heads_)};
    }
    h.kv.k = before(h.kv.k, true);
    if (call.positions) h.kv.k = call.positions->keys(g, h.kv.k);
    if (call.cache) h.kv = call.cache->append(g, h.kv.k, h.kv.v);  // [B, Hkv, S, Dh]: every step's keys
  } else {
    h.q = ops::split_heads(g, project_in(g, call.x), heads_);  // [B, H, T, Dh]
    if (call.cache && call.cache->has_memory()) {
      h.kv = call.cache->memory();
    } else {
      if (!call.memory.defined()) throw Error(plugin_ + ": a cross-attention call without the encoder output");
      const Var m = project_memory(g, call.memory);                                               // [B, S, 2K]
      h.kv = {ops::split_heads(g, m, kv_heads_, 2, 0), ops::split_heads(g, m, kv_heads_, 2, 1)};  // [B, Hkv, S, Dh]
      h.kv.k = before(h.kv.k, true);
      if (call.positions) h.kv.k = call.positions->keys(g, h.kv.k);
      if (call.cache) call.cache->keep_memory(h.kv);
    }
  }
  h.q = before(h.q, false);
  if (call.positions) h.q = call.positions->queries(g, h.q);
  return h;
}

Var AttentionProjections::output(Graph& g, const Var& heads) const {
  return project_out(g, ops::merge_heads(g, heads));  // [B, T, D]
}

Var AttentionProjections::attend(Graph& g, const AttentionCall& call, const ops::AttentionOptions& options,
                                 const BeforePositions& before_positions) const {
  if (before_positions || call.positions || call.cache) {  // the heads are acted on, or kept: split
    const Heads h = heads(g, call, before_positions);
    return output(g, ops::attention(g, h.q, h.kv.k, h.kv.v, options));
  }
  check_built();
  PackedHeads layout;
  layout.heads = heads_;
  layout.kv_heads = kv_heads_;
  layout.head_dim = width_ / heads_;
  Var o;  // [B, T, D]
  if (role_ == AttentionRole::Self) {
    const Var qkv = project_in(g, call.x);  // [B, T, D + 2K]: q | k | v
    layout.k_col = width_;
    layout.v_col = width_ + kv_width_;
    o = ops::packed_attention(g, qkv, qkv, qkv, layout, options);
  } else {
    if (!call.memory.defined()) throw Error(plugin_ + ": a cross-attention call without the encoder output");
    const Var q = project_in(g, call.x);            // [B, T, D], first: the tape's order as heads() makes it
    const Var kv = project_memory(g, call.memory);  // [B, S, 2K]: k | v
    layout.v_col = kv_width_;
    o = ops::packed_attention(g, q, kv, kv, layout, options);
  }
  return project_out(g, o);
}

}  // namespace ablate
