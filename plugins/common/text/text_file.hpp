// Reading the text files of the text tasks (translation, classification, language_model over a
// file): opening with an error that says what was expected, and line-by-line reading of UTF-8
// with the byte order mark, CRLF ends and invalid bytes handled the same way in every task.
#pragma once

#include <cstdint>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

#include "ablate/options.hpp"
#include "tokenizer.hpp"

namespace ablate_text {

// Opens `path` (relative to the current directory) for reading. Throws ablate::Error
// "cannot read 'PATH'; expected EXPECTED" (naming the current directory for a relative path) if
// it cannot be read, and "'PATH' is not a regular file" for a directory, device, FIFO or socket. `expected`: "a UTF-8 text file", "a TSV file of ... lines".
std::ifstream open_text_file(const std::string& path, const std::string& expected);

// The lines of a whole text read from `in`: a leading UTF-8 byte order mark is skipped, each
// line comes without its '\n' and a trailing '\r'.
class TextLines {
 public:
  explicit TextLines(std::istream& in);
  // The next line; false when none is left.
  bool next(std::string_view& line);
  // The 1-based number of the line next() returned last (0 before the first).
  std::int64_t number() const { return number_; }
  // Whether that line ended with a line break (the file's last line may not).
  bool ended() const { return ended_; }
  // The text not read yet (after the byte order mark, before the first next(): all of it).
  std::string_view rest() const { return rest_; }

 private:
  std::string data_;
  std::string_view rest_;
  std::int64_t number_ = 0;
  bool ended_ = false;
};

// The longest line a task reading one example per line accepts (translation, classification): a
// longer one is not a sentence but a file without line breaks, or binary data.
inline constexpr std::size_t kMaxExampleLineBytes = std::size_t{1} << 16;

// Throws ablate::Error "NAME:LINE: ..." (with a hint) if `line` is not valid UTF-8, holds a NUL
// byte (binary data, not text), or is longer than `max_bytes` (0: no limit).
void check_line(std::string_view line, const std::string& name, std::int64_t number, std::size_t max_bytes = 0);

// A tokenizer's options from a text task's options: the level from `level_option` ("tokens",
// "source_tokens": word|char), `lowercase` and `split_punctuation`.
TokenizerOptions tokenizer_options(const ablate::Options& o, const char* level_option);

}  // namespace ablate_text
