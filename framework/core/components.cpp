// ParamScope, NormLayer, FeedForwardLayers and SublayerNorms (ablate/components.hpp): the building blocks component
// plugins share, out of line so every plugin uses one definition.
#include "ablate/components.hpp"

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

void SublayerNorms::build(const ParamScope& scope, const ModelDims& dims, int sublayers, NormKind kind,
                          const std::string& block) {
  block_ = block;
  if (dims.d_model <= 0 || sublayers <= 0)
    throw Error(block + " in '" + scope.prefix() + "': needs d_model > 0 and sublayers > 0, got d_model " +
                std::to_string(dims.d_model) + ", sublayers " + std::to_string(sublayers));
  norms_.clear();
  for (int i = 0; i < sublayers; ++i)
    norms_.emplace_back(scope.child("norm" + std::to_string(i)), kind, dims.d_model, dims.norm_eps);
}

const NormLayer& SublayerNorms::operator[](int sublayer) const {
  if (sublayer < 0 || static_cast<std::size_t>(sublayer) >= norms_.size())
    throw Error(block_ + ": sublayer " + std::to_string(sublayer) + " out of range: built with " +
                    std::to_string(norms_.size()) + " sublayers",
                "build(scope, dims, sublayers) with the number of sublayers the layer applies");
  return norms_[static_cast<std::size_t>(sublayer)];
}

}  // namespace ablate
