// Out-of-tree example: block/deepnorm (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000
// Layers"): post-norm with the residual up-weighted, x = LN(alpha x + f(x)), and the sublayers'
// value and output projections and FFN weights scaled by beta at initialisation, for a stack of
// N layers alpha = (2N)^(1/4), beta = (8N)^(-1/4) (the paper's single-stack constants, per stack
// here). The beta init is Block::init_sublayers: the block scales what its sublayers built.
#include <cmath>
#include <string>

#include <ablate/components.hpp>
#include <ablate/ops.hpp>

namespace block_deepnorm {

class DeepNorm final : public ablate::Block {
 public:
  explicit DeepNorm(const ablate::Options&) {}

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
             const std::vector<ablate::SublayerRole>& roles) override {
    norms_.build(scope, dims, roles, ablate::NormKind::LayerNorm, "block/deepnorm");
    dropout_ = dims.dropout;
    alpha_ = static_cast<float>(std::pow(2.0 * static_cast<double>(dims.layers), 0.25));
  }

  // beta on every FFN weight and on the attention's value and output projections (attention/mha's
  // qkv weight holds q, k, v rows in that order, a cross-attention's kv weight k, v: only the v
  // rows), never on q and k.
  void init_sublayers(const ablate::ParamScope& scope, const ablate::ModelDims& dims,
                      const std::vector<ablate::SublayerRole>&) override {
    const auto beta = static_cast<float>(std::pow(8.0 * static_cast<double>(dims.layers), -0.25));
    ablate::ParameterStore& store = scope.store();
    for (ablate::Parameter* p : scope.parameters()) {
      const std::string& n = p->name;
      const bool weight = n.ends_with(".weight"), ffn = n.find(".ffn.") != std::string::npos;
      if (weight && (ffn || n.ends_with("attn.out.weight") || n.ends_with("attn.v.weight"))) store.scale_value(*p, beta);
      // [rows, D]: the v rows are the last (rows - D) / 2 of qkv, the last rows / 2 of kv.
      const std::int64_t rows = p->value.shape()[0], d = dims.d_model;
      if (n.ends_with("attn.qkv.weight")) store.scale_value(*p, beta, (rows - (rows - d) / 2) * d);
      if (n.ends_with("attn.kv.weight")) store.scale_value(*p, beta, (rows / 2) * d);
    }
  }

  // x: [B, T, D] -> for each sublayer f: x = LN(alpha x + Dropout(f(x)))
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, const ablate::Sublayers& sublayers) const override {
    ablate::Var y = x;
    for (const ablate::SublayerRole r : sublayers.roles())
      y = norms_[r](g, ablate::ops::dropout_add(g, ablate::ops::scale(g, y, alpha_), sublayers(g, r, y), dropout_));
    return y;
  }
  bool wants_final_norm() const override { return false; }
  ablate::NormKind norm_kind() const override { return ablate::NormKind::LayerNorm; }

 private:
  float dropout_ = 0.0f, alpha_ = 1.0f;
  ablate::SublayerNorms norms_;
};

ablate::Component* create(const ablate::Options& o) { return new DeepNorm(o); }

ABLATE_PLUGIN("block", "deepnorm", "1.0.0", "DeepNorm: LN(alpha x + f(x)) with beta-scaled init (Wang et al. 2022)",
              ablate::kNoOptions, create)

}  // namespace block_deepnorm
