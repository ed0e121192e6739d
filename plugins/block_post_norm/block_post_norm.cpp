// Plugin block/post_norm: the residual wiring of "Attention Is All You Need" (section 5.4),
// y = Norm_i(x + Dropout(f(x))) around each sublayer f, one norm per sublayer. The stack needs
// no final norm: every sublayer's output is already normalised.
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_post_norm {

class PostNorm final : public ablate::Block {
 public:
  explicit PostNorm(const ablate::Options& o) : kind_(ablate::parse_norm_kind(o.get_string("norm"))) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    norms_.build(scope, dims, roles, kind_, "block/post_norm");  // "<scope>.norm<i>.gamma" / ".beta"
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> for each sublayer f_r in order: x = Norm_r(x + Dropout(f_r(x))): [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    for (const ablate::SublayerRole r : sublayers.roles())
      y = norms_[r](g, ablate::ops::dropout_add(g, y, sublayers(g, r, y), dropout_));
    return y;
  }

  bool wants_final_norm() const override { return false; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  ablate::NormKind kind_;
  float dropout_ = 0.0f;
  ablate::SublayerNorms norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", ablate::kNormChoices,
     "normalisation after each residual add: LayerNorm (gamma, beta), RMSNorm (gamma) or ScaleNorm (one scalar g)"},
};

ablate::Component* create(const ablate::Options& o) { return new PostNorm(o); }

ABLATE_PLUGIN("block", "post_norm", "2.2.0", "Norm(x + Dropout(f(x))) per sublayer (Vaswani et al. 2017)",
              ablate::options_of(kOptions), create)

}  // namespace block_post_norm
