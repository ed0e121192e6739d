// The options every text task (translation, classification, language_model over a file) reads
// alike: how much of its file it keeps, the vocabulary's cut-off and the train / eval / test
// split. Each task declares them in its own option table (its defaults, its wording); they are
// read and checked here, so a mistake gets the same message from every task.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/options.hpp"
#include "splits.hpp"

namespace ablate_text {

struct CorpusSettings {
  std::int64_t max_examples = 0;  // keep the first N examples of the file (pairs, texts, windows); 0 = all
  std::int64_t min_freq = 1;      // train-split count a token needs to enter a vocabulary (>= 1)
  double valid_fraction = 0.05;   // the eval split's share of the examples (splits.hpp)
  double test_fraction = 0.05;    // the held-out test split's share
  std::uint64_t split_seed = 1;   // the shuffle that assigns examples to the splits
  bool contiguous = false;        // train | eval | test in file order, no shuffle (a language model's `split`)
};

// Reads max_examples, min_freq, valid_fraction, test_fraction and split_seed from `o`. Throws
// ablate::Error "<plugin>: min_freq must be >= 1, got ..." (or max_examples >= 0; the hint says
// 0 keeps every `unit`). The fractions are checked by split().
CorpusSettings corpus_settings(const ablate::Options& o, std::string_view plugin, std::string_view unit);

// The `long_examples` rule of the text tasks for examples longer than `max_len` tokens.
enum class LongExamples { Filter, Truncate };

// Applies the rule to one example's token sequences (a pair's two sides, or one text): false
// when one is longer than max_len and the rule filters (the caller drops the example; counted in
// dropped_long); else each longer one is cut to max_len (the example counted once in truncated).
template <class... Sequence>
bool fit_max_len(std::int64_t max_len, LongExamples rule, std::int64_t& dropped_long, std::int64_t& truncated,
                 Sequence&... seqs) {
  const auto n = static_cast<std::size_t>(max_len);
  if (((seqs.size() <= n) && ...)) return true;
  if (rule == LongExamples::Filter) {
    ++dropped_long;
    return false;
  }
  ++truncated;
  ((seqs.size() > n ? seqs.resize(n) : void()), ...);
  return true;
}

// Why examples of a file were left out (ablate::ReadReport::dropped_why): "5 with a side longer
// than max_len 20 tokens (long_examples: filter; truncate would keep them, cut to 20), 2 with a
// side empty after tokenization"; `what` names the sequence ("a side", "the text"), `empty_what`
// the empty case. "" when nothing was dropped.
std::string dropped_text(std::int64_t too_long, const std::string& what, std::int64_t max_len, std::int64_t empty,
                         const std::string& empty_what);

// Whether option `info` holds a value other than its declared default (an explicit default is not
// a setting): how a task finds options that do not apply in the mode it runs in.
bool differs_from_default(const ablate::Options& o, const ablate::OptionInfo& info);

// With task.tokenizer a text task's own unit options do nothing: throws ablate::Error
// "<plugin>: a, b: not with task.tokenizer (<why>)" naming each option of `names` (declared in
// `declared`) that holds anything but its default.
void refuse_with_tokenizer(const ablate::Options& o, const ablate::OptionList& declared, const std::vector<std::string>& names,
                           const std::string& plugin, const std::string& why);

// The split of n examples under `s` (split_indices, or contiguous_split_indices).
SplitIndices split(const CorpusSettings& s, std::int64_t n);

}  // namespace ablate_text
