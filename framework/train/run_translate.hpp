// `ablate translate`: a trained encoder-decoder model translates sentences people give it (a
// file, or stdin), greedily or with beam search: what `marian-decoder` and `fairseq-interactive` do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/beam_search.hpp"
#include "train/run_eval.hpp"

namespace ablate::train {

struct Translated {
  std::string text;
  std::int64_t unknown = 0;  // source tokens the run's source vocabulary did not have (<unk>)
};

// Translates every line of `sources` (text, encoded as the task encodes its source side; for a
// task without text, content token ids separated by spaces, written back the same way) with
// `run`'s model, in batches of the run's train.batch_size: greedy decoding for beam 1
// (Transformer::greedy_decode), beam_search otherwise; up to options.max_len target tokens (0: the
// task's longest target). Throws UsageError, before translating anything, for a model that is not
// an encoder-decoder, no lines, a blank line, a word that is not a token id (a task without
// text), beam < 1, or a line longer than the encoder's positions allow.
std::vector<Translated> translate_text(TrainedRun& run, const std::vector<std::string>& sources, const BeamOptions& options);

}  // namespace ablate::train
