// Plugin ffn/geglu: the gated FFN of T5 v1.1 (Shazeer 2020, "GLU Variants Improve
// Transformer"), y = Linear_out(Dropout(GELU(Linear_gate(x)) * Linear_up(x))). Its hidden width
// defaults to floor(2 d_ff / 3), so it has the weights of a ReLU/GELU FFN of width d_ff.
#include "ablate/components.hpp"

namespace ffn_geglu {

class GeGlu final : public ablate::FeedForward {
 public:
  explicit GeGlu(const ablate::Options& o) : hidden_(o.get_int("hidden")), bias_(o.get_bool("bias")) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    layers_.build(scope, dims, hidden_, bias_);
  }

  // x: [B, T, D] -> gate, up: [B, T, F'] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override {
    return layers_(g, x, ablate::Activation::GeluErf);
  }

 private:
  std::int64_t hidden_;
  bool bias_;
  ablate::GatedFeedForwardLayers layers_{"ffn/geglu"};
};

constexpr ablate::OptionInfo kOptions[] = {
    {"hidden", ablate::OptionType::Int, "0", nullptr, "hidden width F'; 0 = floor(2 d_ff / 3), the weights of a d_ff FFN"},
    {"bias", ablate::OptionType::Bool, "true", nullptr, "biases on the three linears (Shazeer 2020 and T5 v1.1: none)"},
};

ablate::Component* create(const ablate::Options& o) { return new GeGlu(o); }

ABLATE_PLUGIN("ffn", "geglu", "1.0.0", "GELU(Linear_gate x) * Linear_up x -> dropout -> Linear_out (Shazeer 2020; T5 v1.1)",
              ablate::options_of(kOptions), create)

}  // namespace ffn_geglu
