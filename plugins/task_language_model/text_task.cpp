// task/language_model's text mode (text_task.hpp): loading, splits, vocabulary, examples, text.
#include "text_task.hpp"

#include <algorithm>
#include <string_view>

#include "ablate/error.hpp"
#include "plugin_name.hpp"
#include "text/splits.hpp"
#include "text/text_file.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace task_language_model {

using ablate_text::Vocabulary;

namespace {

// The lines of a text file, each with its line break (a tokenizer keeps lines apart), every one
// checked as UTF-8 text (ablate_text::check_line: FILE:LINE on a bad one).
std::vector<std::string> checked_lines(const std::string& file) {
  std::ifstream in = ablate_text::open_text_file(file, "a UTF-8 text file");
  ablate_text::TextLines reader(in);
  std::vector<std::string> lines;
  for (std::string_view line; reader.next(line);) {
    ablate_text::check_line(line, file, reader.number());
    lines.emplace_back(line).push_back('\n');
  }
  return lines;
}

// The file's token stream cut into windows of `context` (the examples a language model scores);
// the tokens after the last whole window (a partial window; `cut` of them already cut by the
// reader) are left out, and said so in `report`.
std::vector<ablate::Example> windows_of(const std::vector<std::int32_t>& ids, std::int64_t context, ablate::ReadReport& report,
                                        std::int64_t cut = 0) {
  const std::int64_t windows = static_cast<std::int64_t>(ids.size()) / context;
  std::vector<ablate::Example> out(static_cast<std::size_t>(windows));
  for (std::int64_t w = 0; w < windows; ++w) {
    out[static_cast<std::size_t>(w)].tgt.assign(ids.begin() + w * context, ids.begin() + (w + 1) * context);
    out[static_cast<std::size_t>(w)].cut = true;
  }
  const std::int64_t left = static_cast<std::int64_t>(ids.size()) - windows * context + cut;
  report.read = windows + (left > 0 ? 1 : 0);  // the file's windows, the last one partial
  if (left > 0) {
    report.dropped = 1;
    report.dropped_why = "the last " + std::to_string(left) + " tokens, fewer than a window of context " +
                         std::to_string(context) + " (a language model scores whole windows)";
  }
  return out;
}

}  // namespace

