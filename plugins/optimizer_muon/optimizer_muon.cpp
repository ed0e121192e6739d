// Plugin optimizer/muon: Muon (Jordan et al. 2024, modded-nanogpt) for the matrices: Nesterov
// momentum orthogonalised by 5 Newton-Schulz iterations of the quintic (3.4445, -4.7750, 2.0315),
// f32 here; AdamW for every other parameter (embeddings, output head, norms, biases), as
// modded-nanogpt does. The update is scaled to AdamW's RMS (Liu et al. 2025, "Muon is Scalable":
// 0.2 sqrt(max(rows, cols))) so one learning rate and decay serve both parts, or by Jordan's
// sqrt(max(1, rows / cols)) (`scale: jordan`, with its own, larger, learning rate).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "../common/matrix_rule.hpp"
#include "ablate/optimizer.hpp"

namespace optimizer_muon {

constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;  // the quintic's coefficients (modded-nanogpt)

class Muon final : public ablate::Optimizer {
 public:
  explicit Muon(const ablate::Options& o)
      : momentum_(static_cast<float>(o.get_float("momentum"))),
        nesterov_(o.get_bool("nesterov")),
        steps_(o.get_int("ns_steps")),
        jordan_(o.get_string("scale") == "jordan") {
    adam_.beta1 = static_cast<float>(o.get_float("beta1"));
    adam_.beta2 = static_cast<float>(o.get_float("beta2"));
    adam_.eps = static_cast<float>(o.get_float("eps"));
    adam_.decoupled = true;
    if (!(momentum_ >= 0.0f && momentum_ < 1.0f) || !(adam_.beta1 >= 0.0f && adam_.beta1 < 1.0f) ||
        !(adam_.beta2 >= 0.0f && adam_.beta2 < 1.0f))
      throw ablate::UsageError("optimizer/muon: momentum, beta1 and beta2 must be in [0, 1)", "Muon's momentum is 0.95");
    if (steps_ < 1 || steps_ > 20)
      throw ablate::UsageError("optimizer/muon: ns_steps must be in 1 .. 20", "modded-nanogpt uses 5");
    if (!(adam_.eps > 0.0f)) throw ablate::UsageError("optimizer/muon: eps must be > 0");
  }

  ablate::OptimizerState state(ablate::ParameterRole role, const ablate::Shape&) const override {
    return role == ablate::ParameterRole::matrix ? ablate::OptimizerState::m : ablate::OptimizerState::m_and_v;
  }

  void prepare(ablate::Backend& be, const std::vector<ablate::OptimizerGroup>& groups) override {
    scratch_.clear();
    bool any = false;
    for (const ablate::OptimizerGroup& g : groups)
      for (std::size_t i = 0; i < g.parameters.size(); ++i) {
        if (g.roles[i] != ablate::ParameterRole::matrix) continue;
        any = true;
        const auto [r, c] = ablate_plugins::rows_cols(g.parameters[i]->value.shape());
        const std::int64_t k = std::min(r, c);
        auto& s = scratch_[{r, c}];
        if (s[0].defined()) continue;
        s = {be.empty({r, c}, ablate::DType::F32), be.empty({r, c}, ablate::DType::F32), be.empty({k, k}, ablate::DType::F32),
             be.empty({k, k}, ablate::DType::F32), be.empty({1}, ablate::DType::F32)};
      }
    if (!any)
      throw ablate::UsageError("optimizer/muon: the model has no matrix parameter (role `matrix`) to orthogonalise",
                               "Muon is for the hidden layers' weights; train this model with adamw");
  }

