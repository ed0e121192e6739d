// The scores MT papers report, on text: sacreBLEU's default corpus BLEU (the 13a tokenizer of
// mteval-v13a, exponential smoothing) and chrF (character 6-grams, beta 2), computed as the
// sacrebleu package (2.x) computes them, so a detokenized hypothesis scored against the reference
// as written gives the number a paper's table would. Tests compare with the Python package.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bleu.hpp"

namespace task_translation {

// What the two scores are, in sacrebleu's signature notation (recorded in docs/training.md and
// fixed per version of this plugin, which every run records); BLEU's tok: is 13a or zh.
inline constexpr const char* kSacreBleuSignature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0";
inline constexpr const char* kChrfSignature = "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0";

// A line as sacreBLEU's 13a tokenizer splits it: HTML entities &quot; &amp; &lt; &gt; decoded,
// symbols and punctuation split off (a period or comma only where it is not inside a number, a
// dash only after a digit), then split at whitespace (Unicode's, as Python's str.split).
std::vector<std::string> tokenize_13a(std::string_view line);
// A line as sacreBLEU's zh tokenizer splits it (what papers use for Chinese targets): every
// character of its CJK ranges a token of its own, the rest as 13a's punctuation rules split it
// (without 13a's HTML entities).
std::vector<std::string> tokenize_zh(std::string_view line);

enum class BleuTokenizer { T13a, Zh };

// Corpus BLEU as sacrebleu.corpus_bleu(hypotheses, [references], tokenize=13a|zh) with its other
// defaults: exponential smoothing of n-gram orders without a match (NIST), in [0, 100].
class SacreBleu {
 public:
  explicit SacreBleu(BleuTokenizer tokenizer = BleuTokenizer::T13a) : tokenizer_(tokenizer) {}
  void add(std::string_view hypothesis, std::string_view reference);
  double score() const { return stats_.score(BleuStats::Smoothing::Exp); }

 private:
  BleuTokenizer tokenizer_;
  BleuStats stats_;
};

// chrF as sacrebleu.corpus_chrf(hypotheses, [references]) with its defaults: character n-grams
// of orders 1..6 over the text without whitespace, counts summed over the corpus, the F-score
// (beta 2) of the mean precision and recall over the orders both sides have, in [0, 100].
class Chrf {
 public:
  static constexpr int kOrder = 6;
  static constexpr double kBeta = 2.0;
  void add(std::string_view hypothesis, std::string_view reference);
  double score() const;

 private:
  struct Counts {
    std::int64_t hypothesis = 0, reference = 0, matches = 0;
  };
  std::array<Counts, kOrder> counts_{};  // [n - 1]
};

}  // namespace task_translation
