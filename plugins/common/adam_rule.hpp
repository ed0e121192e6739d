// Adam's update rule (Kingma & Ba 2015) shared by the plugins optimizer/adam (weight decay as an
// L2 term added to the gradient) and optimizer/adamw (decoupled, Loshchilov & Hutter 2019): one
// fused backend adam_update per group over its packed views, the fast path every backend has.
#pragma once

#include "ablate/optimizer.hpp"

namespace ablate_plugins {

class AdamRule final : public ablate::Optimizer {
 public:
  AdamRule(const ablate::Options& o, bool decoupled, const char* who)
      : beta1_(static_cast<float>(o.get_float("beta1"))),
        beta2_(static_cast<float>(o.get_float("beta2"))),
        eps_(static_cast<float>(o.get_float("eps"))),
        decoupled_(decoupled) {
    if (!(beta1_ >= 0.0f && beta1_ < 1.0f) || !(beta2_ >= 0.0f && beta2_ < 1.0f))
      throw ablate::UsageError(std::string(who) + ": beta1 and beta2 must be in [0, 1)",
                               "Adam's usual values: beta1 0.9, beta2 0.98 to 0.999");
    if (!(eps_ > 0.0f)) throw ablate::UsageError(std::string(who) + ": eps must be > 0", "e.g. 1e-8 or 1e-9");
  }
  ablate::OptimizerState state(ablate::ParameterRole, const ablate::Shape&) const override {
    return ablate::OptimizerState::m_and_v;
  }
  void update(ablate::Backend& backend, const ablate::OptimizerStep& step, ablate::OptimizerGroup& group) override {
    ablate::AdamParams p;
    p.lr = static_cast<float>(step.lr * group.lr_scale);
    p.beta1 = beta1_;
    p.beta2 = beta2_;
    p.eps = eps_;
    p.weight_decay = static_cast<float>(group.weight_decay);
    p.decoupled = decoupled_;
    p.step = step.step;
    p.grad_scale = step.grad_scale;
    ablate::PackedSpan& t = group.packed;
    const bool low = t.compute.raw() != t.value.raw();  // a bf16 compute copy to refresh
    backend.adam_update(t.value, t.m, t.v, low ? &t.compute : nullptr, t.grad, p);
  }

 private:
  float beta1_, beta2_, eps_;
  bool decoupled_;
};

// The options of both (their defaults are AdamParams' and the original paper's Transformer's).
constexpr ablate::OptionInfo kAdamOptions[] = {
    {"beta1", ablate::OptionType::Float, "0.9", nullptr, "decay rate of the first moment, in [0, 1)"},
    {"beta2", ablate::OptionType::Float, "0.98", nullptr, "decay rate of the second moment, in [0, 1)"},
    {"eps", ablate::OptionType::Float, "1e-9", nullptr, "added to the denominator sqrt(v) (> 0)"},
};

}  // namespace ablate_plugins
