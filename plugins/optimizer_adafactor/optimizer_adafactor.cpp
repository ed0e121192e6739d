// Plugin optimizer/adafactor: Adafactor (Shazeer & Stern 2018, Algorithm 4; the form of T5 and of
// Hugging Face's implementation): a second moment factored into row and column means for every
// matrix (r + c numbers instead of r c), full for vectors; the update clipped to RMS <= d; step
// sizes relative to the parameter's RMS (scale_parameter); beta2 rising as 1 - t^decay_rate; an
// optional first moment (beta1 > 0). The schedule's lr is the step size (relative_step is the
// schedule's job here). Hugging Face's order of operations (transformers' Adafactor), eps1 added
// where the factors are read. State: the second moment in Parameter::m (in v with a first moment,
// which then takes m), a matrix's factors as row means then column means in its first r + c
// elements, so the memory is not saved yet; the arithmetic is Adafactor's.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "../common/matrix_rule.hpp"
#include "ablate/optimizer.hpp"

namespace optimizer_adafactor {

class Adafactor final : public ablate::Optimizer {
 public:
  explicit Adafactor(const ablate::Options& o)
      : beta1_(static_cast<float>(o.get_float("beta1"))),
        decay_(o.get_float("decay_rate")),
        clip_(o.get_float("clip_threshold")),
        eps1_(static_cast<float>(o.get_float("eps1"))),
        eps2_(o.get_float("eps2")),
        scale_parameter_(o.get_bool("scale_parameter")) {
    if (!(beta1_ >= 0.0f && beta1_ < 1.0f))
      throw ablate::UsageError("optimizer/adafactor: beta1 must be in [0, 1)", "0: no first moment");
    if (!(decay_ < 0.0 && decay_ >= -1.0))
      throw ablate::UsageError("optimizer/adafactor: decay_rate must be in [-1, 0)", "the paper's -0.8: beta2 = 1 - t^-0.8");
    if (!(clip_ > 0.0) || !(eps1_ > 0.0f) || !(eps2_ >= 0.0))
      throw ablate::UsageError("optimizer/adafactor: clip_threshold and eps1 must be > 0, eps2 >= 0", "1.0, 1e-30, 1e-3");
  }

  ablate::OptimizerState state(ablate::ParameterRole, const ablate::Shape&) const override {
    return beta1_ > 0.0f ? ablate::OptimizerState::m_and_v : ablate::OptimizerState::m;
  }

  void prepare(ablate::Backend& be, const std::vector<ablate::OptimizerGroup>& groups) override {
    scratch_.clear();
    for (const ablate::OptimizerGroup& g : groups)
      for (const ablate::Parameter* p : g.parameters) {
        const auto [r, c] = ablate_plugins::rows_cols(p->value.shape());
        auto& s = scratch_[{r, c}];
        if (s[0].defined()) continue;
        auto t = [&](const ablate::Shape& shape) { return be.empty(shape, ablate::DType::F32); };
        s = {t({r, c}), t({r, c}), t({r, 1}), t({1, c}), t({c, 1}), t({1, r}), t({1})};
        be.fill(s[4], 1.0f);
        be.fill(s[5], 1.0f);
      }
  }

