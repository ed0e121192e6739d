// The optimizer driver (framework/include/ablate/optimizer.hpp): parameter roles, the groups of
// train.optimizer.groups packed side by side, one host synchronisation for the global grad norm,
// then one Optimizer::update per group over its packed views.
#include "ablate/optimizer.hpp"

#include <cmath>
#include <sstream>

#include "ablate/error.hpp"

namespace ablate {

namespace {

std::vector<std::string> parts_of(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

bool has_part(const std::vector<std::string>& parts, const std::string& part) {
  for (const std::string& p : parts)
    if (p == part) return true;
  return false;
}

}  // namespace

void Optimizer::prepare(Backend&, const std::vector<OptimizerGroup>&) {}

const char* parameter_role_name(ParameterRole role) {
  switch (role) {
    case ParameterRole::matrix: return "matrix";
    case ParameterRole::vector: return "vector";
    case ParameterRole::embedding: return "embedding";
    case ParameterRole::norm: return "norm";
    case ParameterRole::output: return "output";
  }
  return "?";
}

ParameterRole parameter_role(const std::string& name, const Shape& shape) {
  const std::vector<std::string> parts = parts_of(name);
  for (const std::string& p : parts)
    if (p.find("norm") != std::string::npos) return ParameterRole::norm;  // norm0, final_norm, q_norm, ...
  const bool sublayer = has_part(parts, "self_attn") || has_part(parts, "cross_attn") || has_part(parts, "ffn");
  if (has_part(parts, "layers") && !sublayer) return ParameterRole::norm;  // a block's own gates (rezero's alpha)
  if (has_part(parts, "embedding") || has_part(parts, "positions"))
    return shape.rank() >= 2 ? ParameterRole::embedding : ParameterRole::vector;
  if (shape.rank() < 2) return ParameterRole::vector;
  if (has_part(parts, "output") || has_part(parts, "classifier")) return ParameterRole::output;
  return ParameterRole::matrix;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  std::size_t p = 0, t = 0, star = std::string::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

OptimizerDriver::OptimizerDriver(Backend& backend, std::shared_ptr<Optimizer> rule, double weight_decay,
                                 std::vector<OptimizerGroupRule> groups)
    : backend_(backend), rule_(std::move(rule)), weight_decay_(weight_decay), rules_(std::move(groups)) {
  if (!rule_) throw Error("OptimizerDriver: no optimizer");
  for (const OptimizerGroupRule& r : rules_)
    if (r.name.empty() || r.name == "default")
      throw Error("OptimizerDriver: a group rule needs a name other than 'default' (the group of the others)");
}

void OptimizerDriver::form_groups(ParameterStore& store) {
  groups_.clear();
  unmatched_.clear();
  std::vector<OptimizerGroup> by_rule(rules_.size() + 1);  // the rules' groups, then "default"
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    by_rule[i].name = rules_[i].name;
    by_rule[i].lr_scale = rules_[i].lr_scale.value_or(1.0);
    by_rule[i].weight_decay = rules_[i].weight_decay.value_or(weight_decay_);
  }
  by_rule.back().name = "default";
  by_rule.back().weight_decay = weight_decay_;
  for (Parameter* p : store.all()) {
    const ParameterRole role = parameter_role(p->name, p->value.shape());
    std::size_t g = 0;
    for (; g < rules_.size(); ++g) {
      const OptimizerGroupRule& r = rules_[g];
      bool role_ok = r.roles.empty();
      for (ParameterRole want : r.roles) role_ok = role_ok || want == role;
      if (role_ok && (r.match.empty() || glob_match(r.match, p->name))) break;
    }
    p->state = rule_->state(role, p->value.shape());
    by_rule[g].parameters.push_back(p);
    by_rule[g].roles.push_back(role);
  }
  std::vector<Parameter*> order;
  for (std::size_t g = 0; g < by_rule.size(); ++g) {
    if (by_rule[g].parameters.empty()) {
      if (g < rules_.size()) unmatched_.push_back(rules_[g].name);
      continue;
    }
    order.insert(order.end(), by_rule[g].parameters.begin(), by_rule[g].parameters.end());
    groups_.push_back(std::move(by_rule[g]));
  }
  if (groups_.size() > 1) store.set_packing_order(order);  // one group: creation order, as without groups
  const PackedParameters& all = store.packed(/*with_moments=*/true);
  for (OptimizerGroup& g : groups_) g.packed = store.packed_span(g.parameters);
  packed_at_ = all.value.raw();
  rule_->prepare(backend_, groups_);
}

double OptimizerDriver::step(ParameterStore& store, double lr, double clip_norm) {
  const double norm = store.grad_norm();
  if (!std::isfinite(norm)) return norm;  // NaN/Inf gradients: leave every weight as it was (the caller stops)
  // A checkpoint loaded since replaced some tensors: packing again adopts them; a store packed
  // anew (a parameter added) needs the groups formed again.
  if (groups_.empty() || store.packed(/*with_moments=*/true).value.raw() != packed_at_) form_groups(store);
  OptimizerStep s;
  s.lr = lr;
  s.step = ++steps_;
  s.grad_scale = (clip_norm > 0.0 && norm > clip_norm) ? static_cast<float>(clip_norm / (norm + 1e-6)) : 1.0f;
  for (OptimizerGroup& g : groups_) rule_->update(backend_, s, g);
  return norm;
}

}  // namespace ablate
