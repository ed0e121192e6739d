// Plugin block/rezero: residual branches behind learned gates, y = x + α_r ⊙ Dropout(f_r(Norm_r(x)))
// per sublayer. ReZero (Bachlechner et al. 2020): no norm, one scalar α per sublayer starting at 0,
// so every layer starts as the identity. LayerScale (Touvron et al. 2021, CaiT): a pre-norm with a
// per-channel α starting small ({norm: layer_norm, gate: channel, init: 1e-4}).
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_rezero {

class ReZero final : public ablate::Block {
 public:
  explicit ReZero(const ablate::Options& o)
      : normed_(o.get_string("norm") != "none"),
        kind_(normed_ ? ablate::parse_norm_kind(o.get_string("norm")) : ablate::NormKind::LayerNorm),
        channel_(o.get_string("gate") == "channel"),
        init_(static_cast<float>(o.get_float("init"))) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    if (normed_) norms_.build(scope, dims, roles, kind_, "block/rezero");  // "<scope>.norm<i>"
    roles_ = roles;
    gates_.clear();
    for (std::size_t i = 0; i < roles.size(); ++i)  // "<scope>.alpha<i>": [1] or [D]
      gates_.push_back(&scope.param("alpha" + std::to_string(i), {channel_ ? dims.d_model : 1}, ablate::Init::constant(init_)));
    dropout_ = dims.dropout;
  }

  // x: [B, T, D] -> for each sublayer f_r in order: x = x + α_r ⊙ Dropout(f_r(Norm_r(x))): [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    for (const ablate::SublayerRole r : sublayers.roles()) {
      const ablate::Var branch = ablate::ops::dropout(g, sublayers(g, r, normed_ ? norms_[r](g, y) : y), dropout_);
      ablate::Parameter& gate = *gates_[ablate::sublayer_index(roles_, r, "block/rezero", "gate")];
      y = ablate::ops::add(g, y, ablate::ops::mul(g, branch, g.parameter(gate)));
    }
    return y;
  }

  bool wants_final_norm() const override { return normed_; }
  ablate::NormKind norm_kind() const override { return kind_; }

 private:
  bool normed_;
  ablate::NormKind kind_;
  bool channel_;
  float init_;
  float dropout_ = 0.0f;
  std::vector<ablate::SublayerRole> roles_;
  std::vector<ablate::Parameter*> gates_;
  ablate::SublayerNorms norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "none", "none|layer_norm|rms_norm|scale_norm",
     "the norm of each sublayer's input: none (ReZero) or a pre-norm (LayerScale; then a final norm too)"},
    {"gate", ablate::OptionType::String, "scalar", "scalar|channel",
     "α per sublayer: one scalar (ReZero) or one per channel [D] (LayerScale)"},
    {"init", ablate::OptionType::Float, "0.0", nullptr, "the gates' initial value (ReZero 0; LayerScale 1e-4 .. 0.1)"},
};

ablate::Component* create(const ablate::Options& o) { return new ReZero(o); }

ABLATE_PLUGIN("block", "rezero", "1.0.0", "x + α Dropout(f(x)) per sublayer, α learned from 0 (ReZero; LayerScale with options)",
              ablate::options_of(kOptions), create)

}  // namespace block_rezero
