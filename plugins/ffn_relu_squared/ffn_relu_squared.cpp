// Plugin ffn/relu_squared: the FFN of Primer (So et al. 2021), y = Linear_out(Dropout(ReLU(Linear_in(x))^2)),
// with D -> F -> D widths: ffn/relu with its activation squared, same parameters.
#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace ffn_relu_squared {

class ReluSquared final : public ablate::FeedForward {
 public:
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override { layers_.build(scope, dims); }

  // x: [B, T, D] -> h = ReLU(x W_in^T + b_in)^2: [B, T, F] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override {
    const ablate::Var h = layers_.hidden(g, x, ablate::Activation::ReLU);
    return layers_.output(g, ablate::ops::mul(g, h, h));
  }

 private:
  ablate::FeedForwardLayers layers_{"ffn/relu_squared"};
};

ablate::Component* create(const ablate::Options&) { return new ReluSquared(); }

ABLATE_PLUGIN("ffn", "relu_squared", "1.0.0", "Linear(D->F) -> ReLU^2 -> dropout -> Linear(F->D) (Primer, So et al. 2021)",
              ablate::kNoOptions, create)

}  // namespace ffn_relu_squared
