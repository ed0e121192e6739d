// Out-of-tree example: attention/differential (Ye et al. 2024, "Differential Transformer"). Each
// head's q and k are split in halves; two softmax maps A1 and A2 weigh the full-width v, and the
// head is (A1 - λ A2) v, normalised per head (RMS) and scaled by 1 - λ_init, with
// λ = exp(λq1·λk1) - exp(λq2·λk2) + λ_init and λ_init = 0.8 - 0.6 exp(-0.3 l) at layer l (0-based).
// Written with AttentionProjections, ops::attention's v of another width and ModelDims::layer.
#include <ablate/attention.hpp>
#include <ablate/error.hpp>
#include <cmath>

namespace attention_differential {

class DifferentialAttention final : public ablate::Attention {
 public:
  explicit DifferentialAttention(const ablate::Options&) {}
  void check(const ablate::ModelDims& dims) const override {
    projections_.check(dims);
    if (dims.d_model / dims.heads % 2 != 0)
      throw ablate::Error("attention/differential: a head's width d_model / heads must be even (q and k are split in halves)");
  }

  // The projections (attention/mha's names); lambda_q1, lambda_k1, lambda_q2, lambda_k2 [1, Dh/2];
  // subln.weight [Dh] (the per-head RMS norm's gain, ones).
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims, ablate::AttentionRole role) override {
    projections_.build(scope, dims, role);
    const std::int64_t Dh = dims.d_model / dims.heads;
    for (int i = 0; i < 4; ++i) lambda_[i] = &scope.param(kLambda[i], {1, Dh / 2}, ablate::Init::normal(0.1f));
    subln_ = &scope.param("subln.weight", {Dh}, ablate::Init::ones());
    lambda_init_ = 0.8f - 0.6f * std::exp(-0.3f * static_cast<float>(dims.layer));
    dropout_ = dims.attention_dropout;
  }

  // x: [B, T, D] -> q, k [B, H, T, Dh] in halves of Dh/2, v [B, H, S, Dh] -> A1 v - λ A2 v: [B, H, T, Dh]
  // -> RMS norm per head * (1 - λ_init) -> Linear_out: [B, T, D]
  ablate::Var forward(ablate::Graph& g, const ablate::AttentionCall& call) const override {
    namespace ops = ablate::ops;
    const ablate::AttentionProjections::Heads h = projections_.heads(g, call);
    const std::int64_t half = h.q.shape()[3] / 2;
    ops::AttentionOptions first = call.mask;  // passed on: A1's probabilities go to the logger
    first.dropout = dropout_;
    ops::AttentionOptions second = first;
    second.probs = nullptr;
    const auto weighted = [&](std::int64_t at, const ops::AttentionOptions& o) {  // A v with the half at `at`
      return ops::attention(g, ops::slice_last(g, h.q, at, half), ops::slice_last(g, h.kv.k, at, half), h.kv.v, o);
    };
    const auto term = [&](int q, int k) {  // exp(λq · λk): [1, 1]
      return ops::exp(g, ops::sum_last(g, ops::mul(g, g.parameter(*lambda_[q]), g.parameter(*lambda_[k]))));
    };
    const ablate::Var lambda =
        ops::add(g, ops::add(g, term(0, 1), term(2, 3), 1.0f, -1.0f), ops::iota(g, {1}, lambda_init_, 0.0f, h.q.dtype()));
    const ablate::Var heads = ops::add(g, weighted(0, first), ops::mul(g, weighted(half, second), lambda), 1.0f, -1.0f);
    return projections_.output(g, ops::scale(g, ops::rms_norm(g, heads, g.parameter(*subln_), 1e-5f), 1.0f - lambda_init_));
  }

 private:
  static constexpr const char* kLambda[4] = {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"};
  ablate::AttentionProjections projections_{"attention/differential"};
  ablate::Parameter* lambda_[4] = {};
  ablate::Parameter* subln_ = nullptr;
  float lambda_init_ = 0.0f, dropout_ = 0.0f;
};

ablate::Component* create(const ablate::Options& o) { return new DifferentialAttention(o); }

ABLATE_PLUGIN("attention", "differential", "1.0.0",
              "differential attention: the difference of two softmax maps over one v (Ye et al. 2024)", ablate::kNoOptions,
              create)

}  // namespace attention_differential