  void update(ablate::Backend& be, const ablate::OptimizerStep& step, ablate::OptimizerGroup& group) override {
    const float lr = static_cast<float>(step.lr * group.lr_scale), wd = static_cast<float>(group.weight_decay);
    ablate::AdamParams adam = adam_;
    adam.lr = lr;
    adam.weight_decay = wd;
    adam.step = step.step;
    adam.grad_scale = step.grad_scale;
    for (std::size_t i = 0; i < group.parameters.size(); ++i) {
      ablate::Parameter& p = *group.parameters[i];
      const bool low = p.compute.raw() != p.value.raw();
      if (group.roles[i] != ablate::ParameterRole::matrix) {
        be.adam_update(p.value, p.m, p.v, low ? &p.compute : nullptr, p.grad, adam);
        continue;
      }
      const auto [r, c] = ablate_plugins::rows_cols(p.value.shape());
      auto& [x, bx, a, aa, total] = scratch_.at({r, c});
      ablate::Tensor w = p.value.reshaped({r, c}), m = p.m.reshaped({r, c}), g = p.grad.reshaped({r, c});  // [r, c]
      const float s = step.grad_scale;
      be.add_forward(m, m, g, momentum_, (1.0f - momentum_) * s);  // m = mu m + (1 - mu) g
      if (nesterov_)
        be.add_forward(x, g, m, (1.0f - momentum_) * s, momentum_);  // x = (1 - mu) g + mu m
      else
        be.copy(x, m);
      orthogonalise(be, x, bx, a, aa, total, r, c);
      const float scale = jordan_ ? std::sqrt(std::max(1.0f, static_cast<float>(r) / static_cast<float>(c)))
                                  : 0.2f * std::sqrt(static_cast<float>(std::max(r, c)));
      be.add_forward(w, w, x, 1.0f - lr * wd, -lr * scale);  // w = (1 - lr wd) w - lr scale NS(x)
      if (low) be.cast(p.compute, p.value);
    }
  }

 private:
  // x [r, c] <- NS^k(x / |x|_F): with r <= c, A = x x^T [r, r], B = b A + c A A, x = a x + B x;
  // with r > c the same on x^T, written as A = x^T x [c, c], x = a x + x B (B is symmetric).
  void orthogonalise(ablate::Backend& be, ablate::Tensor& x, ablate::Tensor& bx, ablate::Tensor& a, ablate::Tensor& aa,
                     ablate::Tensor& total, std::int64_t r, std::int64_t c) const {
    const double sum = ablate_plugins::host_sum_squares(be, x, total);
    be.add_forward(x, x, x, 1.0f / (std::sqrt(static_cast<float>(sum)) + 1e-7f), 0.0f);  // the float sum, as read
    const bool wide = r <= c;
    for (std::int64_t k = 0; k < steps_; ++k) {
      be.matmul_forward(a, x, x, /*trans_a=*/!wide, /*trans_b=*/wide, 1.0f);  // A = x x^T, or x^T x
      be.matmul_forward(aa, a, a, false, false, 1.0f);
      be.add_forward(a, a, aa, kB, kC);  // B = b A + c A A (in a)
      if (wide)
        be.matmul_forward(bx, a, x, false, false, 1.0f);  // B x
      else
        be.matmul_forward(bx, x, a, false, false, 1.0f);  // x B
      be.add_forward(x, x, bx, kA, 1.0f);
    }
  }

  float momentum_;
  bool nesterov_;
  std::int64_t steps_;
  bool jordan_;
  ablate::AdamParams adam_;
  // per matrix shape [r, c]: x and B x [r, c], A and A A [k, k] (k = min(r, c)), a [1] sum
  std::map<std::pair<std::int64_t, std::int64_t>, std::array<ablate::Tensor, 5>> scratch_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"momentum", ablate::OptionType::Float, "0.95", nullptr, "momentum of the matrices' update, in [0, 1)"},
    {"nesterov", ablate::OptionType::Bool, "true", nullptr, "Nesterov momentum (modded-nanogpt's)"},
    {"ns_steps", ablate::OptionType::Int, "5", nullptr, "Newton-Schulz iterations (1 .. 20)"},
    {"scale", ablate::OptionType::String, "rms", "rms|jordan",
     "rms: 0.2 sqrt(max(rows, cols)), AdamW's update size (Liu et al. 2025); jordan: sqrt(max(1, rows / cols))"},
    {"beta1", ablate::OptionType::Float, "0.9", nullptr, "AdamW's for the other parameters, in [0, 1)"},
    {"beta2", ablate::OptionType::Float, "0.95", nullptr, "AdamW's for the other parameters, in [0, 1)"},
    {"eps", ablate::OptionType::Float, "1e-8", nullptr, "AdamW's for the other parameters (> 0)"},
};

ablate::Component* create(const ablate::Options& o) { return new Muon(o); }

ABLATE_PLUGIN("optimizer", "muon", "1.0.0", "Muon: orthogonalised momentum for matrices, AdamW for the rest",
              ablate::options_of(kOptions), create)

}  // namespace optimizer_muon
