// ParamScope, NormLayer, FeedForwardLayers, Sublayers and SublayerNorms (ablate/components.hpp) and the
// KeyValueCache and EncodingPositions (ablate/attention.hpp): the building blocks component plugins share, out of line so
// every plugin uses one definition; and ablate::Component's key function.
#include "ablate/components.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ablate/attention.hpp"

#include "ablate/error.hpp"
#include "ablate/plugin.hpp"
#include "ablate/ops.hpp"
#include "plugin_host/plugin_call.hpp"

namespace ablate {

// The out-of-line key function of ablate::Component (ablate/plugin.hpp), so its vtable and
// type_info live in one place (libablate_core) that the host and every plugin share.
Component::~Component() = default;

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

std::vector<Parameter*> ParamScope::parameters() const {
  std::vector<Parameter*> out;
  for (Parameter* p : store_->all())
    if (prefix_.empty() || p->name.starts_with(prefix_ + ".")) out.push_back(p);
  return out;
}

NormKind parse_norm_kind(const std::string& name) {
  if (name == "layer_norm") return NormKind::LayerNorm;
  if (name == "rms_norm") return NormKind::RMSNorm;
  if (name == "scale_norm") return NormKind::ScaleNorm;
  throw Error("unknown norm '" + name + "'; expected one of " + kNormChoices);
}

NormLayer::NormLayer(const ParamScope& scope, NormKind kind, std::int64_t d, float eps) : kind_(kind), eps_(eps) {
  if (kind == NormKind::ScaleNorm) {
    gamma_ = &scope.param("g", {1}, Init::constant(std::sqrt(static_cast<float>(d))));
    Backend& be = scope.store().backend();
    unit_ = be.empty({d}, DType::F32);
    be.fill(unit_, 1.0f);
    return;
  }
  gamma_ = &scope.param("gamma", {d}, Init::ones());
  if (kind == NormKind::LayerNorm) beta_ = &scope.param("beta", {d}, Init::zeros());
}

Var NormLayer::operator()(Graph& g, const Var& x) const {
  if (gamma_ == nullptr) throw Error("NormLayer: used before it was built with a scope");
  if (kind_ == NormKind::ScaleNorm) {  // g x / ||x|| = (g / sqrt(D)) * x / rms(x)
    const Var unit = ops::cast(g, g.constant(unit_), x.dtype());
    const Var h = ops::rms_norm(g, x, unit, eps_);
    return ops::mul(g, ops::scale(g, h, 1.0f / std::sqrt(static_cast<float>(unit_.numel()))), g.parameter(*gamma_));
  }
  return beta_ ? ops::layer_norm(g, x, g.parameter(*gamma_), g.parameter(*beta_), eps_)
               : ops::rms_norm(g, x, g.parameter(*gamma_), eps_);
}

void FeedForwardLayers::build(const ParamScope& scope, const ModelDims& dims) {
  if (dims.d_model <= 0 || dims.d_ff <= 0)
    throw Error(plugin_ + " in '" + scope.prefix() + "': d_model and d_ff must be > 0, got d_model " +
                    std::to_string(dims.d_model) + ", d_ff " + std::to_string(dims.d_ff),
                "set model.d_model and model.d_ff to positive sizes");
  dropout_ = dims.dropout;
  w_in_ = &scope.param("in.weight", {dims.d_ff, dims.d_model}, Init::xavier_uniform());    // [F, D]
  b_in_ = &scope.param("in.bias", {dims.d_ff}, Init::zeros());                             // [F]
  w_out_ = &scope.param("out.weight", {dims.d_model, dims.d_ff}, Init::xavier_uniform());  // [D, F]
  b_out_ = &scope.param("out.bias", {dims.d_model}, Init::zeros());                        // [D]
}

void FeedForwardLayers::check_built() const {
  if (!w_in_) throw Error(plugin_ + ": forward before build", "call build(scope, dims) once first");
}

Var FeedForwardLayers::project_out(Graph& g, const Var& dropped) const {
  return ops::linear(g, dropped, g.parameter(*w_out_), g.parameter(*b_out_));
}

Var FeedForwardLayers::operator()(Graph& g, const Var& x, Activation act) const {
  check_built();
  return project_out(g, ops::linear_dropout(g, x, g.parameter(*w_in_), g.parameter(*b_in_), act, dropout_));
}

Var FeedForwardLayers::hidden(Graph& g, const Var& x, Activation act) const {
  check_built();
  return ops::linear(g, x, g.parameter(*w_in_), g.parameter(*b_in_), act);
}

Var FeedForwardLayers::output(Graph& g, const Var& h) const {
  check_built();
  return project_out(g, ops::dropout(g, h, dropout_));
}

void GatedFeedForwardLayers::build(const ParamScope& scope, const ModelDims& dims, std::int64_t hidden, bool bias) {
  const std::int64_t f = hidden > 0 ? hidden : matched_hidden(dims.d_ff);
  if (dims.d_model <= 0 || f <= 0 || hidden < 0)
    throw Error(plugin_ + " in '" + scope.prefix() + "': needs d_model > 0 and a hidden width > 0, got d_model " +
                    std::to_string(dims.d_model) + ", hidden " + std::to_string(hidden) + ", d_ff " + std::to_string(dims.d_ff) +
                    " (hidden 0 means floor(2 d_ff / 3))",
                "set model.d_ff >= 2, or the plugin's hidden option to a positive width");
  dropout_ = dims.dropout;
  w_gate_ = &scope.param("gate.weight", {f, dims.d_model}, Init::xavier_uniform());  // [F', D]
  w_up_ = &scope.param("up.weight", {f, dims.d_model}, Init::xavier_uniform());      // [F', D]
  w_out_ = &scope.param("out.weight", {dims.d_model, f}, Init::xavier_uniform());    // [D, F']
  if (bias) {
    b_gate_ = &scope.param("gate.bias", {f}, Init::zeros());
    b_up_ = &scope.param("up.bias", {f}, Init::zeros());
    b_out_ = &scope.param("out.bias", {dims.d_model}, Init::zeros());
  }
}

Var GatedFeedForwardLayers::operator()(Graph& g, const Var& x, Activation act) const {
  if (!w_gate_) throw Error(plugin_ + ": forward before build", "call build(scope, dims, hidden, bias) once first");
  const auto param = [&g](Parameter* p) { return p ? g.parameter(*p) : Var(); };
  const Var gate = ops::linear(g, x, g.parameter(*w_gate_), param(b_gate_), act);  // [B, T, F']
  const Var up = ops::linear(g, x, g.parameter(*w_up_), param(b_up_));             // [B, T, F']
  const Var h = ops::dropout(g, ops::mul(g, gate, up), dropout_);
  return ops::linear(g, h, g.parameter(*w_out_), param(b_out_));
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

void SublayerNorms::build(const ParamScope& scope, const ModelDims& dims, const std::vector<SublayerRole>& roles, NormKind kind,
                          const std::string& block) {
  block_ = block;
  if (dims.d_model <= 0 || roles.empty())
    throw Error(block + " in '" + scope.prefix() + "': needs d_model > 0 and at least one sublayer, got d_model " +
                std::to_string(dims.d_model) + ", " + std::to_string(roles.size()) + " sublayers");
  roles_ = roles;
  norms_.clear();
  for (std::size_t i = 0; i < roles.size(); ++i)
    norms_.emplace_back(scope.child("norm" + std::to_string(i)), kind, dims.d_model, dims.norm_eps);
}

std::size_t sublayer_index(const std::vector<SublayerRole>& roles, SublayerRole role, const std::string& owner,
                           const std::string& what) {
  const auto it = std::find(roles.begin(), roles.end(), role);
  if (it == roles.end())
    throw Error(owner + ": no " + what + " for the " + sublayer_role_name(role) + " sublayer: built for " +
                    std::to_string(roles.size()) + " sublayers without it",
                "build(scope, dims, roles) with the roles of the layer the block runs");
  return static_cast<std::size_t>(it - roles.begin());
}

const NormLayer& SublayerNorms::operator[](SublayerRole role) const {
  return norms_[sublayer_index(roles_, role, block_, "norm")];
}

Var EncodingPositions::queries(Graph& g, const Var& q) const {
  return plugin_call(encoding_, "rotate_queries", [&] { return encoding_.rotate_queries(g, q, queries_); });
}

Var EncodingPositions::keys(Graph& g, const Var& k) const {
  return plugin_call(encoding_, "rotate_keys", [&] { return encoding_.rotate_keys(g, k, keys_); });
}

Tensor EncodingPositions::range(Backend& backend, std::int64_t first, std::int64_t n) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int32_t>(first + static_cast<std::int64_t>(i));
  Tensor t = backend.empty({n}, DType::I32);
  backend.copy_from_host(t, p.data());
  return t;
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
