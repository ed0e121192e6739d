// Tests for framework/core/text: edit distance, "did you mean" suggestions, JSON quoting.
#include "core/text.hpp"

#include <gtest/gtest.h>

namespace ablate {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("plugins", "plugns"), 1u);
}

TEST(ClosestMatch, SuggestsNearTyposAndPrefixesOnly) {
  const std::vector<std::string> names = {"pre_norm", "post_norm", "sandwich"};
  EXPECT_EQ(closest_match("post_nrom", names), "post_norm");
  EXPECT_EQ(closest_match("prenorm", names), "pre_norm");
  EXPECT_EQ(closest_match("sand", names), "sandwich");
  EXPECT_EQ(closest_match("transformer", names), std::nullopt);
  EXPECT_EQ(closest_match("x", {}), std::nullopt);
}

TEST(FitWidth, CutsLongTextWithAnEllipsisNeverInsideACharacter) {
  EXPECT_EQ(fit_width("short", 10), "short");
  EXPECT_EQ(fit_width("exactly10!", 10), "exactly10!");
  EXPECT_EQ(fit_width("a longer line", 10), "a longe...");
  EXPECT_EQ(fit_width("ab\xc3\xa9"
                      "cdefgh",
                      6),
            "ab...")
      << "the 2-byte e-acute is not split";
}

TEST(JsonQuote, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("line\nnext\ttab"), "\"line\\nnext\\ttab\"");
  EXPECT_EQ(json_quote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(json_quote("é"), "\"é\"");  // UTF-8 passes through
  EXPECT_EQ(json_quote("sel\x90"
                       "f"),
            "\"sel\uFFFDf\"");  // a damaged byte: still valid JSON
}

// A damaged file's bytes in a message: every byte that starts no well-formed sequence becomes
// U+FFFD, well-formed text (multi-byte included) is kept as it is.
TEST(ValidUtf8, ReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(valid_utf8("plain é ∑ 𝄞"), "plain é ∑ 𝄞");
  EXPECT_EQ(valid_utf8("sel\x90"), "sel\uFFFD");
  EXPECT_EQ(valid_utf8("\xC3"), "\uFFFD");  // a sequence cut short
  EXPECT_EQ(valid_utf8("a\xC0\xAF"
                       "b"),
            "a\uFFFD\uFFFDb");                                    // an overlong '/': both bytes
  EXPECT_EQ(valid_utf8("\xED\xA0\x80!"), "\uFFFD\uFFFD\uFFFD!");  // a surrogate
  EXPECT_EQ(first_invalid_utf8(valid_utf8(std::string("\xFF\xFE\x00z", 4))), std::string_view::npos);
}

TEST(Join, SeparatesItems) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, "|"), "a|b|c");
}

}  // namespace
}  // namespace ablate
