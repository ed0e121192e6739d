// Plugin ffn/gelu: the feed-forward network of BERT and GPT,
// FFN(x) = Linear_out(Dropout(GELU(Linear_in(x)))), with D -> F -> D widths. GELU is exact
// (erf) or the tanh approximation (option `approximation`), fused into the first linear.
#include "ablate/components.hpp"

namespace ffn_gelu {

class GeluFeedForward final : public ablate::FeedForward {
 public:
  explicit GeluFeedForward(const ablate::Options& o)
      : act_(o.get_string("approximation") == "tanh" ? ablate::Activation::GeluTanh : ablate::Activation::GeluErf) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override { layers_.build(scope, dims); }

  // x: [B, T, D] -> h: [B, T, F] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override { return layers_(g, x, act_); }

 private:
  ablate::Activation act_;
  ablate::FeedForwardLayers layers_{"ffn/gelu"};
};

constexpr ablate::OptionInfo kOptions[] = {
    {"approximation", ablate::OptionType::String, "erf", "erf|tanh",
     "GELU form: erf = exact x*Phi(x) (BERT), tanh = the tanh approximation (GPT-2)"},
};

ablate::Component* create(const ablate::Options& o) { return new GeluFeedForward(o); }

ABLATE_PLUGIN("ffn", "gelu", "1.0.0", "Linear(D->F) -> GELU -> dropout -> Linear(F->D) (BERT, GPT)", ablate::options_of(kOptions),
              create)

}  // namespace ffn_gelu
