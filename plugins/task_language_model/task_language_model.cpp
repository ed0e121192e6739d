// Plugin task/language_model: next-token prediction on sequences from a fixed random first-order
// Markov chain over the content tokens. Each token has 3 likely successors (p = 0.6, 0.25, 0.15)
// drawn from the seed, so the data is learnable (low entropy) but not trivial.
#include <array>

#include "../common/synthetic_seq2seq.hpp"

namespace task_language_model {

class LanguageModel final : public ablate::Task {
 public:
  static constexpr int kSuccessors = 3;
  static constexpr std::array<float, kSuccessors> kCumulative = {0.6f, 0.85f, 1.0f};

  explicit LanguageModel(const ablate::Options& o) : s_(o, kName) {
    // The transition table: a pure function of the seed (its own Philox stream, step 0).
    ablate_synthetic::Stream r(s_.seed, 0, ablate_synthetic::kTableStream);
    successors_.resize(static_cast<std::size_t>(s_.content_tokens()));
    for (auto& next : successors_)
      for (auto& t : next) t = static_cast<std::int32_t>(r.integer(3, s_.vocab_size - 1));
  }

  ablate::TaskInfo info() const override { return {ablate::TaskType::LanguageModel, s_.vocab_size, 0, s_.max_len}; }
  std::int64_t size(ablate::Split split) const override { return s_.size(split); }
  ablate::Example example(ablate::Split split, std::int64_t index) const override {
    s_.check_index(split, index, kName);
    auto r = ablate_synthetic::Stream::of(s_, split, index);
    ablate::Example e;
    e.tgt.resize(static_cast<std::size_t>(r.integer(s_.min_len, s_.max_len)));
    e.tgt[0] = static_cast<std::int32_t>(r.integer(3, s_.vocab_size - 1));
    for (std::size_t t = 1; t < e.tgt.size(); ++t) {
      const auto& next = successors_[static_cast<std::size_t>(e.tgt[t - 1] - 3)];
      const float u = r.uniform();
      int k = 0;
      while (k + 1 < kSuccessors && u >= kCumulative[static_cast<std::size_t>(k)]) ++k;
      e.tgt[t] = next[static_cast<std::size_t>(k)];
    }
    return e;
  }

 private:
  static constexpr const char* kName = "task/language_model";
  ablate_synthetic::Settings s_;
  std::vector<std::array<std::int32_t, kSuccessors>> successors_;  // [vocab_size - 3][kSuccessors]
};

ablate::Component* create(const ablate::Options& o) { return new LanguageModel(o); }

ABLATE_PLUGIN("task", "language_model", "1.0.0", "Synthetic LM: sequences from a fixed random Markov chain",
              ablate::options_of(ablate_synthetic::kOptions), create)

}  // namespace task_language_model
