// Plugin positional_encoding/none: no position information at all (NoPE; Haviv et al. 2022,
// Kazemnejad et al. 2023). A causal decoder can still infer positions from its mask; an encoder
// sees a bag of tokens. The baseline every other positional encoding is ablated against.
#include "ablate/components.hpp"

namespace positional_encoding_none {

class NoPositions final : public ablate::PositionalEncoding {
 public:
  void build(const ablate::ParamScope&, const ablate::ModelDims&) override {}
  // x: [B, T, D] -> x unchanged, at any position (no limit).
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }
};

ablate::Component* create(const ablate::Options&) { return new NoPositions(); }

ABLATE_PLUGIN("positional_encoding", "none", "1.0.0", "no positions (NoPE): the embeddings pass unchanged", ablate::kNoOptions,
              create)

}  // namespace positional_encoding_none
