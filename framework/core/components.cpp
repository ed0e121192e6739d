// ParamScope, NormLayer, FeedForwardLayers, Sublayers and SublayerNorms (ablate/components.hpp) and the
// KeyValueCache (ablate/attention.hpp): the building blocks component plugins share, out of line so
// every plugin uses one definition.
#include "ablate/components.hpp"

#include <algorithm>

#include "ablate/attention.hpp"

#include "ablate/error.hpp"
#include "ablate/ops.hpp"

namespace ablate {

ParamScope::ParamScope(ParameterStore& store, std::uint64_t seed, std::string prefix)
    : store_(&store), seed_(seed), prefix_(std::move(prefix)) {}

std::string ParamScope::name(const std::string& leaf) const {
  if (leaf.empty())
    throw Error("ParamScope: empty parameter name in scope '" + prefix_ + "'",
                "give every parameter a leaf name such as \"weight\" or \"in.bias\"");
  return prefix_.empty() ? leaf : prefix_ + "." + leaf;
}

Parameter& ParamScope::param(const std::string& leaf, const Shape& shape, const Init& init) const {
  return store_->add(name(leaf), shape, init, seed_);
}

ParamScope ParamScope::child(const std::string& name) const { return ParamScope(*store_, seed_, this->name(name)); }

NormKind parse_norm_kind(const std::string& name) {
  if (name == "layer_norm") return NormKind::LayerNorm;
  if (name == "rms_norm") return NormKind::RMSNorm;
  throw Error("unknown norm '" + name + "'; expected layer_norm or rms_norm");
}

NormLayer::NormLayer(const ParamScope& scope, NormKind kind, std::int64_t d, float eps) : kind_(kind), eps_(eps) {
  gamma_ = &scope.param("gamma", {d}, Init::ones());
  if (kind == NormKind::LayerNorm) beta_ = &scope.param("beta", {d}, Init::zeros());
}

Var NormLayer::operator()(Graph& g, const Var& x) const {
  if (gamma_ == nullptr) throw Error("NormLayer: used before it was built with a scope");
  return beta_ ? ops::layer_norm(g, x, g.parameter(*gamma_), g.parameter(*beta_), eps_)
               : ops::rms_norm(g, x, g.parameter(*gamma_), eps_);
}

void FeedForwardLayers::build(const ParamScope& scope, const ModelDims& dims) {
  if (dims.d_model <= 0 || dims.d_ff <= 0)
    throw Error(plugin_ + " in '" + scope.prefix() + "': d_model and d_ff must be > 0, got d_model " +
                    std::to_string(dims.d_model) + ", d_ff " + std::to_string(dims.d_ff),
                "set model.d_model and model.d_ff to positive sizes");
  dropout_ = dims.dropout;
  w_in_ = &scope.param("in.weight", {dims.d_ff, dims.d_model}, Init::xavier_uniform());   // [F, D]
  b_in_ = &scope.param("in.bias", {dims.d_ff}, Init::zeros());                            // [F]
  w_out_ = &scope.param("out.weight", {dims.d_model, dims.d_ff}, Init::xavier_uniform());  // [D, F]
  b_out_ = &scope.param("out.bias", {dims.d_model}, Init::zeros());                        // [D]
}

Var FeedForwardLayers::operator()(Graph& g, const Var& x, Activation act) const {
  if (!w_in_) throw Error(plugin_ + ": forward before build", "call build(scope, dims) once first");
  const Var h = ops::dropout(g, ops::linear(g, x, g.parameter(*w_in_), g.parameter(*b_in_), act), dropout_);
  return ops::linear(g, h, g.parameter(*w_out_), g.parameter(*b_out_));
}

const char* sublayer_role_name(SublayerRole role) {
  switch (role) {
    case SublayerRole::SelfAttention: return "self_attention";
    case SublayerRole::CrossAttention: return "cross_attention";
    case SublayerRole::FeedForward: return "ffn";
  }
  return "?";
}

const char* attention_role_name(AttentionRole role) { return role == AttentionRole::Self ? "self" : "cross"; }

bool Sublayers::has(SublayerRole role) const {
  const std::vector<SublayerRole>& r = roles();
  return std::find(r.begin(), r.end(), role) != r.end();
}

Var Sublayers::operator()(Graph& g, SublayerRole role, const Var& h) const {
  if (!has(role))
    throw Error(std::string("this layer has no ") + sublayer_role_name(role) + " sublayer",
                "a block calls only the roles in sublayers.roles()");
  return run(g, role, h);
}

void SublayerNorms::build(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles,
                          NormKind kind, const std::string& block) {
  block_ = block;
  if (dims.d_model <= 0 || roles.empty())
    throw Error(block + " in '" + scope.prefix() + "': needs d_model > 0 and at least one sublayer, got d_model " +
                std::to_string(dims.d_model) + ", " + std::to_string(roles.size()) + " sublayers");
  roles_ = roles;
  norms_.clear();
  for (std::size_t i = 0; i < roles.size(); ++i)
    norms_.emplace_back(scope.child("norm" + std::to_string(i)), kind, dims.d_model, dims.norm_eps);
}

const NormLayer& SublayerNorms::operator[](SublayerRole role) const {
  const auto it = std::find(roles_.begin(), roles_.end(), role);
  if (it == roles_.end())
    throw Error(block_ + ": no norm for the " + sublayer_role_name(role) + " sublayer: built for " +
                    std::to_string(roles_.size()) + " sublayers without it",
                "build(scope, dims, roles) with the roles of the layer the block runs");
  return norms_[static_cast<std::size_t>(it - roles_.begin())];
}

KeyValues KeyValueCache::append(Graph& g, const Var& k, const Var& v) {
  const Tensor& kt = k.value();
  const Tensor& vt = v.value();
  if (kt.shape().rank() != 4 || vt.shape() != kt.shape() || vt.dtype() != kt.dtype())
    throw Error("KeyValueCache: keys " + kt.str() + " and values " + vt.str() + " must both be [B, Hkv, T, Dh] of one dtype");
  const Shape& s = kt.shape();
  if (length_ + s[2] > capacity_)
    throw Error("KeyValueCache: " + std::to_string(length_) + " positions held + " + std::to_string(s[2]) +
                    " new exceed its capacity of " + std::to_string(capacity_),
                "the model sizes the cache for the prompt and every new token");
  if (!k_.defined()) {
    k_ = g.backend().empty({s[0], s[1], capacity_, s[3]}, kt.dtype());
    v_ = g.backend().empty(k_.shape(), kt.dtype());
    g.backend().fill(k_, 0.0f);  // rows past length() are masked; zeros keep them finite anyway
    g.backend().fill(v_, 0.0f);
  } else if (k_.dtype() != kt.dtype() || k_.shape()[0] != s[0] || k_.shape()[1] != s[1] || k_.shape()[3] != s[3]) {
    throw Error("KeyValueCache: keys " + kt.str() + " do not fit the cache " + k_.str() + " made at the first step");
  }
  g.backend().write_time_slice(k_, kt, length_);
  g.backend().write_time_slice(v_, vt, length_);
  length_ += s[2];
  return {g.constant(k_), g.constant(v_)};
}

}  // namespace ablate