  void update(ablate::Backend& be, const ablate::OptimizerStep& step, ablate::OptimizerGroup& group) override {
    const double t = static_cast<double>(step.step);
    const float beta2 = static_cast<float>(1.0 - std::pow(t, decay_));
    for (ablate::Parameter* p : group.parameters) {
      const auto [r, c] = ablate_plugins::rows_cols(p->value.shape());
      const bool factored = r > 1 && c > 1;
      auto& [u, g2, rows, cols, ones_c, ones_r, total] = scratch_.at({r, c});
      ablate::Tensor w = p->value.reshaped({r, c}), g = p->grad.reshaped({r, c});  // [r, c]
      const ablate::Tensor& second = beta1_ > 0.0f ? p->v : p->m;                  // the second moment's tensor
      be.mul_forward(g2, g, g);                                                    // g^2 (unscaled)
      const float s2 = step.grad_scale * step.grad_scale;
      std::vector<float> inv_sqrt_v;  // factored: 1/sqrt(row) [r] then 1/sqrt(col) [c]; else [c]
      if (factored) {
        // The factors sit in v: row means [r] in its first r elements, column means [c] after them.
        ablate::Tensor v_rows = view(second, 0, {r, 1}), v_cols = view(second, r, {1, c});
        be.matmul_forward(rows, g2, ones_c, false, false, s2 / static_cast<float>(c));  // mean over columns
        be.matmul_forward(cols, ones_r, g2, false, false, s2 / static_cast<float>(r));  // mean over rows
        be.add_forward(v_rows, v_rows, rows, beta2, 1.0f - beta2);  // (+ eps1 below, on the host, as one term)
        be.add_forward(v_cols, v_cols, cols, beta2, 1.0f - beta2);
        std::vector<float> host(static_cast<std::size_t>(r + c));
        be.copy_to_host(host.data(), view(second, 0, {r + c}));
        double mean_rows = 0.0;
        for (std::int64_t i = 0; i < r; ++i) mean_rows += host[static_cast<std::size_t>(i)] + eps1_;
        mean_rows /= static_cast<double>(r);
        for (std::int64_t i = 0; i < r; ++i)  // 1/sqrt(row_i / mean(row))
          host[static_cast<std::size_t>(i)] =
              static_cast<float>(std::sqrt(mean_rows / (host[static_cast<std::size_t>(i)] + eps1_)));
        for (std::int64_t j = r; j < r + c; ++j)
          host[static_cast<std::size_t>(j)] = static_cast<float>(1.0 / std::sqrt(host[static_cast<std::size_t>(j)] + eps1_));
        be.copy_from_host(rows, host.data());
        be.copy_from_host(cols, host.data() + r);
        be.matmul_forward(u, rows, cols, false, false, 1.0f);  // 1/sqrt(V) = a b^T [r, c]
        be.mul_forward(u, u, g);
        be.add_forward(u, u, u, step.grad_scale, 0.0f);  // U = g / sqrt(V)
      } else {
        ablate::Tensor v = second.reshaped({1, c});
        be.add_forward(v, v, g2, beta2, (1.0f - beta2) * s2);
        std::vector<float> host(static_cast<std::size_t>(c));
        be.copy_to_host(host.data(), v);
        for (float& x : host) x = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x) + eps1_));
        be.copy_from_host(cols, host.data());
        be.mul_forward(u, g, cols);
        be.add_forward(u, u, u, step.grad_scale, 0.0f);
      }
      // Clip the update to RMS <= clip_threshold; step size relative to the parameter's RMS.
      const double rms_u = std::sqrt(ablate_plugins::host_sum_squares(be, u, total) / static_cast<double>(r * c));
      double alpha = step.lr * group.lr_scale;
      if (scale_parameter_)
        alpha *= std::max(eps2_, std::sqrt(ablate_plugins::host_sum_squares(be, w, total) / static_cast<double>(r * c)));
      const float a = static_cast<float>(alpha / std::max(1.0, rms_u / clip_));  // the clipped update's step
      const float keep = static_cast<float>(1.0 - alpha * group.weight_decay);   // decay at the relative step
      if (beta1_ > 0.0f) {
        ablate::Tensor m = p->m.reshaped({r, c});
        be.add_forward(m, m, u, beta1_, (1.0f - beta1_) * a);  // m = b1 m + (1 - b1) a U
        be.add_forward(w, w, m, keep, -1.0f);
      } else {
        be.add_forward(w, w, u, keep, -a);
      }
      if (p->compute.raw() != p->value.raw()) be.cast(p->compute, p->value);
    }
  }

 private:
  // `shape`'s elements of `t` from element `first` (a view: same storage).
  static ablate::Tensor view(const ablate::Tensor& t, std::int64_t first, const ablate::Shape& shape) {
    auto* at = static_cast<float*>(t.raw()) + first;
    return ablate::Tensor(std::shared_ptr<ablate::Storage>(new ablate::Storage{at, static_cast<std::size_t>(shape.numel()) * 4},
                                                           [keep = t](ablate::Storage* s) { delete s; }),
                          shape, ablate::DType::F32);
  }

  float beta1_;
  double decay_, clip_;
  float eps1_;
  double eps2_;
  bool scale_parameter_;
  // per [r, c]: u and g^2 [r, c], rows [r, 1], cols [1, c], ones [c, 1] and [1, r], a [1] sum
  std::map<std::pair<std::int64_t, std::int64_t>, std::array<ablate::Tensor, 7>> scratch_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"beta1", ablate::OptionType::Float, "0", nullptr, "first-moment decay in [0, 1); 0: none (T5's)"},
    {"decay_rate", ablate::OptionType::Float, "-0.8", nullptr, "beta2 at step t is 1 - t^decay_rate, in [-1, 0)"},
    {"clip_threshold", ablate::OptionType::Float, "1.0", nullptr, "d: the update's RMS is clipped to at most d"},
    {"eps1", ablate::OptionType::Float, "1e-30", nullptr, "added to the squared gradient's moments"},
    {"eps2", ablate::OptionType::Float, "1e-3", nullptr, "the smallest parameter RMS a relative step uses"},
    {"scale_parameter", ablate::OptionType::Bool, "true", nullptr, "step size lr x max(eps2, RMS(w)) (relative to the weights)"},
};

ablate::Component* create(const ablate::Options& o) { return new Adafactor(o); }

ABLATE_PLUGIN("optimizer", "adafactor", "1.0.0", "Adafactor: factored second moments, clipped relative updates",
              ablate::options_of(kOptions), create)

}  // namespace optimizer_adafactor