TextLanguageModel::TextLanguageModel(const TextSettings& s) : settings_(s), tokenizer_(s.tokenizer) {
  const std::int64_t context = s.stream.context;
  if (context < 1) fail("context must be >= 1, got " + std::to_string(context), "it is the tokens per example (window)");
  if (tokenizer_) {
    load_with_tokenizer();
    return;
  }

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
  auto units = std::make_shared<ablate_text::VocabularyTokenizer>(
      ablate_text::VocabularyTokenizerOptions{s.stream.tokenizer, true, s.corpus.min_freq}, counts.build(s.corpus.min_freq));
  if (s.keep_tokenizer) s.keep_tokenizer("text", units);  // the run keeps it (a trained run's: loaded into it, as trained)
  vocab_ = units->vocabulary();
  tokenizer_ = units;

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

void TextLanguageModel::load_with_tokenizer() {
  const std::string& file = settings_.file;
  const std::int64_t context = settings_.stream.context;
  std::vector<std::string> lines;
  try {
    lines = checked_lines(file);
  } catch (const ablate::Error& e) {
    fail(e.what(), e.hint());
  }
  const auto n = static_cast<std::int64_t>(lines.size());
  stats_.lines_read = n;
  ablate_text::SplitIndices split;
  try {
    split = ablate_text::contiguous_split_indices(n, settings_.corpus.valid_fraction, settings_.corpus.test_fraction);
  } catch (const ablate::Error& e) {
    fail(file + ": split by lines: " + e.what(), "lower valid_fraction / test_fraction, or use a longer file");
  }
  std::vector<std::string> train_text;
  for (std::int64_t i : split.train) train_text.push_back(lines[static_cast<std::size_t>(i)]);
  tokenizer_->train(train_text);  // the train lines only: eval and test text never shape the tokenizer

  // Each stretch on its own: its lines' ids, cut into whole windows after the ones before it.
  const auto add_stretch = [&](ablate::Split part, const std::vector<std::int64_t>& line_indices) {
    std::vector<std::int32_t> ids;
    std::vector<std::int64_t> line_starts;  // [lines]: the stretch's token index where each line starts
    std::int64_t unknown = 0;
    for (std::int64_t i : line_indices) {
      line_starts.push_back(static_cast<std::int64_t>(ids.size()));
      std::int64_t u = 0;
      const std::vector<std::int32_t> e = tokenizer_->encode(lines[static_cast<std::size_t>(i)], &u);
      ids.insert(ids.end(), e.begin(), e.end());
      unknown += u;
    }
    const auto tokens = static_cast<std::int64_t>(ids.size());
    const std::int64_t windows = tokens / context;
    if (windows == 0)
      fail(file + ": the " + ablate_text::split_name(part) + " stretch (" + std::to_string(line_indices.size()) + " lines) has " +
               std::to_string(tokens) + " tokens, fewer than one window of context " + std::to_string(context),
           "raise valid_fraction / test_fraction, lower context, or use a longer file");
    const std::int64_t first = static_cast<std::int64_t>(ids_.size()) / context;
    ids_.insert(ids_.end(), ids.begin(), ids.begin() + windows * context);
    for (std::int64_t w = 0; w < windows; ++w) {
      windows_[part].push_back(first + w);
      const auto line = std::upper_bound(line_starts.begin(), line_starts.end(), w * context) - line_starts.begin() - 1;
      window_lines_.push_back(line_indices[static_cast<std::size_t>(line)] + 1);
    }
    stats_.total_tokens += tokens;
    stats_.dropped_tokens += tokens - windows * context;
    stats_.windows += windows;
    if (part == ablate::Split::Train) {
      stats_.train_tokens = windows * context;
      stats_.train_unk = unknown;
    }
  };
  add_stretch(ablate::Split::Train, split.train);
  if (split.eval == split.train)
    windows_[ablate::Split::Eval] = windows_[ablate::Split::Train];  // valid_fraction 0: evaluate on the train windows
  else
    add_stretch(ablate::Split::Eval, split.eval);
  if (!split.test.empty()) add_stretch(ablate::Split::Test, split.test);
}

ablate::TaskInfo TextLanguageModel::info() const {
  return {ablate::TaskType::LanguageModel, tokenizer_->vocab_size(), 0, settings_.stream.context};
}

std::int64_t TextLanguageModel::size(ablate::Split split) const { return windows_.size(split); }

ablate::Example TextLanguageModel::example(ablate::Split split, std::int64_t index) const {
  const std::int64_t context = settings_.stream.context;
  const auto first = ids_.begin() + static_cast<std::ptrdiff_t>(window_of(split, index) * context);
  ablate::Example e;
  e.tgt.assign(first, first + static_cast<std::ptrdiff_t>(context));
  e.cut = true;  // a window of the file's text: the text goes on after it
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
  e.cut = true;
  return e;
}

std::int64_t TextLanguageModel::window_of(ablate::Split split, std::int64_t index) const {
  return windows_.at(split, index, kName);
}

std::int64_t TextLanguageModel::line_of(ablate::Split split, std::int64_t index) const {
  return window_lines_[static_cast<std::size_t>(window_of(split, index))];
}

std::vector<ablate::Example> TextLanguageModel::read_examples(const std::string& file, ablate::ReadReport& report) const {
  if (settings_.tokenizer) {  // every line encoded as the task's lines are, the stream cut into windows
    std::vector<std::int32_t> ids;
    for (const std::string& line : checked_lines(file)) {
      std::int64_t u = 0;
      const std::vector<std::int32_t> e = tokenizer_->encode(line, &u);
      ids.insert(ids.end(), e.begin(), e.end());
      report.unknown += u;
    }
    return windows_of(ids, settings_.stream.context, report);
  }
  StreamOptions o = settings_.stream;
  o.max_examples = 0;
  const TokenStream stream = read_token_stream_file(file, o);
  std::vector<ablate::Example> out = windows_of(vocabulary_ids(stream), o.context, report, stream.dropped_tokens);
  for (const ablate::Example& e : out) report.unknown += std::count(e.tgt.begin(), e.tgt.end(), Vocabulary::kUnk);
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
  return tokenizer_->encode(text, unknown);
}

std::string TextLanguageModel::text(const std::vector<std::int32_t>& tokens, bool /*target: one vocabulary*/) const {
  return tokenizer_->decode(tokens);
}

}  // namespace task_language_model
