// The char / word tokenizer with a train-text vocabulary (vocabulary_tokenizer.hpp).
#include "vocabulary_tokenizer.hpp"

#include <algorithm>

#include "ablate/error.hpp"

namespace ablate_text {
namespace {

constexpr std::string_view kHeader = "ablate-vocabulary 1\n";

}  // namespace

std::vector<std::string> line_tokens(std::string_view line, bool line_break, const TokenizerOptions& o) {
  std::vector<std::string> out;
  if (o.level == Level::Char) {
    for (std::size_t pos = 0; pos < line.size();) {
      char32_t c = next_code_point(line, pos);
      if (o.lowercase) c = to_lower(c);
      out.emplace_back();
      append_utf8(out.back(), c);
    }
    if (line_break) out.push_back(kLineBreak);
    return out;
  }
  out = ablate_text::Tokenizer(o).tokenize(line);
  if (line_break && !out.empty()) out.push_back(kLineBreak);
  return out;
}

VocabularyTokenizer::VocabularyTokenizer(const VocabularyTokenizerOptions& options) : o_(options) {
  if (o_.min_freq < 1)
    throw ablate::Error("min_freq must be >= 1, got " + std::to_string(o_.min_freq), "1 keeps every unit of the training text");
}

VocabularyTokenizer::VocabularyTokenizer(const VocabularyTokenizerOptions& options, Vocabulary vocabulary)
    : VocabularyTokenizer(options) {
  vocabulary_ = std::move(vocabulary);
}

std::vector<std::string> VocabularyTokenizer::units(std::string_view text) const {
  if (!o_.keep_whitespace) return ablate_text::Tokenizer(o_.units).tokenize(text);
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string> t = line_tokens(line, end < text.size(), o_.units);
    out.insert(out.end(), t.begin(), t.end());
    start = end + 1;
  }
  return out;
}

void VocabularyTokenizer::train(const std::vector<std::string>& texts) {
  Vocabulary::Builder counts;
  for (const std::string& t : texts) counts.add(units(t));
  vocabulary_ = counts.build(o_.min_freq);
  if (vocabulary_.size() == Vocabulary::kFirstContent)
    throw ablate::Error("min_freq " + std::to_string(o_.min_freq) + " leaves no unit of the " + std::to_string(texts.size()) +
                            " training texts in the vocabulary; expected at least one",
                        "lower min_freq, or train on more text");
}

std::string VocabularyTokenizer::save() const {
  std::string out(kHeader);
  const std::vector<std::string>& tokens = vocabulary_.tokens();
  for (std::size_t i = Vocabulary::kFirstContent; i < tokens.size(); ++i)
    out += std::to_string(tokens[i].size()) + ":" + tokens[i];
  return out;
}

void VocabularyTokenizer::load(const std::string& bytes) {
  const auto bad = [] {
    return ablate::Error("not a vocabulary saved by a char or word tokenizer", "train the tokenizer again");
  };
  if (!bytes.starts_with(kHeader)) throw bad();
  std::vector<std::string> content;
  for (std::size_t pos = kHeader.size(); pos < bytes.size();) {
    const std::size_t colon = bytes.find(':', pos);
    if (colon == std::string::npos || colon == pos || colon - pos > 9) throw bad();
    std::size_t n = 0;
    for (std::size_t i = pos; i < colon; ++i) {
      if (bytes[i] < '0' || bytes[i] > '9') throw bad();
      n = n * 10 + static_cast<std::size_t>(bytes[i] - '0');
    }
    if (n > bytes.size() - colon - 1) throw bad();
    content.push_back(bytes.substr(colon + 1, n));
    pos = colon + 1 + n;
  }
  vocabulary_ = Vocabulary::from_tokens(content);
}

std::vector<std::int32_t> VocabularyTokenizer::encode(std::string_view text, std::int64_t* unknown) const {
  return vocabulary_.encode(units(text), unknown);
}

std::string VocabularyTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  const bool words = o_.units.level == Level::Word;
  std::string out;
  bool after_break = true;  // no space at the start, nor after a line break
  for (const std::string& t : vocabulary_.decode(ids)) {
    const bool line_break = t == kLineBreak;
    if (words && !after_break && !line_break) out += ' ';
    out += t;
    after_break = line_break;
  }
  return out;
}

}  // namespace ablate_text
