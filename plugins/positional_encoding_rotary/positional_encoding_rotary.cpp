// Plugin positional_encoding/rotary: rotary position embeddings (Su et al. 2021,
// RoFormer), the first `fraction` of each head's dims of q and k turned pair by pair by angles
// position * base^(-2i/R) inside self-attention, so q·k depends on the distance between positions.
// Nothing is added to the embeddings. Written against the public headers only.
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace positional_encoding_rotary {

class Rotary final : public ablate::PositionalEncoding {
 public:
  explicit Rotary(const ablate::Options& o) : base_(static_cast<float>(o.get_float("base"))), fraction_(o.get_float("fraction")) {
    if (!(base_ > 1.0f)) throw ablate::Error("rotary: base must be > 1, got " + std::to_string(base_));
    if (!(fraction_ > 0.0 && fraction_ <= 1.0))
      throw ablate::Error("rotary: fraction must be in (0, 1], got " + std::to_string(fraction_));
  }

  // R = the largest even number <= fraction * Dh (at least 2): the rotated dims of each head.
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    const std::int64_t dh = dims.heads > 0 ? dims.d_model / dims.heads : 0;
    rotary_ = static_cast<int>(static_cast<double>(dh) * fraction_) / 2 * 2;
    if (dh < 2 || rotary_ < 2)
      throw ablate::Error("rotary in '" + scope.prefix() + "': head width " + std::to_string(dh) + " x fraction " +
                              std::to_string(fraction_) + " leaves no pair of dims to rotate",
                          "raise model.d_model / model.heads or the plugin's fraction");
  }

  // x: [B, T, D] -> x: positions act inside attention, not on the embeddings.
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }

  void capabilities(ablate::PositionCapabilities& caps) const override { caps.rotates = true; }

  // x: [B, H, T, Dh] (q or k) at positions I32 [T] -> rotated [B, H, T, Dh].
  ablate::Var rotate(ablate::Graph& g, const ablate::Var& x, const ablate::Tensor& positions) const override {
    return ablate::ops::rope(g, x, positions, rotary_, base_);
  }

 private:
  float base_;
  double fraction_;
  int rotary_ = 0;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"base", ablate::OptionType::Float, "10000", nullptr, "wavelength base: pair i turns by position * base^(-2i/R)"},
    {"fraction", ablate::OptionType::Float, "1.0", nullptr, "share of each head's dims that rotate (GPT-NeoX: 0.25)"},
};

ablate::Component* create(const ablate::Options& o) { return new Rotary(o); }

ABLATE_PLUGIN("positional_encoding", "rotary", "1.0.0", "rotary position embeddings on q and k (Su et al. 2021)",
              ablate::options_of(kOptions), create)

}  // namespace positional_encoding_rotary
