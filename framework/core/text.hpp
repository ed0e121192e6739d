// Small text helpers shared by the CLI and error messages: "did you mean" suggestions,
// joining lists, JSON string escaping for machine-readable output, round-trip number text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ablate {

// Levenshtein distance between two strings (byte-wise).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

std::string join(const std::vector<std::string>& items, std::string_view separator);

// The byte offset of the first byte that does not start a well-formed UTF-8 sequence (overlong
// forms, surrogates and code points above U+10FFFF included), or npos. (The text plugins have
// their own decoder in plugins/common/text: plugins see only the public headers.)
std::size_t first_invalid_utf8(std::string_view s);

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

// The shortest text that reads back as the same double ("0.1", "1e-05"); "nan", "inf", "-inf".
std::string number_text(double v);

}  // namespace ablate
