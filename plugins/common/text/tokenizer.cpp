// Word- and character-level tokenization of UTF-8 text (tokenizer.hpp).
#include "tokenizer.hpp"

namespace ablate_text {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }
bool is_ascii_digit(char32_t c) { return in(c, U'0', U'9'); }
// A character of a word: neither whitespace nor punctuation (letters, digits, CJK, symbols).
bool is_word_char(char32_t c) { return c != 0 && !is_space(c) && !is_punctuation(c); }

// Whether punctuation cps[i] stays inside its word: an apostrophe or hyphen between two word
// characters (don't, l'eau, twenty-one), a '.', ',' or ':' between two digits (3.5, 10,000, 12:30).
bool joins_word(const std::vector<char32_t>& cps, std::size_t i) {
  const char32_t c = cps[i];
  const char32_t prev = i > 0 ? cps[i - 1] : 0, next = i + 1 < cps.size() ? cps[i + 1] : 0;
  if (c == U'\'' || c == U'\u2019' || c == U'-' || c == U'\u2010') return is_word_char(prev) && is_word_char(next);
  if (c == U'.' || c == U',' || c == U':') return is_ascii_digit(prev) && is_ascii_digit(next);
  return false;
}

}  // namespace

char32_t next_code_point(std::string_view s, std::size_t& pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the valid range of the second byte (excludes overlong forms and surrogates)
  char32_t c = 0;
  if (in(b0, 0xC2, 0xDF)) {
    len = 2, c = b0 & 0x1Fu;
  } else if (in(b0, 0xE0, 0xEF)) {
    len = 3, c = b0 & 0x0Fu;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (in(b0, 0xF0, 0xF4)) {
    len = 4, c = b0 & 0x07u;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    ++pos;
    return kReplacement;
  }
  if (pos + len > s.size() || byte(pos + 1) < lo || byte(pos + 1) > hi) {
    ++pos;
    return kReplacement;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char b = byte(pos + k);
    if ((b & 0xC0u) != 0x80u) {
      ++pos;
      return kReplacement;
    }
    c = (c << 6) | (b & 0x3Fu);
  }
  pos += len;
  return c;
}

std::size_t find_invalid_utf8(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const std::size_t at = pos;
    // U+FFFD written as its 3 valid bytes is fine; a replacement returned after one byte is not.
    if (next_code_point(s, pos) == kReplacement && pos == at + 1) return at;
  }
  return std::string_view::npos;
}

void append_utf8(std::string& out, char32_t c) {
  if (c > 0x10FFFF || in(c, 0xD800, 0xDFFF)) c = kReplacement;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

char32_t to_lower(char32_t c) {
  if (in(c, U'A', U'Z')) return c + 0x20;
  if (c < 0xC0) return c;
  if (in(c, 0xC0, 0xDE)) return c == 0xD7 ? c : c + 0x20;  // À-Þ, but × (U+00D7)
  if (in(c, 0x100, 0x17F)) {                               // Latin Extended-A: upper/lower pairs
    if (c == 0x130) return U'i';                           // İ
    if (c == 0x178) return 0xFF;                           // Ÿ -> ÿ
    const bool even_upper = in(c, 0x100, 0x137) || in(c, 0x14A, 0x177);
    const bool odd_upper = in(c, 0x139, 0x148) || in(c, 0x179, 0x17E);
    if ((even_upper && c % 2 == 0) || (odd_upper && c % 2 == 1)) return c + 1;
    return c;
  }
  if (c == 0x386) return 0x3AC;                            // Ά
  if (in(c, 0x388, 0x38A)) return c + 0x25;                // Έ Ή Ί
  if (c == 0x38C) return 0x3CC;                            // Ό
  if (in(c, 0x38E, 0x38F)) return c + 0x3F;                // Ύ Ώ
  if (in(c, 0x391, 0x3A9) && c != 0x3A2) return c + 0x20;  // Α-Ω
  if (in(c, 0x400, 0x40F)) return c + 0x50;                // Ѐ-Џ
  if (in(c, 0x410, 0x42F)) return c + 0x20;                // А-Я
  if (c == 0x1E9E) return 0xDF;                            // ẞ -> ß
  return c;
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) append_utf8(out, to_lower(next_code_point(s, pos)));
  return out;
}

bool is_space(char32_t c) {
  return c == U' ' || in(c, 0x09, 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 || in(c, 0x2000, 0x200D) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x2060 || c == 0x3000 || c == 0xFEFF;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return in(c, 0x21, 0x2F) || in(c, 0x3A, 0x40) || in(c, 0x5B, 0x60) || in(c, 0x7B, 0x7E);
  switch (c) {
    case 0xA1:
    case 0xA7:
    case 0xAB:
    case 0xB6:
    case 0xB7:
    case 0xBB:
    case 0xBF:  // ¡ § « ¶ · » ¿
    case 0x37E:
    case 0x387:  // Greek ; and ·
    case 0x3030:
    case 0x303D:
    case 0x30FB:  // 〰 〽 ・
      return true;
    default: break;
  }
  return in(c, 0x2010, 0x2027) ||  // dashes, quotes, bullets, … (General Punctuation)
         in(c, 0x2030, 0x205E) ||  // ‰ ′ ″ ‹ › ※ ‼ ⁇ ...
         in(c, 0x2E00, 0x2E7F) ||  // Supplemental Punctuation
         in(c, 0x3001, 0x3003) ||  // 、 。 〃
         in(c, 0x3008, 0x3011) ||  // 〈 〉 《 》 「 」 『 』 【 】
         in(c, 0x3014, 0x301F) ||  // 〔 〕 〖 〗 〘 〙 〚 〛 〜 〝 〞 〟
         in(c, 0xFF01, 0xFF0F) ||  // ！ ＂ ＃ ... ， － ． ／ (full-width)
         in(c, 0xFF1A, 0xFF20) ||  // ： ； ＜ ＝ ＞ ？ ＠
         in(c, 0xFF3B, 0xFF40) || in(c, 0xFF5B, 0xFF65);
}

std::vector<std::string> Tokenizer::tokenize(std::string_view text) const {
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    const char32_t c = next_code_point(text, pos);
    cps.push_back(o_.lowercase ? to_lower(c) : c);
  }
  std::vector<std::string> out;
  if (o_.level == Level::Char) {
    for (char32_t c : cps)
      if (!is_space(c)) append_utf8(out.emplace_back(), c);
    return out;
  }
  std::string word;
  const auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    if (is_space(c)) {
      flush();
    } else if (o_.split_punctuation && is_punctuation(c) && !joins_word(cps, i)) {
      flush();
      append_utf8(out.emplace_back(), c);
    } else {
      append_utf8(word, c);
    }
  }
  flush();
  return out;
}

std::string Tokenizer::detokenize(const std::vector<std::string>& tokens) const {
  std::string out;
  for (const std::string& t : tokens) {
    if (o_.level == Level::Word && !out.empty()) out += ' ';
    out += t;
  }
  return out;
}

}  // namespace ablate_text
