// Plugin ffn/reglu, an out-of-tree example: the ReGLU feed-forward of Shazeer 2020 ("GLU Variants
// Improve Transformer"), y = Linear_out(Dropout(ReLU(Linear_gate(x)) * Linear_up(x))), built on the
// public GatedFeedForwardLayers like ffn/swiglu and ffn/geglu; public headers only. Its hidden width
// defaults to floor(2 d_ff / 3): the weights of a ReLU FFN of width d_ff. Tests: ffn_reglu_test.cpp.
#include "ablate/components.hpp"

namespace ffn_reglu {

class ReGlu final : public ablate::FeedForward {
 public:
  explicit ReGlu(const ablate::Options& o) : hidden_(o.get_int("hidden")), bias_(o.get_bool("bias")) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    layers_.build(scope, dims, hidden_, bias_);
  }

  // x: [B, T, D] -> gate, up: [B, T, F'] -> y: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x) const override { return layers_(g, x, ablate::Activation::ReLU); }

 private:
  std::int64_t hidden_;
  bool bias_;
  ablate::GatedFeedForwardLayers layers_{"ffn/reglu"};
};

constexpr ablate::OptionInfo kOptions[] = {
    {"hidden", ablate::OptionType::Int, "0", nullptr, "hidden width F'; 0 = floor(2 d_ff / 3), the weights of a d_ff FFN"},
    {"bias", ablate::OptionType::Bool, "true", nullptr, "biases on the three linears (Shazeer 2020: none)"},
};

ablate::Component* create(const ablate::Options& o) { return new ReGlu(o); }

ABLATE_PLUGIN("ffn", "reglu", "1.0.0", "ReLU(Linear_gate x) * Linear_up x -> dropout -> Linear_out (Shazeer 2020)",
              ablate::options_of(kOptions), create)

}  // namespace ffn_reglu
