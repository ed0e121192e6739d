// Out-of-tree example: positional_encoding/xpos (Sun et al. 2022, "A Length-Extrapolatable
// Transformer"): rotary positions whose q.k also decays with distance. Each pair i of a head's dims
// (i and i + Dh/2, as ops::rope turns them) is rotated, then scaled by zeta_i^(n/s) on a query at
// position n and zeta_i^(-m/s) on a key at m, zeta_i = (2i/Dh + gamma) / (1 + gamma): q.k carries
// zeta_i^((n-m)/s). It treats q and k apart: PositionalEncoding::rotate_queries / rotate_keys.
#include <cmath>
#include <string>
#include <vector>

#include <ablate/components.hpp>
#include <ablate/ops.hpp>

namespace positional_encoding_xpos {

class XPos final : public ablate::PositionalEncoding {
 public:
  explicit XPos(const ablate::Options& o)
      : base_(static_cast<float>(o.get_float("base"))), gamma_(o.get_float("gamma")), scale_base_(o.get_float("scale_base")) {
    if (!(base_ > 1.0f)) throw ablate::Error("xpos: base must be > 1, got " + std::to_string(base_));
    if (!(gamma_ >= 0.0)) throw ablate::Error("xpos: gamma must be >= 0, got " + std::to_string(gamma_));
    if (!(scale_base_ > 0.0)) throw ablate::Error("xpos: scale_base must be > 0, got " + std::to_string(scale_base_));
  }

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    dh_ = dims.heads > 0 ? dims.d_model / dims.heads : 0;
    if (dh_ < 2 || dh_ % 2 != 0)
      throw ablate::Error("xpos in '" + scope.prefix() + "': head width " + std::to_string(dh_) + " is not an even number >= 2",
                          "choose model.d_model / model.heads even");
  }
  // x: [B, T, D] -> x: positions act inside attention only.
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }
  void capabilities(ablate::PositionCapabilities& caps) const override { caps.rotates = true; }

  // q: [B, H, T, Dh] at n -> rope(q) * zeta^(n/s); k: [B, Hkv, S', Dh] at m -> rope(k) * zeta^(-m/s).
  ablate::Var rotate_queries(ablate::Graph& g, const ablate::Var& q, const ablate::Tensor& positions) const override {
    return scaled(g, q, positions, 1.0);
  }
  ablate::Var rotate_keys(ablate::Graph& g, const ablate::Var& k, const ablate::Tensor& positions) const override {
    return scaled(g, k, positions, -1.0);
  }

 private:
  // x: [B, H, T, Dh] at positions (I32 [T]) -> rope(x) times the [T, Dh] table zeta_i^(sign * n / s).
  ablate::Var scaled(ablate::Graph& g, const ablate::Var& x, const ablate::Tensor& positions, double sign) const {
    ablate::Backend& be = g.backend();
    const std::int64_t T = positions.numel(), half = dh_ / 2;
    std::vector<std::int32_t> at(static_cast<std::size_t>(T));
    be.copy_to_host(at.data(), positions);
    std::vector<float> table(static_cast<std::size_t>(T * dh_));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t j = 0; j < dh_; ++j) {
        const double zeta = (2.0 * static_cast<double>(j % half) / static_cast<double>(dh_) + gamma_) / (1.0 + gamma_);
        table[static_cast<std::size_t>(t * dh_ + j)] =
            static_cast<float>(std::pow(zeta, sign * at[static_cast<std::size_t>(t)] / scale_base_));
      }
    ablate::Tensor scale = be.empty({T, dh_}, ablate::DType::F32);
    be.copy_from_host(scale, table.data());
    ablate::Var s = g.constant(scale);
    if (x.dtype() != ablate::DType::F32) s = ablate::ops::cast(g, s, x.dtype());
    return ablate::ops::mul(g, ablate::ops::rope(g, x, positions, 0, base_), s);
  }

  float base_;
  double gamma_, scale_base_;
  std::int64_t dh_ = 0;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"base", ablate::OptionType::Float, "10000", nullptr, "rotary wavelength base: pair i turns by position * base^(-2i/Dh)"},
    {"gamma", ablate::OptionType::Float, "0.4", nullptr, "zeta_i = (2i/Dh + gamma) / (1 + gamma): larger, slower decay"},
    {"scale_base", ablate::OptionType::Float, "512", nullptr, "s: q.k scales by zeta_i^((n-m)/s)"},
};

ablate::Component* create(const ablate::Options& o) { return new XPos(o); }

ABLATE_PLUGIN("positional_encoding", "xpos", "1.0.0", "xPos: rotary positions with a distance decay (Sun et al. 2022)",
              ablate::options_of(kOptions), create)

}  // namespace positional_encoding_xpos
