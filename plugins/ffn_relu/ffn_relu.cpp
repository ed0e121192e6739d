// Plugin ffn/relu: the position-wise feed-forward network of "Attention Is All You Need"
// (section 3.3), FFN(x) = Linear_out(Dropout(ReLU(Linear_in(x)))), with D -> F -> D widths.
// The activation is fused into the first linear (one backend op).
#include <string>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace ffn_relu {

class ReluFeedForward final : public ablate::FeedForward {
 public:
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    if (dims.d_model <= 0 || dims.d_ff <= 0)
      throw ablate::Error("ffn/relu in '" + scope.prefix() + "': d_model and d_ff must be > 0, got d_model " +
                              std::to_string(dims.d_model) + ", d_ff " + std::to_string(dims.d_ff),
                          "set model.d_model and model.d_ff to positive sizes");
    dropout_ = dims.dropout;
    w_in_ = &scope.param("in.weight", {dims.d_ff, dims.d_model}, ablate::Init::xavier_uniform());  // [F, D]
    b_in_ = &scope.param("in.bias", {dims.d_ff}, ablate::Init::zeros());                           // [F]
    w_out_ = &scope.param("out.weight", {dims.d_model, dims.d_ff}, ablate::Init::xavier_uniform()); // [D, F]
    b_out_ = &scope.param("out.bias", {dims.d_model}, ablate::Init::zeros());                       // [D]
  }

  // x: [B, T, D] -> h: [B, T, F] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override {
    if (!w_in_) throw ablate::Error("ffn/relu: forward before build", "call build(scope, dims) once first");
    ablate::Var h = ablate::ops::linear(g, x, g.parameter(*w_in_), g.parameter(*b_in_), ablate::Activation::ReLU);
    h = ablate::ops::dropout(g, h, dropout_);
    return ablate::ops::linear(g, h, g.parameter(*w_out_), g.parameter(*b_out_));
  }

 private:
  float dropout_ = 0.0f;
  ablate::Parameter* w_in_ = nullptr;
  ablate::Parameter* b_in_ = nullptr;
  ablate::Parameter* w_out_ = nullptr;
  ablate::Parameter* b_out_ = nullptr;
};

ablate::Component* create(const ablate::Options&) { return new ReluFeedForward(); }

ABLATE_PLUGIN("ffn", "relu", "1.0.0", "Linear(D->F) -> ReLU -> dropout -> Linear(F->D) (Vaswani et al. 2017)",
              ablate::kNoOptions, create)

}  // namespace ffn_relu
