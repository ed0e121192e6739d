// Plugin block/sandwich_norm: pre-norm with a second norm on each sublayer's output (Ding et al.
// 2021, CogView; NormFormer's post-attention norm), y = x + Dropout(Norm'_r(f_r(Norm_r(x)))),
// which keeps the residual updates bounded in deep or low-precision stacks. Ends with a final norm.
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_sandwich_norm {

class SandwichNorm final : public ablate::Block {
 public:
  explicit SandwichNorm(const ablate::Options& o) : kind_(ablate::parse_norm_kind(o.get_string("norm"))) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    in_.build(scope, dims, roles, kind_, "block/sandwich_norm");                // "<scope>.norm<i>"
    out_.build(scope.child("out"), dims, roles, kind_, "block/sandwich_norm");  // "<scope>.out.norm<i>"
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> for each sublayer f_r in order: x = x + Dropout(Out_r(f_r(In_r(x)))): [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    for (const ablate::SublayerRole r : sublayers.roles())
      y = ablate::ops::dropout_add(g, y, out_[r](g, sublayers(g, r, in_[r](g, y))), dropout_);
    return y;
  }

  bool wants_final_norm() const override { return true; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  ablate::NormKind kind_;
  float dropout_ = 0.0f;
  ablate::SublayerNorms in_, out_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", ablate::kNormChoices,
     "the norm before and after each sublayer: LayerNorm (gamma, beta), RMSNorm (gamma) or ScaleNorm (one scalar g)"},
};

ablate::Component* create(const ablate::Options& o) { return new SandwichNorm(o); }

ABLATE_PLUGIN("block", "sandwich_norm", "1.1.0",
              "x + Dropout(Norm(f(Norm(x)))) per sublayer, final norm (CogView, Ding et al. 2021)", ablate::options_of(kOptions),
              create)

}  // namespace block_sandwich_norm
