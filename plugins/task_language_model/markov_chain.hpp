// task/language_model's synthetic mode (no `file`): next-token prediction on sequences from a
// fixed random first-order Markov chain over the content tokens. Each token has 3 likely
// successors (p = 0.6, 0.25, 0.15) drawn from the seed, so the data is learnable (low entropy) but not trivial.
#pragma once

#include <array>
#include <vector>

#include "plugin_name.hpp"
#include "ablate/synthetic.hpp"

namespace task_language_model {

class MarkovLanguageModel final : public ablate::Task {
 public:
  static constexpr const char* kName = kPluginName;
  static constexpr int kSuccessors = 3;
  static constexpr std::array<float, kSuccessors> kCumulative = {0.6f, 0.85f, 1.0f};

  // Reads the synthetic options (ablate::synthetic::kOptions) and draws the transition table.
  explicit MarkovLanguageModel(const ablate::Options& o);

  ablate::TaskInfo info() const override { return {ablate::TaskType::LanguageModel, s_.vocab_size, 0, s_.max_len}; }
  std::int64_t size(ablate::Split split) const override { return s_.size(split); }
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  std::int64_t size_at_length(ablate::Split split, std::int64_t length) const override {
    return s_.size_at_length(split, length);
  }
  ablate::Example example_at_length(ablate::Split split, std::int64_t index, std::int64_t length) const override;

 private:
  // A walk along the chain of `length` tokens (0: of a length drawn from [min_len, max_len]).
  ablate::Example walk(ablate::synthetic::Stream& r, std::int64_t length) const;

  ablate::synthetic::Settings s_;
  std::vector<std::array<std::int32_t, kSuccessors>> successors_;  // [vocab_size - 3][kSuccessors]
};

}  // namespace task_language_model
