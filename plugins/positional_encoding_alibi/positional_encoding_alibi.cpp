// Plugin positional_encoding/alibi: attention with linear biases (Press et al. 2022,
// "Train Short, Test Long"). Nothing is added to the embeddings; every self-attention logit of head h
// gets -m_h * |i - j|, the slopes m_h a geometric sequence (2^-8/H .. 2^-8 for H a power of two), so
// nearer keys weigh more and the model has no position limit. Written against the public headers only.
#include <cmath>
#include <vector>

#include "ablate/components.hpp"

namespace positional_encoding_alibi {

// The paper's slopes: for n = H a power of two, m_i = 2^(-8 i / n), i = 1 .. n; otherwise those of
// the largest power of two below H, then every other slope of twice that many.
std::vector<float> alibi_slopes(std::int64_t heads) {
  const auto power_of_two = [](std::int64_t n) {
    std::vector<float> s;
    for (std::int64_t i = 1; i <= n; ++i) s.push_back(std::exp2(-8.0f * static_cast<float>(i) / static_cast<float>(n)));
    return s;
  };
  std::int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  std::vector<float> s = power_of_two(n);
  const std::vector<float> finer = power_of_two(2 * n);
  for (std::size_t i = 0; static_cast<std::int64_t>(s.size()) < heads; i += 2) s.push_back(finer[i]);
  return s;
}

class Alibi final : public ablate::PositionalEncoding {
 public:
  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    if (dims.heads <= 0)
      throw ablate::Error("alibi in '" + scope.prefix() + "': needs model.heads > 0, got " + std::to_string(dims.heads));
    slopes_ = alibi_slopes(dims.heads);
  }

  // x: [B, T, D] -> x: positions act on the attention logits, not on the embeddings.
  ablate::Var forward(ablate::Graph&, const ablate::Var& x, std::int64_t) const override { return x; }

  void capabilities(ablate::PositionCapabilities& caps) const override { caps.biases_logits = true; }

  // The slopes F32 [H]; the kernel adds -slope_h * |i + offset - j| (nothing [T, S] is made).
  LogitBias logit_bias(ablate::Graph& g, std::int64_t, std::int64_t, std::int64_t, std::int64_t) const override {
    ablate::Tensor t = g.backend().empty({static_cast<std::int64_t>(slopes_.size())}, ablate::DType::F32);
    g.backend().copy_from_host(t, slopes_.data());
    return {ablate::Var(), t};
  }

 private:
  std::vector<float> slopes_;
};

ablate::Component* create(const ablate::Options&) { return new Alibi(); }

ABLATE_PLUGIN("positional_encoding", "alibi", "1.1.0", "linear biases -m_h |i - j| on the attention logits (Press et al. 2022)",
              ablate::kNoOptions, create)

}  // namespace positional_encoding_alibi
