// BLEU of task/translation, on token sequences (words, characters or ids):
//
//  - corpus_bleu: the standard corpus-level BLEU (Papineni et al. 2002) as sacrebleu computes it
//    with smooth_method="none" and one reference: clipped n-gram matches and hypothesis n-gram
//    counts summed over the corpus for n = 1..4, precision p_n = matches_n / total_n, geometric
//    mean with uniform weights, brevity penalty BP = exp(1 - r/c) when the hypothesis length c
//    is below the reference length r (both summed over the corpus), else 1. In [0, 100]; 0 when
//    any p_n is 0 (or undefined: no hypothesis n-grams at all).
//
//  - d2l_sentence_bleu: the per-sentence BLEU of "Dive into Deep Learning" (d2l.ai, section
//    "Sequence-to-Sequence Learning", `bleu(pred_seq, label_seq, k)`):
//        score = exp(min(0, 1 - len_label / len_pred)) * prod_{n=1..min(k, len_pred)} p_n ^ (1/2^n)
//    with p_n = clipped matches_n / (len_pred - n + 1). The loop bound min(k, len_pred) is the
//    book's (an older edition looped to k and divided by zero for len_pred = k - 1); an empty
//    prediction scores 0. In [0, 1].
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace task_translation {

// The sufficient statistics of corpus BLEU.
struct BleuStats {
  static constexpr int kMaxOrder = 4;
  std::array<std::int64_t, kMaxOrder> matches{}, totals{};  // [n - 1]: clipped matches, hypothesis n-grams
  std::int64_t hypothesis_length = 0, reference_length = 0;

  // Adds one sentence pair. T: std::string or std::int32_t.
  template <class T>
  void add(const std::vector<T>& hypothesis, const std::vector<T>& reference);
  // None: 0 when an order has no match (sacrebleu's smooth_method="none"). Exp: an order without
  // a match counts as precision 1 / (2^k * total) for its k-th such order (sacrebleu's default,
  // "exp", mteval-v13a's smoothing), so one missing 4-gram match does not zero the score.
  enum class Smoothing { None, Exp };
  // Corpus BLEU in [0, 100] of everything added.
  double score(Smoothing smoothing = Smoothing::None) const;
};

// Corpus BLEU in [0, 100] of hypotheses[i] against references[i] (the same number of each).
template <class T>
double corpus_bleu(const std::vector<std::vector<T>>& hypotheses, const std::vector<std::vector<T>>& references);

// The D2L sentence BLEU in [0, 1] of `prediction` against `label`, k >= 1.
template <class T>
double d2l_sentence_bleu(const std::vector<T>& prediction, const std::vector<T>& label, int k);

}  // namespace task_translation
