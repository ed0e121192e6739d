// Plugin positional_encoding/t5_relative_bias: T5's learned relative position bias (Raffel et al.
// 2020, section 2.1). Nothing is added to the embeddings; each self-attention logit of head h gets a
// learned scalar of the bucket of the distance key - query: exact buckets for short distances,
// log-spaced ones up to max_distance, one bucket beyond. Shared by the stack's layers (as T5) or one
// table per layer. A causal stack buckets only past distances (T5's decoder); others, both signs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace positional_encoding_t5_relative_bias {

using ablate::Error;

class T5RelativeBias final : public ablate::PositionalEncoding {
 public:
  explicit T5RelativeBias(const ablate::Options& o)
      : buckets_(o.get_int("buckets")), max_distance_(o.get_int("max_distance")), per_layer_(o.get_bool("per_layer")) {}

  // Adds, under `scope` ("decoder.positions"), the tables [buckets, H]: relative_bias.weight, or
  // relative_bias.<l>.weight for each layer l with per_layer. Initial values N(0, D^-1/2) (T5's).
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    causal_ = dims.causal;
    const std::int64_t exact = (causal_ ? buckets_ : buckets_ / 2) / 2;  // distances 0 .. exact-1 have a bucket each
    if (dims.heads <= 0 || exact < 1 || max_distance_ <= exact)
      throw Error("t5_relative_bias in '" + scope.prefix() + "': buckets " + std::to_string(buckets_) + ", max_distance " +
                      std::to_string(max_distance_) + " and heads " + std::to_string(dims.heads) +
                      " leave no exact and log-spaced buckets",
                  "use buckets >= 4 (>= 2 in a causal stack) and max_distance > buckets / 4 (T5: 32 and 128)");
    heads_ = dims.heads;
    const auto init = ablate::Init::normal(1.0f / std::sqrt(static_cast<float>(dims.d_model)));
    const ablate::ParamScope tables = scope.child("relative_bias");
    for (std::int64_t l = 0; l < (per_layer_ ? dims.layers : 1); ++l)
      tables_.push_back(&(per_layer_ ? tables.child(std::to_string(l)) : tables).param("weight", {buckets_, heads_}, init));
  }

  // x: [B, T, D] -> x: positions act on the attention logits, not on the embeddings.
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }
  void capabilities(ablate::PositionCapabilities& caps) const override {
    caps.biases_logits = true;
    caps.bias_per_layer = per_layer_;
  }

  // bias F32 [H, T, S] = table[bucket(s - (offset + t)), h]; the gradient reaches the table.
  LogitBias logit_bias(ablate::Graph& g, std::int64_t T, std::int64_t S, std::int64_t offset, std::int64_t layer) const override {
    namespace ops = ablate::ops;
    const ablate::Var table = g.parameter(*tables_.at(static_cast<std::size_t>(per_layer_ ? layer : 0)));
    ablate::Var rows = ops::embedding(g, bucket_ids(g.backend(), T, S, offset), table);  // [1, T*S, H]
    if (rows.dtype() != ablate::DType::F32) rows = ops::cast(g, rows, ablate::DType::F32);
    const ablate::Var heads = ops::split_heads(g, rows, static_cast<int>(heads_));  // [1, H, T*S, 1]
    return {ops::reshape(g, heads, {heads_, T, S}), ablate::Tensor()};
  }

 private:
  // The bucket of distance n = key - query: past distances (n <= 0) by |n|, future ones (bidirectional
  // only) in the upper half; |n| < exact is its own bucket, then log-spaced up to max_distance.
  std::int32_t bucket(std::int64_t n) const {
    std::int64_t half = buckets_, first = 0;
    if (!causal_) {
      half = buckets_ / 2;
      if (n > 0) first = half;
    } else if (n > 0) {
      n = 0;  // a causal mask hides the future anyway
    }
    n = std::abs(n);
    const std::int64_t exact = half / 2;
    if (n < exact) return static_cast<std::int32_t>(first + n);
    const double spread = std::log(static_cast<double>(n) / exact) / std::log(static_cast<double>(max_distance_) / exact);
    return static_cast<std::int32_t>(first + std::min(half - 1, exact + static_cast<std::int64_t>(spread * (half - exact))));
  }

  // I32 [1, T*S] of bucket(s - (offset + t)), kept for the last (T, S, offset): training repeats them.
  const ablate::Tensor& bucket_ids(ablate::Backend& be, std::int64_t T, std::int64_t S, std::int64_t offset) const {
    if (ids_.defined() && &be == ids_backend_ && key_ == std::vector<std::int64_t>{T, S, offset}) return ids_;
    std::vector<std::int32_t> ids(static_cast<std::size_t>(T * S));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t s = 0; s < S; ++s) ids[static_cast<std::size_t>(t * S + s)] = bucket(s - (offset + t));
    ids_ = be.empty({1, T * S}, ablate::DType::I32);
    be.copy_from_host(ids_, ids.data());
    ids_backend_ = &be;
    key_ = {T, S, offset};
    return ids_;
  }

  std::int64_t buckets_, max_distance_;
  bool per_layer_;
  bool causal_ = false;
  std::int64_t heads_ = 0;
  std::vector<ablate::Parameter*> tables_;  // [buckets, H] each: one, or one per layer
  mutable ablate::Tensor ids_;
  mutable const ablate::Backend* ids_backend_ = nullptr;
  mutable std::vector<std::int64_t> key_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"buckets", ablate::OptionType::Int, "32", nullptr, "distance buckets (half for each direction outside a causal stack)"},
    {"max_distance", ablate::OptionType::Int, "128", nullptr, "distances from here on share the last bucket"},
    {"per_layer", ablate::OptionType::Bool, "false", nullptr, "one table per layer (false: one for the stack, as T5)"},
};

ablate::Component* create(const ablate::Options& o) { return new T5RelativeBias(o); }

ABLATE_PLUGIN("positional_encoding", "t5_relative_bias", "1.0.0",
              "learned bias of the bucketed distance on the attention logits (Raffel et al. 2020)", ablate::options_of(kOptions),
              create)

}  // namespace positional_encoding_t5_relative_bias
