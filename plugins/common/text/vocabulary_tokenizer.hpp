// A tokenizer (ablate/tokenizer.hpp) of fixed char or word units and a vocabulary counted from the
// training text: what the text tasks do with their own `tokens` options, and what the `char` and
// `word` tokenizer plugins are. Also the one place a line of text becomes a language model's
// stream tokens (line_tokens), line breaks included.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/tokenizer.hpp"
#include "tokenizer.hpp"
#include "vocabulary.hpp"

namespace ablate_text {

// The token a line break becomes (at word level; at char level it is that character).
inline const std::string kLineBreak = "\n";

// The tokens of one line (no line break in it) in a stream of lines: each code point (lower-cased
// if asked, spaces included) at char level, Tokenizer's words at word level; then kLineBreak when
// `line_break` (at word level only after a line with words).
std::vector<std::string> line_tokens(std::string_view line, bool line_break, const TokenizerOptions& options);

struct VocabularyTokenizerOptions {
  TokenizerOptions units;
  // true: the text is a stream of lines (line_tokens): a line break is a token, and at char level
  // so is every space (the text decodes back as written). false: whitespace, line breaks included,
  // only separates units (Tokenizer::tokenize: sentences; at char level Chinese, Japanese).
  bool keep_whitespace = true;
  std::int64_t min_freq = 1;  // train-text count a unit needs to enter the vocabulary; rarer ones are <unk>
};

class VocabularyTokenizer final : public ablate::Tokenizer {
 public:
  explicit VocabularyTokenizer(const VocabularyTokenizerOptions& options);
  // Already trained: `vocabulary` (counted elsewhere from the same units).
  VocabularyTokenizer(const VocabularyTokenizerOptions& options, Vocabulary vocabulary);

  // Counts the units of `texts`; Vocabulary::Builder orders them (most frequent first).
  void train(const std::vector<std::string>& texts) override;
  // "ablate-vocabulary 1\n", then each content token as LENGTH:BYTES.
  std::string save() const override;
  void load(const std::string& bytes) override;
  std::int64_t vocab_size() const override { return vocabulary_.size(); }
  std::vector<std::int32_t> encode(std::string_view text, std::int64_t* unknown) const override;
  // Char level: the units concatenated; word level: joined by single spaces, none around a line break.
  std::string decode(const std::vector<std::int32_t>& ids) const override;

  // The units of `text`, lines apart (encode looks each up).
  std::vector<std::string> units(std::string_view text) const;
  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  VocabularyTokenizerOptions o_;
  Vocabulary vocabulary_;
};

}  // namespace ablate_text
