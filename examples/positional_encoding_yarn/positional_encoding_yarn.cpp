// Out-of-tree example: positional_encoding/yarn (Peng et al. 2023, "YaRN: Efficient Context Window
// Extension of Large Language Models"): rotary positions whose frequencies are interpolated by parts
// for a context `scale` times the trained one. A pair whose wavelength fits the trained context
// fewer than alpha times turns scale times slower, one that fits more than beta times keeps its
// frequency, those between blend linearly; q and k are each scaled by 0.1 ln(scale) + 1 (the
// attention temperature). The frequencies are a table handed to ops::rope (plugin API 19).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ablate/components.hpp>
#include <ablate/ops.hpp>

namespace positional_encoding_yarn {

class Yarn final : public ablate::PositionalEncoding {
 public:
  explicit Yarn(const ablate::Options& o)
      : base_(o.get_float("base")),
        scale_(o.get_float("scale")),
        alpha_(o.get_float("alpha")),
        beta_(o.get_float("beta")),
        context_(o.get_int("context")) {
    if (!(base_ > 1.0)) throw ablate::Error("yarn: base must be > 1, got " + std::to_string(base_));
    if (!(scale_ >= 1.0)) throw ablate::Error("yarn: scale must be >= 1 (1: rotary), got " + std::to_string(scale_));
    if (!(alpha_ > 0.0 && beta_ > alpha_)) throw ablate::Error("yarn: need 0 < alpha < beta");
    if (context_ < 0) throw ablate::Error("yarn: context must be >= 0 (0: the stack's trained length)");
  }

  // Pair i of Dh: theta_i = base^(-2i/Dh), r_i = L theta_i / (2 pi) (wavelengths in the trained
  // context L: the option, else ModelDims::context), g_i = clamp((r_i - alpha) / (beta - alpha), 0, 1),
  // frequency (1 - g_i) theta_i / scale + g_i theta_i.
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    const std::int64_t dh = dims.heads > 0 ? dims.d_model / dims.heads : 0;
    const double L = static_cast<double>(context_ > 0 ? context_ : dims.context);
    if (dh < 2 || dh % 2 != 0 || !(L > 0))
      throw ablate::Error("yarn in '" + scope.prefix() + "': needs an even head width and a trained context length",
                          "choose model.d_model / model.heads even, or set the plugin's context");
    freqs_.clear();
    for (std::int64_t i = 0; i < dh / 2; ++i) {
      const double theta = std::pow(base_, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
      const double g = std::clamp((L * theta / (2.0 * M_PI) - alpha_) / (beta_ - alpha_), 0.0, 1.0);
      freqs_.push_back(static_cast<float>((1.0 - g) * theta / scale_ + g * theta));
    }
    temperature_ = static_cast<float>(0.1 * std::log(scale_) + 1.0);
  }
  // x: [B, T, D] -> x: positions act inside attention only.
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }
  void capabilities(ablate::PositionCapabilities& caps) const override { caps.rotates = true; }

  // x: [B, H, T, Dh] (q or k) at positions I32 [T] -> rope with the table, times the temperature.
  ablate::Var rotate(ablate::Graph& g, const ablate::Var& x, const ablate::Tensor& positions) const override {
    ablate::Tensor freqs = g.backend().empty({static_cast<std::int64_t>(freqs_.size())}, ablate::DType::F32);
    g.backend().copy_from_host(freqs, freqs_.data());  // Dh/2 floats: no synchronisation
    const ablate::Var y = ablate::ops::rope(g, x, positions, freqs);
    return temperature_ == 1.0f ? y : ablate::ops::scale(g, y, temperature_);
  }

 private:
  double base_, scale_, alpha_, beta_;
  std::int64_t context_;
  std::vector<float> freqs_;
  float temperature_ = 1.0f;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"base", ablate::OptionType::Float, "10000", nullptr, "rotary's wavelength base"},
    {"scale", ablate::OptionType::Float, "1", nullptr, "context extension factor s (1: rotary)"},
    {"alpha", ablate::OptionType::Float, "1", nullptr, "below alpha wavelengths per context: interpolated by 1/s"},
    {"beta", ablate::OptionType::Float, "32", nullptr, "above beta wavelengths per context: kept"},
    {"context", ablate::OptionType::Int, "0", nullptr, "trained context length (0: the stack's, ModelDims::context)"},
};

ablate::Component* create(const ablate::Options& o) { return new Yarn(o); }

ABLATE_PLUGIN("positional_encoding", "yarn", "1.0.0", "YaRN: rotary frequencies interpolated by parts (Peng et al. 2023)",
              ablate::options_of(kOptions), create)

}  // namespace positional_encoding_yarn
