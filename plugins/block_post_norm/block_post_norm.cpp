// Plugin block/post_norm: the residual wiring of "Attention Is All You Need" (section 5.4),
// y = Norm_i(x + Dropout(f(x))) around each sublayer f, one norm per sublayer. The stack needs
// no final norm: every sublayer's output is already normalised.
#include <string>
#include <vector>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace block_post_norm {

// One LayerNorm (gamma, beta) or RMSNorm (gamma) over the last dim D.
struct Norm {
  ablate::Parameter* gamma = nullptr;  // [D], ones
  ablate::Parameter* beta = nullptr;   // [D], zeros; null for rms_norm
  ablate::Var operator()(ablate::Graph& g, const ablate::Var& x, float eps) const {  // x: [B, T, D]
    return beta ? ablate::ops::layer_norm(g, x, g.parameter(*gamma), g.parameter(*beta), eps)
                : ablate::ops::rms_norm(g, x, g.parameter(*gamma), eps);
  }
};

class PostNorm final : public ablate::Block {
 public:
  explicit PostNorm(const ablate::Options& o) : rms_(o.get_string("norm") == "rms_norm") {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, int sublayers) override {
    if (dims.d_model <= 0 || sublayers <= 0)
      throw ablate::Error("block/post_norm in '" + scope.prefix() + "': needs d_model > 0 and sublayers > 0, got d_model " +
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

  // x: [B, T, D] -> Norm_i(x + Dropout(f(x))): [B, T, D]
  ablate::Var apply(ablate::Graph& g, int sublayer, const ablate::Var& x, const Sublayer& f) const override {
    if (sublayer < 0 || static_cast<std::size_t>(sublayer) >= norms_.size())
      throw ablate::Error("block/post_norm: sublayer " + std::to_string(sublayer) + " out of range: built with " +
                              std::to_string(norms_.size()) + " sublayers",
                          "build(scope, dims, sublayers) with the number of sublayers the layer applies");
    const ablate::Var r = ablate::ops::dropout(g, f(g, x), dropout_);
    return norms_[static_cast<std::size_t>(sublayer)](g, ablate::ops::add(g, x, r), eps_);
  }

  bool wants_final_norm() const override { return false; }

 private:
  bool rms_;
  float eps_ = 1e-5f;
  float dropout_ = 0.0f;
  std::vector<Norm> norms_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"norm", ablate::OptionType::String, "layer_norm", "layer_norm|rms_norm",
     "normalisation after each residual add: LayerNorm (gamma, beta) or RMSNorm (gamma only)"},
};

ablate::Component* create(const ablate::Options& o) { return new PostNorm(o); }

ABLATE_PLUGIN("block", "post_norm", "1.0.0", "Norm(x + Dropout(f(x))) per sublayer (Vaswani et al. 2017)",
              ablate::options_of(kOptions), create)

}  // namespace block_post_norm
