// Plugin optimizer/sgd: stochastic gradient descent with heavy-ball or Nesterov momentum, as
// torch.optim.SGD (dampening 0): g' = g + wd w (L2), m = mu m + g', w -= lr (g' + mu m) with
// Nesterov, lr m without, lr g' with no momentum (and then no state).
#include <map>
#include <string>

#include "ablate/optimizer.hpp"

namespace optimizer_sgd {

class Sgd final : public ablate::Optimizer {
 public:
  explicit Sgd(const ablate::Options& o)
      : momentum_(static_cast<float>(o.get_float("momentum"))), nesterov_(o.get_bool("nesterov")) {
    if (!(momentum_ >= 0.0f && momentum_ < 1.0f))
      throw ablate::UsageError("optimizer/sgd: momentum must be in [0, 1)", "0 for plain SGD, 0.9 is usual");
    if (nesterov_ && momentum_ == 0.0f)
      throw ablate::UsageError("optimizer/sgd: nesterov needs momentum > 0", "set momentum (e.g. 0.9), or nesterov: false");
  }
  ablate::OptimizerState state(ablate::ParameterRole, const ablate::Shape&) const override {
    return momentum_ > 0.0f ? ablate::OptimizerState::m : ablate::OptimizerState::none;
  }
  void prepare(ablate::Backend& backend, const std::vector<ablate::OptimizerGroup>& groups) override {
    step_.clear();
    for (const ablate::OptimizerGroup& g : groups) step_[g.name] = backend.empty(g.packed.value.shape(), ablate::DType::F32);
  }
  // w, m, grad and the scratch d: [Ng] (the group's packed views)
  void update(ablate::Backend& be, const ablate::OptimizerStep& step, ablate::OptimizerGroup& group) override {
    ablate::PackedSpan& t = group.packed;
    ablate::Tensor& d = step_.at(group.name);
    be.add_forward(d, t.grad, t.value, step.grad_scale, static_cast<float>(group.weight_decay));  // g' = g + wd w
    if (momentum_ > 0.0f) {
      be.add_forward(t.m, t.m, d, momentum_, 1.0f);               // m = mu m + g'
      if (nesterov_) be.add_forward(d, d, t.m, 1.0f, momentum_);  // d = g' + mu m
    }
    be.axpy(t.value, momentum_ > 0.0f && !nesterov_ ? t.m : d, -static_cast<float>(step.lr * group.lr_scale));
    if (t.compute.raw() != t.value.raw()) be.cast(t.compute, t.value);
  }

 private:
  float momentum_;
  bool nesterov_;
  std::map<std::string, ablate::Tensor> step_;  // per group: the step direction [Ng]
};

constexpr ablate::OptionInfo kOptions[] = {
    {"momentum", ablate::OptionType::Float, "0", nullptr, "momentum factor mu in [0, 1); 0: plain SGD, no state"},
    {"nesterov", ablate::OptionType::Bool, "false", nullptr, "Nesterov momentum (Sutskever et al. 2013), needs momentum > 0"},
};

ablate::Component* create(const ablate::Options& o) { return new Sgd(o); }

ABLATE_PLUGIN("optimizer", "sgd", "1.0.0", "SGD with optional heavy-ball or Nesterov momentum (torch.optim.SGD)",
              ablate::options_of(kOptions), create)

}  // namespace optimizer_sgd
