// task/language_model's text mode (text_task.hpp): loading, splits, vocabulary, examples, text.
#include "text_task.hpp"

#include <algorithm>
#include <string_view>

#include "ablate/error.hpp"
#include "text/splits.hpp"

namespace task_language_model {

using ablate_text::Vocabulary;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& hint = {}) {
  throw ablate::Error(std::string(TextLanguageModel::kName) + ": " + what, hint);
}

}  // namespace

TextLanguageModel::TextLanguageModel(const TextSettings& s) : settings_(s) {
  const std::int64_t context = s.stream.context;
  if (context < 1) fail("context must be >= 1, got " + std::to_string(context), "it is the tokens per example (window)");

  TokenStream stream;
  try {
    stream = read_token_stream_file(s.file, s.stream);
  } catch (const ablate::Error& e) {
    fail(e.what(), e.hint());
  }
  const std::int64_t n = stream.windows(context);
  ablate_text::SplitIndices split;
  try {
    split = ablate_text::split(s.corpus, n);
  } catch (const ablate::Error& e) {
    fail(s.file + ": cut into windows of " + std::to_string(context) + " tokens: " + e.what(),
         "lower valid_fraction / test_fraction or context, or use a longer file");
  }

  // The vocabulary counts the train windows only: eval and test text never shapes it.
  const auto window_tokens = [&](std::int64_t w, std::vector<std::string>& out) {
    out.clear();
    for (std::int64_t i = w * context; i < (w + 1) * context; ++i)
      out.push_back(stream.types[static_cast<std::size_t>(stream.tokens[static_cast<std::size_t>(i)])]);
  };
  Vocabulary::Builder counts;
  std::vector<std::string> window;
  for (std::int64_t w : split.train) {
    window_tokens(w, window);
    counts.add(window);
  }
  vocab_ = counts.build(s.corpus.min_freq);

  ids_ = vocabulary_ids(stream);
  window_lines_.resize(static_cast<std::size_t>(n));
  for (std::int64_t w = 0; w < n; ++w) window_lines_[static_cast<std::size_t>(w)] = stream.line_of_token(w * context);
  windows_[ablate::Split::Train] = std::move(split.train);
  windows_[ablate::Split::Eval] = std::move(split.eval);
  windows_[ablate::Split::Test] = std::move(split.test);

  stats_.lines_read = stream.lines_read;
  stats_.total_tokens = stream.total_tokens;
  stats_.dropped_tokens = stream.dropped_tokens;
  stats_.windows = n;
  for (std::int64_t w : windows_[ablate::Split::Train])
    for (std::int64_t i = w * context; i < (w + 1) * context; ++i) {
      ++stats_.train_tokens;
      stats_.train_unk += ids_[static_cast<std::size_t>(i)] == Vocabulary::kUnk ? 1 : 0;
    }
}

ablate::TaskInfo TextLanguageModel::info() const {
  return {ablate::TaskType::LanguageModel, vocab_.size(), 0, settings_.stream.context};
}

std::int64_t TextLanguageModel::size(ablate::Split split) const { return windows_.size(split); }

ablate::Example TextLanguageModel::example(ablate::Split split, std::int64_t index) const {
  const std::int64_t context = settings_.stream.context;
  const auto first = ids_.begin() + static_cast<std::ptrdiff_t>(window_of(split, index) * context);
  ablate::Example e;
  e.tgt.assign(first, first + static_cast<std::ptrdiff_t>(context));
  return e;
}

std::int64_t TextLanguageModel::size_at_length(ablate::Split split, std::int64_t length) const {
  const std::int64_t context = settings_.stream.context;
  if (length < 1) return 0;
  if (!settings_.corpus.contiguous) return length == context ? size(split) : 0;
  return size(split) * context / length;
}

ablate::Example TextLanguageModel::example_at_length(ablate::Split split, std::int64_t index, std::int64_t length) const {
  const std::int64_t n = size_at_length(split, length);
  if (index < 0 || index >= n)
    fail("example index " + std::to_string(index) + " at length " + std::to_string(length) + " is outside the " +
             ablate_text::split_name(split) + " split's " + std::to_string(n) + " windows of that length",
         settings_.corpus.contiguous ? "index with 0 .. size_at_length(split, length) - 1"
                                     : "split: random makes windows of `context` tokens only; set split: contiguous");
  if (!settings_.corpus.contiguous) return example(split, index);
  // The split's windows are consecutive: its stretch starts at its first window.
  const std::int64_t first = window_of(split, 0) * settings_.stream.context + index * length;
  ablate::Example e;
  e.tgt.assign(ids_.begin() + first, ids_.begin() + first + length);
  return e;
}

std::int64_t TextLanguageModel::window_of(ablate::Split split, std::int64_t index) const {
  return windows_.at(split, index, kName);
}

std::int64_t TextLanguageModel::line_of(ablate::Split split, std::int64_t index) const {
  return window_lines_[static_cast<std::size_t>(window_of(split, index))];
}

std::vector<ablate::Example> TextLanguageModel::read_examples(const std::string& file, std::int64_t* unknown) const {
  StreamOptions o = settings_.stream;
  o.max_examples = 0;
  const std::vector<std::int32_t> ids = vocabulary_ids(read_token_stream_file(file, o));
  const std::int64_t context = o.context, windows = static_cast<std::int64_t>(ids.size()) / context;
  std::vector<ablate::Example> out(static_cast<std::size_t>(windows));
  for (std::int64_t w = 0; w < windows; ++w)
    out[static_cast<std::size_t>(w)].tgt.assign(ids.begin() + w * context, ids.begin() + (w + 1) * context);
  if (unknown) *unknown = std::count(ids.begin(), ids.begin() + windows * context, Vocabulary::kUnk);
  return out;
}

std::vector<std::int32_t> TextLanguageModel::vocabulary_ids(const TokenStream& stream) const {
  std::vector<std::int32_t> id_of_type(stream.types.size());
  for (std::size_t t = 0; t < stream.types.size(); ++t) id_of_type[t] = vocab_.id(stream.types[t]);
  std::vector<std::int32_t> ids(stream.tokens.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = id_of_type[static_cast<std::size_t>(stream.tokens[i])];
  return ids;
}

std::vector<std::int32_t> TextLanguageModel::encode(const std::string& text, bool /*target: one vocabulary*/,
                                                    std::int64_t* unknown) const {
  std::vector<std::string> tokens;
  for (std::size_t start = 0; start <= text.size();) {  // line by line, a line break token where one was
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string> t = line_tokens(line, end < text.size(), settings_.stream.tokenizer);
    tokens.insert(tokens.end(), t.begin(), t.end());
    start = end + 1;
  }
  return vocab_.encode(tokens, unknown);
}

std::string TextLanguageModel::text(const std::vector<std::int32_t>& tokens, bool /*target: one vocabulary*/) const {
  const bool words = settings_.stream.tokenizer.level == ablate_text::Level::Word;
  std::string out;
  bool after_break = true;  // no space at the start, nor after a line break
  for (const std::string& t : vocab_.decode(tokens)) {
    const bool line_break = t == kLineBreak;
    if (words && !after_break && !line_break) out += ' ';
    out += t;
    after_break = line_break;
  }
  return out;
}

}  // namespace task_language_model
