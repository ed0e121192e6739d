// Beam search for encoder-decoder models: the K best target sequences per source instead of
// greedy decoding's one, what translation papers report. Used by `ablate translate` and by
// `ablate eval --beam K`.
#pragma once

#include <cstdint>
#include <vector>

#include "ablate/task.hpp"
#include "train/experiment.hpp"

namespace ablate::train {

struct BeamOptions {
  std::int64_t beam = 4;        // K: hypotheses kept per source (1: greedy)
  double length_penalty = 1.0;  // alpha: a finished hypothesis scores log p / length^alpha (eos counted)
  std::int64_t max_len = 0;     // content tokens at most; a hypothesis still open then is closed
};

// The widest beam: hypotheses past a thousand change no result worth having and cost memory in
// proportion (K x vocabulary scores per source).
inline constexpr std::int64_t kMaxBeam = 1024;

// Throws UsageError for options no decoding runs with, naming the command-line options: beam
// outside [1, kMaxBeam] (--beam), a length penalty that is not finite (--length-penalty), max_len
// < 0 (--max-len). The one check of `ablate eval --beam`, `ablate translate`
// and beam_search.
void check_beam_options(const BeamOptions& options);

// The best hypothesis (content tokens, no bos/eos) for each source of `sources` (content tokens)
// under the experiment's encoder-decoder model. Each step extends every open hypothesis of a
// source by the 2K most likely tokens (pad and bos never), keeps the K best by summed log
// probability, and moves those ending in eos to the finished list (scored log p / length^alpha);
// a source is done when K hypotheses have finished or max_len is reached (its open ones then
// finish as they are). The best finished hypothesis is returned. Scores come from the
// teacher-forced forward pass (Transformer::logits) over each step's open hypotheses, recomputed
// from the start every step: O(length^2) per source, no key/value cache. With beam 1 the result
// equals Transformer::greedy_decode's. Throws ablate::Error for another architecture, and as
// check_beam_options does.
std::vector<std::vector<std::int32_t>> beam_search(Experiment& experiment, const std::vector<std::vector<std::int32_t>>& sources,
                                                   const BeamOptions& options);

}  // namespace ablate::train
