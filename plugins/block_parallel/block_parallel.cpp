// Plugin block/parallel: the parallel layer of GPT-J and PaLM, y = x + Σ_r Dropout(f_r(Norm_r(x))):
// every sublayer (attention, FFN; and cross-attention in a decoder) reads the same input x, so
// attention and FFN no longer run one after the other. One shared norm (GPT-J, PaLM) or one per
// sublayer (GPT-NeoX). Ends with a final norm.
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_parallel {

class Parallel final : public ablate::Block {
 public:
  explicit Parallel(const ablate::Options& o)
      : kind_(ablate::parse_norm_kind(o.get_string("norm"))), shared_(o.get_bool("shared_norm")) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    if (shared_)
      shared_norm_ = ablate::NormLayer(scope.child("norm0"), kind_, dims.d_model, dims.norm_eps);  // "<scope>.norm0"
    else
      norms_.build(scope, dims, roles, kind_, "block/parallel");  // "<scope>.norm<i>"
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> x + Σ over sublayers f_r of Dropout(f_r(Norm_r(x))): [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    const ablate::Var h = shared_ ? shared_norm_(g, x) : ablate::Var();
    for (const ablate::SublayerRole r : sublayers.roles())
      y = ablate::ops::dropout_add(g, y, sublayers(g, r, shared_ ? h : norms_[r](g, x)), dropout_);
    return y;
  }

  bool wants_final_norm() const override { return true; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  ablate::NormKind kind_;
  bool shared_;
  float dropout_ = 0.0f;
  ablate::NormLayer shared_norm_;
  ablate::SublayerNorms norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", ablate::kNormChoices,
     "the norm of the sublayers' input: LayerNorm (gamma, beta), RMSNorm (gamma) or ScaleNorm (one scalar g)"},
    {"shared_norm", ablate::OptionType::Bool, "true", nullptr,
     "one norm feeds every sublayer (GPT-J, PaLM); false: one norm per sublayer (GPT-NeoX)"},
};

ablate::Component* create(const ablate::Options& o) { return new Parallel(o); }

ABLATE_PLUGIN("block", "parallel", "1.1.0", "x + Σ Dropout(f(Norm(x))) over the sublayers in parallel, final norm (GPT-J, PaLM)",
              ablate::options_of(kOptions), create)

}  // namespace block_parallel
