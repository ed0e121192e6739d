// Plugin ffn/swiglu: the gated FFN of PaLM and LLaMA (Shazeer 2020, "GLU Variants Improve
// Transformer"), y = Linear_out(Dropout(SiLU(Linear_gate(x)) * Linear_up(x))). Its hidden width
// defaults to floor(2 d_ff / 3), so it has the weights of a ReLU/GELU FFN of width d_ff.
#include "ablate/components.hpp"

namespace ffn_swiglu {

class SwiGlu final : public ablate::FeedForward {
 public:
  explicit SwiGlu(const ablate::Options& o) : hidden_(o.get_int("hidden")), bias_(o.get_bool("bias")) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    layers_.build(scope, dims, hidden_, bias_);
  }

  // x: [B, T, D] -> gate, up: [B, T, F'] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override { return layers_(g, x, ablate::Activation::SiLU); }

 private:
  std::int64_t hidden_;
  bool bias_;
  ablate::GatedFeedForwardLayers layers_{"ffn/swiglu"};
};

constexpr ablate::OptionInfo kOptions[] = {
    {"hidden", ablate::OptionType::Int, "0", nullptr, "hidden width F'; 0 = floor(2 d_ff / 3), the weights of a d_ff FFN"},
    {"bias", ablate::OptionType::Bool, "true", nullptr, "biases on the three linears (Shazeer 2020 and LLaMA: none)"},
};

ablate::Component* create(const ablate::Options& o) { return new SwiGlu(o); }

ABLATE_PLUGIN("ffn", "swiglu", "1.0.0", "SiLU(Linear_gate x) * Linear_up x -> dropout -> Linear_out (Shazeer 2020; LLaMA)",
              ablate::options_of(kOptions), create)

}  // namespace ffn_swiglu
