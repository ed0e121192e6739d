// Opening and reading the text tasks' files (text_file.hpp).
#include "text_file.hpp"

#include <filesystem>
#include <iterator>

#include "ablate/error.hpp"

namespace ablate_text {

std::ifstream open_text_file(const std::string& path, const std::string& expected) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  // A device, FIFO or socket (task.file: /dev/zero) would be read without end: files only.
  if (in && !std::filesystem::is_regular_file(path, ec))
    throw ablate::Error("'" + path + "' is not a regular file (a device, FIFO, socket or directory); expected " + expected,
                        "check the task's file option");
  if (!in) {
    const std::string cwd = std::filesystem::current_path(ec).string();
    throw ablate::Error(
        "cannot read '" + path + "'; expected " + expected +
            (std::filesystem::path(path).is_relative() ? " (relative paths are relative to the current directory, " + cwd + ")"
                                                       : ""),
        "check the task's file option");
  }
  return in;
}

TextLines::TextLines(std::istream& in)
    : data_((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), rest_(data_) {
  if (rest_.substr(0, 3) == "\xEF\xBB\xBF") rest_.remove_prefix(3);  // UTF-8 byte order mark
}

bool TextLines::next(std::string_view& line) {
  if (rest_.empty()) return false;
  const std::size_t eol = rest_.find('\n');
  ended_ = eol != std::string_view::npos;
  line = rest_.substr(0, eol);
  rest_.remove_prefix(ended_ ? eol + 1 : rest_.size());
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++number_;
  return true;
}

void check_line(std::string_view line, const std::string& name, std::int64_t number, std::size_t max_bytes) {
  const std::string where = name + ":" + std::to_string(number) + ": ";
  if (max_bytes > 0 && line.size() > max_bytes)
    throw ablate::Error(where + "a line of " + std::to_string(line.size()) + " bytes; expected at most " +
                            std::to_string(max_bytes) + " (the text tasks' line limit: one example per line)",
                        "check the file's line breaks; a file without them, or binary data, is not a corpus (a real "
                        "example that long: split it, since long_examples acts on tokens, after this check)");
  if (const std::size_t bad = find_invalid_utf8(line); bad != std::string_view::npos)
    throw ablate::Error(where + "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line; expected UTF-8 text",
                        "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)");
  if (const std::size_t nul = line.find('\0'); nul != std::string_view::npos)
    throw ablate::Error(where + "a NUL byte at byte " + std::to_string(nul + 1) + " of the line; expected text",
                        "the file holds binary data; pass a text file");
}

TokenizerOptions tokenizer_options(const ablate::Options& o, const char* level_option) {
  TokenizerOptions t;
  t.level = o.get_string(level_option) == "char" ? Level::Char : Level::Word;
  t.lowercase = o.get_bool("lowercase");
  t.split_punctuation = o.get_bool("split_punctuation");
  return t;
}

}  // namespace ablate_text
