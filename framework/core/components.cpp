// ParamScope (ablate/components.hpp): the dotted name prefix under which a component adds its
// parameters to the model's ParameterStore. Out of line so plugins share one definition.
#include "ablate/components.hpp"

#include "ablate/error.hpp"

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

}  // namespace ablate
