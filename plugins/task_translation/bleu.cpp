// Corpus BLEU and the D2L sentence BLEU (bleu.hpp), instantiated for words and token ids.
#include "bleu.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace task_translation {
namespace {

template <class T>
using NGram = std::vector<T>;

// The n-grams of `seq` with their counts.
template <class T>
std::map<NGram<T>, std::int64_t> ngram_counts(const std::vector<T>& seq, std::size_t n) {
  std::map<NGram<T>, std::int64_t> counts;
  for (std::size_t i = 0; i + n <= seq.size(); ++i)
    ++counts[NGram<T>(seq.begin() + static_cast<std::ptrdiff_t>(i), seq.begin() + static_cast<std::ptrdiff_t>(i + n))];
  return counts;
}

// Clipped matches: each hypothesis n-gram counts at most as often as it occurs in the reference.
template <class T>
std::int64_t clipped_matches(const std::vector<T>& hypothesis, const std::vector<T>& reference, std::size_t n) {
  const auto ref = ngram_counts(reference, n);
  std::int64_t matches = 0;
  for (const auto& [gram, count] : ngram_counts(hypothesis, n)) {
    const auto it = ref.find(gram);
    if (it != ref.end()) matches += std::min(count, it->second);
  }
  return matches;
}

}  // namespace

template <class T>
void BleuStats::add(const std::vector<T>& hypothesis, const std::vector<T>& reference) {
  hypothesis_length += static_cast<std::int64_t>(hypothesis.size());
  reference_length += static_cast<std::int64_t>(reference.size());
  for (std::size_t n = 1; n <= static_cast<std::size_t>(kMaxOrder); ++n) {
    if (hypothesis.size() < n) break;
    totals[n - 1] += static_cast<std::int64_t>(hypothesis.size() - n + 1);
    matches[n - 1] += clipped_matches(hypothesis, reference, n);
  }
}

double BleuStats::score(Smoothing smoothing) const {
  if (smoothing == Smoothing::Exp) {  // sacrebleu's compute_bleu with smooth_method "exp", step by step
    if (std::all_of(matches.begin(), matches.end(), [](std::int64_t m) { return m == 0; })) return 0.0;
    const double c = static_cast<double>(hypothesis_length), r = static_cast<double>(reference_length);
    const double brevity = c < r ? (c > 0 ? std::exp(1.0 - r / c) : 0.0) : 1.0;
    std::array<double, kMaxOrder> precision{};  // percent; an order after one without hypothesis n-grams stays 0
    double halving = 1.0;
    for (std::size_t n = 0; n < static_cast<std::size_t>(kMaxOrder) && totals[n] > 0; ++n) {
      if (matches[n] == 0) {
        halving *= 2.0;
        precision[n] = 100.0 / (halving * static_cast<double>(totals[n]));
      } else {
        precision[n] = 100.0 * static_cast<double>(matches[n]) / static_cast<double>(totals[n]);
      }
    }
    double log_sum = 0.0;
    for (double p : precision) log_sum += p > 0.0 ? std::log(p) : -9999999999.0;  // sacrebleu's my_log floor
    return brevity * std::exp(log_sum / kMaxOrder);
  }
  double log_mean = 0.0;
  for (int n = 0; n < kMaxOrder; ++n) {
    if (matches[static_cast<std::size_t>(n)] == 0) return 0.0;  // also when totals is 0
    log_mean += std::log(static_cast<double>(matches[static_cast<std::size_t>(n)]) /
                         static_cast<double>(totals[static_cast<std::size_t>(n)])) /
                kMaxOrder;
  }
  const double c = static_cast<double>(hypothesis_length), r = static_cast<double>(reference_length);
  const double brevity = c < r ? std::exp(1.0 - r / c) : 1.0;  // c > 0 here: some 1-gram matched
  return 100.0 * brevity * std::exp(log_mean);
}

template <class T>
double corpus_bleu(const std::vector<std::vector<T>>& hypotheses, const std::vector<std::vector<T>>& references) {
  if (hypotheses.size() != references.size())
    throw std::invalid_argument("corpus_bleu: " + std::to_string(hypotheses.size()) + " hypotheses for " +
                                std::to_string(references.size()) + " references");
  BleuStats stats;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) stats.add(hypotheses[i], references[i]);
  return stats.score();
}

template <class T>
double d2l_sentence_bleu(const std::vector<T>& prediction, const std::vector<T>& label, int k) {
  if (prediction.empty()) return 0.0;
  const double len_pred = static_cast<double>(prediction.size()), len_label = static_cast<double>(label.size());
  double score = std::exp(std::min(0.0, 1.0 - len_label / len_pred));
  const std::size_t orders = std::min(static_cast<std::size_t>(std::max(k, 0)), prediction.size());
  for (std::size_t n = 1; n <= orders; ++n) {
    const double p = static_cast<double>(clipped_matches(prediction, label, n)) / static_cast<double>(prediction.size() - n + 1);
    score *= std::pow(p, std::pow(0.5, static_cast<double>(n)));
  }
  return score;
}

template void BleuStats::add(const std::vector<std::string>&, const std::vector<std::string>&);
template void BleuStats::add(const std::vector<std::int32_t>&, const std::vector<std::int32_t>&);
template double corpus_bleu(const std::vector<std::vector<std::string>>&, const std::vector<std::vector<std::string>>&);
template double corpus_bleu(const std::vector<std::vector<std::int32_t>>&, const std::vector<std::vector<std::int32_t>>&);
template double d2l_sentence_bleu(const std::vector<std::string>&, const std::vector<std::string>&, int);
template double d2l_sentence_bleu(const std::vector<std::int32_t>&, const std::vector<std::int32_t>&, int);

}  // namespace task_translation
