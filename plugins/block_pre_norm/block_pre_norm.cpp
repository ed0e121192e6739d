// Plugin block/pre_norm: the residual wiring of GPT-2 and most modern stacks (Xiong et al.
// 2020), y = x + Dropout(f(Norm_i(x))) around each sublayer f, one norm per sublayer. The
// residual stream itself is never normalised, so the stack ends with a final norm (the model's).
#include <string>
#include <vector>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_pre_norm {

// One LayerNorm (gamma, beta) or RMSNorm (gamma) over the last dim D.
struct Norm {
  ablate::Parameter* gamma = nullptr;  // [D], ones
  ablate::Parameter* beta = nullptr;   // [D], zeros; null for rms_norm
  ablate::Var operator()(ablate::Graph& g, const ablate::Var& x, float eps) const {  // x: [B, T, D]
    return beta ? ablate::ops::layer_norm(g, x, g.parameter(*gamma), g.parameter(*beta), eps)
                : ablate::ops::rms_norm(g, x, g.parameter(*gamma), eps);
  }
};

class PreNorm final : public ablate::Block {
 public:
  explicit PreNorm(const ablate::Options& o) : rms_(o.get_string("norm") == "rms_norm") {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, int sublayers) override {
    if (dims.d_model <= 0 || sublayers <= 0)
      throw ablate::Error("block/pre_norm in '" + scope.prefix() + "': needs d_model > 0 and sublayers > 0, got d_model " +
                          std::to_string(dims.d_model) + ", sublayers " + std::to_string(sublayers));
    eps_ = dims.norm_eps;
    dropout_ = dims.dropout;
    norms_.assign(static_cast<std::size_t>(sublayers), {});
    for (int i = 0; i < sublayers; ++i) {  // "<scope>.norm<i>.gamma" / ".beta"
      const ablate::ParamScope s = scope.child("norm" + std::to_string(i));
      norms_[static_cast<std::size_t>(i)].gamma = &s.param("gamma", {dims.d_model}, ablate::Init::ones());
      if (!rms_) norms_[static_cast<std::size_t>(i)].beta = &s.param("beta", {dims.d_model}, ablate::Init::zeros());
    }
  }

  // x: [B, T, D] -> x + Dropout(f(Norm_i(x))): [B, T, D]
  ablate::Var apply(ablate::Graph& g, int sublayer, const ablate::Var& x, const Sublayer& f) const override {
    if (sublayer < 0 || static_cast<std::size_t>(sublayer) >= norms_.size())
      throw ablate::Error("block/pre_norm: sublayer " + std::to_string(sublayer) + " out of range: built with " +
                              std::to_string(norms_.size()) + " sublayers",
                          "build(scope, dims, sublayers) with the number of sublayers the layer applies");
    const ablate::Var h = norms_[static_cast<std::size_t>(sublayer)](g, x, eps_);
    return ablate::ops::add(g, x, ablate::ops::dropout(g, f(g, h), dropout_));
  }

  bool wants_final_norm() const override { return true; }

 private:
  bool rms_;
  float eps_ = 1e-5f;
  float dropout_ = 0.0f;
  std::vector<Norm> norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", "layer_norm|rms_norm",
     "normalisation of each sublayer's input: LayerNorm (gamma, beta) or RMSNorm (gamma only)"},
};

ablate::Component* create(const ablate::Options& o) { return new PreNorm(o); }

ABLATE_PLUGIN("block", "pre_norm", "1.0.0", "x + Dropout(f(Norm(x))) per sublayer, final norm (GPT-2; Xiong et al. 2020)",
              ablate::options_of(kOptions), create)

}  // namespace block_pre_norm
