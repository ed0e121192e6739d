// Out-of-tree example: attention/gated (Qiu et al. 2025, "Gated Attention for Large Language
// Models"): multi-head attention whose heads are gated, element by element, by sigmoid(x W_g)
// before the output projection. Written with ablate::AttentionProjections, so the variant is only
// the gate: projections, heads, positions, cache and the output projection are the shared ones.
#include <ablate/attention.hpp>

namespace attention_gated {

class GatedAttention final : public ablate::Attention {
 public:
  explicit GatedAttention(const ablate::Options&) {}
  void check(const ablate::ModelDims& dims) const override { projections_.check(dims); }

  // The projections (attention/mha's names), and gate.weight [D, D] (+ gate.bias [D], zero: the gate starts at 1/2).
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, ablate::AttentionRole role) override {
    projections_.build(scope, dims, role);
    gate_w_ = &scope.param("gate.weight", {dims.d_model, dims.d_model}, ablate::Init::xavier_uniform());
    gate_b_ = &scope.param("gate.bias", {dims.d_model}, ablate::Init::zeros());
    dropout_ = dims.attention_dropout;
  }

  // x: [B, T, D] -> heads [B, H, T, Dh] * sigmoid(x W_g + b_g) split into heads -> Linear_out: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::AttentionCall& call) const override {
    namespace ops = ablate::ops;
    const ablate::AttentionProjections::Heads h = projections_.heads(g, call);
    ablate::ops::AttentionOptions mask = call.mask;  // passed on: it also hands the logger the probabilities
    mask.dropout = dropout_;
    const ablate::Var heads = ops::attention(g, h.q, h.kv.k, h.kv.v, mask);
    const ablate::Var gate = ops::sigmoid(g, ops::linear(g, call.x, g.parameter(*gate_w_), g.parameter(*gate_b_)));
    return projections_.output(g, ops::mul(g, heads, ops::split_heads(g, gate, projections_.head_count())));
  }

 private:
  ablate::AttentionProjections projections_{"attention/gated"};
  ablate::Parameter *gate_w_ = nullptr, *gate_b_ = nullptr;
  float dropout_ = 0.0f;
};

ablate::Component* create(const ablate::Options& o) { return new GatedAttention(o); }

ABLATE_PLUGIN("attention", "gated", "1.0.0", "multi-head attention with a sigmoid gate on each head (Qiu et al. 2025)",
              ablate::kNoOptions, create)

}  // namespace attention_gated
