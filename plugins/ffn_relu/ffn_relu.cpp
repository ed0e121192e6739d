// Plugin ffn/relu: the position-wise feed-forward network of "Attention Is All You Need"
// (section 3.3), FFN(x) = Linear_out(Dropout(ReLU(Linear_in(x)))), with D -> F -> D widths.
// The activation is fused into the first linear (one backend op).
#include "ablate/components.hpp"

namespace ffn_relu {

class ReluFeedForward final : public ablate::FeedForward {
 public:
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override { layers_.build(scope, dims); }

  // x: [B, T, D] -> h: [B, T, F] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override { return layers_(g, x, ablate::Activation::ReLU); }

 private:
  ablate::FeedForwardLayers layers_{"ffn/relu"};
};

ablate::Component* create(const ablate::Options&) { return new ReluFeedForward(); }

ABLATE_PLUGIN("ffn", "relu", "1.0.0", "Linear(D->F) -> ReLU -> dropout -> Linear(F->D) (Vaswani et al. 2017)", ablate::kNoOptions,
              create)

}  // namespace ffn_relu
