// Reading a text file into a token stream for task/language_model's text mode (text_corpus.hpp).
#include "text_corpus.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "ablate/error.hpp"
#include "text/text_file.hpp"

namespace task_language_model {
namespace {

class Interner {
 public:
  explicit Interner(TokenStream& s) : s_(s) {}
  void add(const std::string& token) {
    auto [it, inserted] = ids_.try_emplace(token, static_cast<std::int32_t>(s_.types.size()));
    if (inserted) s_.types.push_back(token);
    s_.tokens.push_back(it->second);
  }

 private:
  TokenStream& s_;
  std::unordered_map<std::string, std::int32_t> ids_;
};

bool has_text(std::string_view data) {
  for (std::size_t pos = 0; pos < data.size();)
    if (!ablate_text::is_space(ablate_text::next_code_point(data, pos))) return true;
  return false;
}

const char* level_name(ablate_text::Level l) { return l == ablate_text::Level::Char ? "char" : "word"; }

}  // namespace

std::int64_t TokenStream::line_of_token(std::int64_t index) const {
  // The last line that starts at or before the token (blank lines share their successor's start).
  return static_cast<std::int64_t>(std::upper_bound(line_starts.begin(), line_starts.end(), index) - line_starts.begin());
}

TokenStream read_token_stream(std::istream& in, const std::string& name, const StreamOptions& o) {
  ablate_text::TextLines lines(in);
  if (!has_text(lines.rest()))
    throw ablate::Error(name + ": " + (lines.rest().empty() ? "the file is empty" : "the file has only whitespace") +
                            "; expected UTF-8 text to train the language model on",
                        "check the task's file option");
  const bool chars = o.tokenizer.level == ablate_text::Level::Char;
  // Reading stops once the windows max_examples asks for are complete.
  const std::size_t wanted = o.max_examples > 0 ? static_cast<std::size_t>(o.max_examples * o.context) : 0;
  TokenStream s;
  Interner intern(s);
  for (std::string_view line; (wanted == 0 || s.tokens.size() < wanted) && lines.next(line);) {
    const bool ended = lines.ended();  // the last line may lack its line break
    s.lines_read = lines.number();
    s.line_starts.push_back(static_cast<std::int64_t>(s.tokens.size()));
    ablate_text::check_line(line, name, s.lines_read);
    // A line break token after each line that ended with one (char level), after every
    // non-blank line (word level: the file's last line too).
    for (const std::string& t : line_tokens(line, chars ? ended : true, o.tokenizer)) intern.add(t);
  }
  s.total_tokens = static_cast<std::int64_t>(s.tokens.size());
  if (s.total_tokens < o.context)
    throw ablate::Error(name + ": " + std::to_string(s.total_tokens) + " " + level_name(o.tokenizer.level) +
                            " tokens are fewer than one window of context " + std::to_string(o.context) + "; expected at least " +
                            std::to_string(o.context) + " tokens (3 windows or more, to split them)",
                        "lower the task's context option, or use a longer file");
  std::size_t keep = s.tokens.size() - s.tokens.size() % static_cast<std::size_t>(o.context);
  if (wanted > 0) keep = std::min(keep, wanted);
  s.dropped_tokens = s.total_tokens - static_cast<std::int64_t>(keep);
  s.tokens.resize(keep);
  s.tokens.shrink_to_fit();
  return s;
}

TokenStream read_token_stream_file(const std::string& path, const StreamOptions& options) {
  std::ifstream in = ablate_text::open_text_file(path, "a UTF-8 text file");
  return read_token_stream(in, path, options);
}

}  // namespace task_language_model
