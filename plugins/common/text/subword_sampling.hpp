// Subword sampling in a text task (Tokenizer::samples): a training example's text segmented anew
// for each read (Task::train_example's draw), each side under its own key, and a sample that would
// break the task's length limit replaced by the example's deterministic ids.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "ablate/philox.hpp"
#include "ablate/tokenizer.hpp"

namespace ablate_text {

// The key of `side` (0 source / text, 1 target) of training example `index` under the host's `draw`.
inline std::uint64_t sample_key(std::uint64_t draw, std::int64_t index, std::uint32_t side) {
  const auto i = static_cast<std::uint64_t>(index);
  const ablate::Philox4 r = ablate::philox4x32_10(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), side, 0,
                                                  static_cast<std::uint32_t>(draw), static_cast<std::uint32_t>(draw >> 32));
  return static_cast<std::uint64_t>(r.v[0]) << 32 | r.v[1];
}

// `ids` (the deterministic ids of `text`) replaced by a sampled segmentation of `text` under
// `key`, unless that is empty or longer than `max_len` content tokens (max_len 0: no limit).
inline void resample(const ablate::Tokenizer& tokenizer, std::string_view text, std::uint64_t key, std::int64_t max_len,
                     std::vector<std::int32_t>& ids) {
  std::vector<std::int32_t> sampled = tokenizer.encode_sampled(text, key);
  if (!sampled.empty() && (max_len <= 0 || static_cast<std::int64_t>(sampled.size()) <= max_len)) ids = std::move(sampled);
}

}  // namespace ablate_text
