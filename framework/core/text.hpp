// Small text helpers shared by the CLI and error messages: "did you mean" suggestions,
// joining lists, JSON string escaping for machine-readable output, round-trip number text,
// UTF-8 checking, and the FNV-1a hash behind checksums and ids.
#pragma once

#include <cstdint>
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

// FNV-1a 64 of `bytes` continuing from `hash` (start from kFnv1a64Basis): checkpoint checksums,
// run ids, plugin code hashes.
inline constexpr std::uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;
std::uint64_t fnv1a64(const void* bytes, std::size_t n, std::uint64_t hash = kFnv1a64Basis);
// A 64-bit value as 16 lowercase hex digits.
std::string hex16(std::uint64_t v);

// The byte offset of the first byte that does not start a well-formed UTF-8 sequence (overlong
// forms, surrogates and code points above U+10FFFF included), or npos. (The text plugins have
// their own decoder in plugins/common/text: plugins see only the public headers.)
std::size_t first_invalid_utf8(std::string_view s);
// `s` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD: text
// read from a damaged file stays printable and keeps the JSON and Markdown Ablate writes valid.
std::string valid_utf8(std::string_view s);

// `s` as a JSON string literal, quotes included (invalid UTF-8 as by valid_utf8).
std::string json_quote(std::string_view s);

// `s` with & < > " as character references: text for XML and HTML content and attributes.
std::string xml_escape(std::string_view s);

// The shortest text that reads back as the same double ("0.1", "1e-05"); "nan", "inf", "-inf".
std::string number_text(double v);
// `v` as printf writes it with one numeric conversion (`format`: "%.4g", "%.1f").
std::string printf_text(double v, const char* format);

// Token ids as text: "3 4 5" (space-separated), what commands print for a task without text.
std::string ids_text(const std::vector<std::int32_t>& ids);

// `s` cut to at most `width` bytes (width >= 3), its end replaced by "..." when it is longer; a
// UTF-8 character is never split.
std::string fit_width(std::string_view s, std::size_t width);

}  // namespace ablate
