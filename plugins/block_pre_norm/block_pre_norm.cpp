// Plugin block/pre_norm: the residual wiring of GPT-2 and most modern stacks (Xiong et al.
// 2020), y = x + Dropout(f(Norm_i(x))) around each sublayer f, one norm per sublayer. The
// residual stream itself is never normalised, so the stack ends with a final norm (the model's).
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_pre_norm {

class PreNorm final : public ablate::Block {
 public:
  explicit PreNorm(const ablate::Options& o) : kind_(ablate::parse_norm_kind(o.get_string("norm"))) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, int sublayers) override {
    norms_.build(scope, dims, sublayers, kind_, "block/pre_norm");  // "<scope>.norm<i>.gamma" / ".beta"
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> x + Dropout(f(Norm_i(x))): [B, T, D]
  ablate::Var apply(ablate::Graph& g, int sublayer, const ablate::Var& x, const Sublayer& f) const override {
    const ablate::Var h = norms_[sublayer](g, x);
    return ablate::ops::add(g, x, ablate::ops::dropout(g, f(g, h), dropout_));
  }

  bool wants_final_norm() const override { return true; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  ablate::NormKind kind_;
  float dropout_ = 0.0f;
  ablate::SublayerNorms norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", "layer_norm|rms_norm",
     "normalisation of each sublayer's input: LayerNorm (gamma, beta) or RMSNorm (gamma only)"},
};

ablate::Component* create(const ablate::Options& o) { return new PreNorm(o); }

ABLATE_PLUGIN("block", "pre_norm", "1.0.0", "x + Dropout(f(Norm(x))) per sublayer, final norm (GPT-2; Xiong et al. 2020)",
              ablate::options_of(kOptions), create)

}  // namespace block_pre_norm
