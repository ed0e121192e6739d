// task/language_model's synthetic mode (markov_chain.hpp): the transition table and the examples.
#include "markov_chain.hpp"

namespace task_language_model {

MarkovLanguageModel::MarkovLanguageModel(const ablate::Options& o) : s_(o, kName) {
  // The transition table: a pure function of the seed (its own Philox stream, step 0).
  ablate::synthetic::Stream r(s_.seed, 0, ablate::synthetic::kTableStream);
  successors_.resize(static_cast<std::size_t>(s_.content_tokens()));
  for (auto& next : successors_)
    for (auto& t : next) t = static_cast<std::int32_t>(r.integer(3, s_.vocab_size - 1));
}

ablate::Example MarkovLanguageModel::example(ablate::Split split, std::int64_t index) const {
  s_.check_index(split, index, kName);
  auto r = ablate::synthetic::Stream::of(s_, split, index);
  return walk(r, 0);
}

ablate::Example MarkovLanguageModel::example_at_length(ablate::Split, std::int64_t index, std::int64_t length) const {
  auto r = ablate::synthetic::Stream::at_length(s_, index, length);
  return walk(r, length);
}

ablate::Example MarkovLanguageModel::walk(ablate::synthetic::Stream& r, std::int64_t length) const {
  ablate::Example e;
  e.tgt.resize(static_cast<std::size_t>(length > 0 ? length : r.integer(s_.min_len, s_.max_len)));
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

}  // namespace task_language_model
