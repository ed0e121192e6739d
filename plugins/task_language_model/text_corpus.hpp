// Reading a text file for task/language_model's text mode: the whole file as one stream of
// tokens (characters, or words with a line-break token), cut into non-overlapping windows of
// `context` tokens, the examples of the language model. Errors name FILE:LINE.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace task_language_model {

using ablate_text::kLineBreak;
using ablate_text::line_tokens;

struct StreamOptions {
  // Char: every code point is a token, spaces and line breaks included, so the windows
  // concatenate back to the text. Word: each non-blank line is tokenized by ablate_text::Tokenizer
  // (whitespace split, optional punctuation split) and ends with the token kLineBreak; blank lines
  // add nothing.
  ablate_text::TokenizerOptions tokenizer;
  std::int64_t context = 64;      // tokens per window
  std::int64_t max_examples = 0;  // keep the first N windows of the file; 0 = all
};

// The file as token ids into `types` (first-appearance order: not yet the vocabulary, which
// comes from the train windows only), and where its lines start.
struct TokenStream {
  std::vector<std::string> types;         // distinct tokens, by first appearance
  std::vector<std::int32_t> tokens;       // [N]: indices into types; only whole windows are kept
  std::vector<std::int64_t> line_starts;  // [lines]: index of the first token at or after each line (1-based line i at i-1)
  std::int64_t lines_read = 0;            // lines looked at
  std::int64_t total_tokens = 0;          // tokens of the lines read, before cutting into windows
  std::int64_t dropped_tokens = 0;        // tokens read but in no window: the tail shorter than one window, or past max_examples

  std::int64_t windows(std::int64_t context) const { return static_cast<std::int64_t>(tokens.size()) / context; }
  // The 1-based line of the file where token `index` was read.
  std::int64_t line_of_token(std::int64_t index) const;
};

// Reads `in`; `name` (the file's path) prefixes errors: "NAME:LINE: ...". CRLF line ends and a
// leading UTF-8 byte order mark are ignored. Throws ablate::Error for invalid UTF-8 (with the
// line), an empty file, and a file with fewer tokens than one window.
TokenStream read_token_stream(std::istream& in, const std::string& name, const StreamOptions& options);
// Opens `path` (relative to the current directory); throws ablate::Error if it cannot be read.
TokenStream read_token_stream_file(const std::string& path, const StreamOptions& options);

}  // namespace task_language_model
