// Plugin optimizer/lion: Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
// Algorithm 2): the update is the sign of an interpolation of momentum and gradient, with
// decoupled weight decay; one state (m), so half of Adam's. Composed from backend ops over each
// group's packed views; the sign is (c > 0) - (c < 0) with the compare op.
#include <array>
#include <map>
#include <string>

#include "ablate/optimizer.hpp"

namespace optimizer_lion {

class Lion final : public ablate::Optimizer {
 public:
  explicit Lion(const ablate::Options& o)
      : beta1_(static_cast<float>(o.get_float("beta1"))), beta2_(static_cast<float>(o.get_float("beta2"))) {
    if (!(beta1_ >= 0.0f && beta1_ < 1.0f) || !(beta2_ >= 0.0f && beta2_ < 1.0f))
      throw ablate::UsageError("optimizer/lion: beta1 and beta2 must be in [0, 1)", "the paper's values: 0.9 and 0.99");
  }
  ablate::OptimizerState state(ablate::ParameterRole, const ablate::Shape&) const override { return ablate::OptimizerState::m; }
  void prepare(ablate::Backend& backend, const std::vector<ablate::OptimizerGroup>& groups) override {
    if (!backend.supports(ablate::OptionalOp::compare))
      throw ablate::UsageError("optimizer/lion needs the backend op compare (for the sign), which this backend lacks",
                               "train with another backend (reference, onednn) or another optimizer");
    scratch_.clear();
    for (const ablate::OptimizerGroup& g : groups) {
      const ablate::Shape shape = g.packed.value.shape();
      scratch_[g.name] = {backend.empty(shape, ablate::DType::F32), backend.empty(shape, ablate::DType::F32),
                          backend.empty(shape, ablate::DType::F32)};
    }
    zero_ = backend.empty({1}, ablate::DType::F32);
    backend.fill(zero_, 0.0f);
  }
  // w, m, grad and the scratch c, pos, neg: [Ng] (the group's packed views)
  void update(ablate::Backend& be, const ablate::OptimizerStep& step, ablate::OptimizerGroup& group) override {
    ablate::PackedSpan& t = group.packed;
    auto& [c, pos, neg] = scratch_.at(group.name);
    const float lr = static_cast<float>(step.lr * group.lr_scale), s = step.grad_scale;
    be.add_forward(c, t.m, t.grad, beta1_, (1.0f - beta1_) * s);  // c = b1 m + (1 - b1) g
    be.compare_forward(pos, c, zero_, ablate::Compare::gt);
    be.compare_forward(neg, c, zero_, ablate::Compare::lt);
    be.add_forward(c, pos, neg, 1.0f, -1.0f);                                                      // c = sign(c)
    be.add_forward(t.value, t.value, c, 1.0f - lr * static_cast<float>(group.weight_decay), -lr);  // w -= lr (sign + wd w)
    be.add_forward(t.m, t.m, t.grad, beta2_, (1.0f - beta2_) * s);                                 // m = b2 m + (1 - b2) g
    if (t.compute.raw() != t.value.raw()) be.cast(t.compute, t.value);
  }

 private:
  float beta1_, beta2_;
  std::map<std::string, std::array<ablate::Tensor, 3>> scratch_;  // per group: c, pos, neg [Ng]
  ablate::Tensor zero_;                                           // [1]
};

constexpr ablate::OptionInfo kOptions[] = {
    {"beta1", ablate::OptionType::Float, "0.9", nullptr, "weight of the momentum in the update's sign, in [0, 1)"},
    {"beta2", ablate::OptionType::Float, "0.99", nullptr, "decay rate of the momentum, in [0, 1)"},
};

ablate::Component* create(const ablate::Options& o) { return new Lion(o); }

ABLATE_PLUGIN("optimizer", "lion", "1.0.0", "Lion: the sign of interpolated momentum, decoupled weight decay",
              ablate::options_of(kOptions), create)

}  // namespace optimizer_lion
