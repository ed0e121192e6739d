// Tokenization of text for the text tasks (translation, language_model over a file,
// classification): word level (whitespace split, optionally with punctuation characters as their
// own tokens) or character level (one token per Unicode code point, whitespace dropped: for
// Chinese, Japanese). UTF-8 throughout: a multi-byte character is never split; invalid bytes
// become U+FFFD. Lower-casing covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
// capitals (a small table, no locale).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ablate_text {

// Decodes the code point at `pos` of `s` and advances `pos` past it. A malformed or truncated
// sequence (or an overlong form, a surrogate, a value above U+10FFFF) decodes as U+FFFD and
// advances one byte, so decoding never loops or reads past the end.
char32_t next_code_point(std::string_view s, std::size_t& pos);
// The byte offset of the first invalid UTF-8 sequence of `s`, or npos if it is all valid.
std::size_t find_invalid_utf8(std::string_view s);
// Appends the UTF-8 encoding of `c` (U+FFFD for a surrogate or a value above U+10FFFF).
void append_utf8(std::string& out, char32_t c);

// The lower-case letter of a capital (A-Z, À-Þ but ×, Latin Extended-A pairs, Ÿ, Greek Α-Ω,
// Cyrillic А-Я and Ѐ-Џ); every other code point unchanged.
char32_t to_lower(char32_t c);
// Lower-cases every code point of a UTF-8 string (see to_lower).
std::string to_lower(std::string_view s);
// Whitespace: ASCII space and controls \t \n \v \f \r, U+0085, no-break spaces, the U+2000
// spaces, zero-width space and joiners, U+2028/2029, U+3000 (ideographic), U+FEFF (BOM).
bool is_space(char32_t c);
// Punctuation: ASCII punctuation, Latin-1 punctuation (¡ « » ¿ · § ¶ ...), General and
// Supplemental Punctuation (– — ‘ ’ “ ” … ‹ ›), CJK punctuation (、 。 「 」 ...), full-width
// forms (！ ， ？ ： ； ...).
bool is_punctuation(char32_t c);

enum class Level { Word, Char };

struct TokenizerOptions {
  Level level = Level::Word;
  bool lowercase = true;
  // Word level: each punctuation character becomes its own token ("Hello, world!" -> hello , world !),
  // except an apostrophe or hyphen between two letters or digits (don't, twenty-one) and a '.', ','
  // or ':' between two digits (3.5, 10,000, 12:30), which stay inside their word.
  bool split_punctuation = true;
};

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerOptions options = {}) : o_(options) {}
  const TokenizerOptions& options() const { return o_; }
  std::vector<std::string> tokenize(std::string_view text) const;
  // Word level: tokens joined with single spaces; char level: concatenated.
  std::string detokenize(const std::vector<std::string>& tokens) const;

 private:
  TokenizerOptions o_;
};

}  // namespace ablate_text
