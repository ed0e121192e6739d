// Plugin block/pre_norm: the residual wiring of GPT-2 and most modern stacks (Xiong et al.
// 2020), y = x + Dropout(f(Norm_i(x))) around each sublayer f, one norm per sublayer. The
// residual stream itself is never normalised, so the stack ends with a final norm (the model's).
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_pre_norm {

class PreNorm final : public ablate::Block {
 public:
  explicit PreNorm(const ablate::Options& o) : kind_(ablate::parse_norm_kind(o.get_string("norm"))) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    norms_.build(scope, dims, roles, kind_, "block/pre_norm");  // "<scope>.norm<i>.gamma" / ".beta"
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> for each sublayer f_r in order: x = x + Dropout(f_r(Norm_r(x))): [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    for (const ablate::SublayerRole r : sublayers.roles())
      y = ablate::ops::dropout_add(g, y, sublayers(g, r, norms_[r](g, y)), dropout_);
    return y;
  }

  bool wants_final_norm() const override { return true; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  ablate::NormKind kind_;
  float dropout_ = 0.0f;
  ablate::SublayerNorms norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", ablate::kNormChoices,
     "normalisation of each sublayer's input: LayerNorm (gamma, beta), RMSNorm (gamma) or ScaleNorm (one scalar g)"},
};

ablate::Component* create(const ablate::Options& o) { return new PreNorm(o); }

ABLATE_PLUGIN("block", "pre_norm", "2.2.0", "x + Dropout(f(Norm(x))) per sublayer, final norm (GPT-2; Xiong et al. 2020)",
              ablate::options_of(kOptions), create)

}  // namespace block_pre_norm
