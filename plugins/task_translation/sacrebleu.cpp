// sacreBLEU's corpus BLEU and chrF on text (sacrebleu.hpp). The 13a tokenizer's four regular
// expressions are applied as byte passes that give the same bytes as Python's re.sub on the
// decoded text: every character they test is ASCII, and a multi-byte character is copied whole.
#include "sacrebleu.hpp"

#include <map>
#include <utility>

#include "text/tokenizer.hpp"

namespace task_translation {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

// The characters 13a pads with spaces: [{-~[-` -&(-+:-@/].
bool padded_symbol(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) || (u >= 0x28 && u <= 0x2B) ||
         (u >= 0x3A && u <= 0x40) || c == '/';
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// Python's str.isspace(): what str.split() splits at.
bool python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code points of s without whitespace (chrF's view of a sentence).
std::u32string without_space(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = ablate_text::next_code_point(s, i);
    if (!python_space(c)) out.push_back(c);
  }
  return out;
}

std::map<std::u32string, std::int64_t> char_ngrams(const std::u32string& s, std::size_t n) {
  std::map<std::u32string, std::int64_t> counts;
  for (std::size_t i = 0; i + n <= s.size(); ++i) ++counts[s.substr(i, n)];
  return counts;
}

// sacrebleu's _UCODE_RANGES of the zh tokenizer, as Python compares one character with them: two
// of its bounds are written as five-digit \u escapes, which Python reads as a character and a
// digit, so those ranges hold (U+2000, U+2A6D] and (U+2F80, U+2FA1] (kept as they are: the same
// scores as the package).
bool chinese(char32_t c) {
  static constexpr std::pair<char32_t, char32_t> kRanges[] = {
      {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A}, {0xFA70, 0xFAD9},
      {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF}, {0x3000, 0x303F}, {0x31C0, 0x31EF},
      {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F}, {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F},
      {0x2600, 0x26FF}, {0x2700, 0x27BF}, {0x3200, 0x32FF}, {0x3300, 0x33FF}};
  for (const auto& [first, last] : kRanges)
    if (c >= first && c <= last) return true;
  return false;
}

// sacrebleu's TokenizerRegexp (the part 13a and zh share): its four substitutions, then a split
// at whitespace.
std::vector<std::string> regexp_tokens(const std::string& s) {
  std::string a;  // ([{-~[-` -&(-+:-@/]) -> " \1 "
  for (char c : s) {
    if (padded_symbol(c)) {
      a += ' ';
      a += c;
      a += ' ';
    } else {
      a += c;
    }
  }
  std::string b;  // ([^0-9])([.,]) -> "\1 \2 "
  for (std::size_t i = 0; i < a.size(); ++i) {
    b += a[i];
    if (i + 1 < a.size() && !digit(a[i]) && (a[i + 1] == '.' || a[i + 1] == ',')) {
      b += ' ';
      b += a[++i];
      b += ' ';
    }
  }
  std::string c;  // ([.,])([^0-9]) -> " \1 \2"
  for (std::size_t i = 0; i < b.size(); ++i) {
    if ((b[i] == '.' || b[i] == ',') && i + 1 < b.size() && !digit(b[i + 1])) {
      c += ' ';
      c += b[i];
      c += ' ';
      c += b[++i];
    } else {
      c += b[i];
    }
  }
  std::string d;  // ([0-9])(-) -> "\1 \2 "
  for (std::size_t i = 0; i < c.size(); ++i) {
    d += c[i];
    if (i + 1 < c.size() && digit(c[i]) && c[i + 1] == '-') {
      d += " - ";
      ++i;
    }
  }
  std::vector<std::string> tokens;
  std::string current;
  for (std::size_t i = 0; i < d.size();) {
    const std::size_t start = i;
    if (python_space(ablate_text::next_code_point(d, i))) {
      if (!current.empty()) tokens.push_back(std::move(current));
      current.clear();
    } else {
      current.append(d, start, i - start);
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

}  // namespace

std::vector<std::string> tokenize_13a(std::string_view line) {
  std::string s(line);
  replace_all(s, "<skipped>", "");
  if (s.find('&') != std::string::npos) {
    replace_all(s, "&quot;", "\"");
    replace_all(s, "&amp;", "&");
    replace_all(s, "&lt;", "<");
    replace_all(s, "&gt;", ">");
  }
  return regexp_tokens(" " + s + " ");
}

std::vector<std::string> tokenize_zh(std::string_view line) {
  std::string s;
  for (std::size_t i = 0; i < line.size();) {
    const std::size_t start = i;
    const bool pad = chinese(ablate_text::next_code_point(line, i));
    if (pad) s += ' ';
    s.append(line, start, i - start);
    if (pad) s += ' ';
  }
  return regexp_tokens(s);
}

void SacreBleu::add(std::string_view hypothesis, std::string_view reference) {
  if (tokenizer_ == BleuTokenizer::Zh)
    stats_.add(tokenize_zh(hypothesis), tokenize_zh(reference));
  else
    stats_.add(tokenize_13a(hypothesis), tokenize_13a(reference));
}

void Chrf::add(std::string_view hypothesis, std::string_view reference) {
  const std::u32string h = without_space(hypothesis), r = without_space(reference);
  for (std::size_t n = 1; n <= static_cast<std::size_t>(kOrder); ++n) {
    const auto hyp = char_ngrams(h, n), ref = char_ngrams(r, n);
    Counts& c = counts_[n - 1];
    std::int64_t hyp_total = 0;
    for (const auto& [gram, count] : hyp) {
      hyp_total += count;
      if (const auto it = ref.find(gram); it != ref.end()) c.matches += std::min(count, it->second);
    }
    if (!ref.empty()) c.hypothesis += hyp_total;  // sacrebleu counts no hypothesis n-grams where the reference has none
    for (const auto& [gram, count] : ref) c.reference += count;
  }
}

double Chrf::score() const {
  double precision = 0.0, recall = 0.0;
  int orders = 0;  // the orders both sides have n-grams of
  for (const Counts& c : counts_) {
    if (c.hypothesis == 0 || c.reference == 0) continue;
    precision += static_cast<double>(c.matches) / static_cast<double>(c.hypothesis);
    recall += static_cast<double>(c.matches) / static_cast<double>(c.reference);
    ++orders;
  }
  if (orders == 0) return 0.0;
  precision /= orders;
  recall /= orders;
  if (precision + recall == 0.0) return 0.0;
  const double b2 = kBeta * kBeta;
  return 100.0 * (1.0 + b2) * precision * recall / (b2 * precision + recall);
}

}  // namespace task_translation
