// task/language_model over a text file (the plugin's text mode, option `file`): the file as one
// token stream (text_corpus.hpp) cut into non-overlapping windows of `context` tokens, the
// windows split into train / eval / test (option `split`: contiguous stretches, train first and
// test last, or shuffled windows; ablate_text::split), and one vocabulary built from the train
// windows only (<unk> for the rest). With a tokenizer plugin (task.tokenizer) the file's lines are
// split first and the tokenizer learns from the train lines (TextSettings::tokenizer).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plugin_name.hpp"
#include "ablate/task.hpp"
#include "text/corpus_settings.hpp"
#include "text/per_split.hpp"
#include "text/vocabulary.hpp"
#include "text_corpus.hpp"

namespace task_language_model {

struct TextSettings {
  std::string file;
  StreamOptions stream;                // stream.max_examples is corpus.max_examples
  ablate_text::CorpusSettings corpus;  // min_freq and the splits
  // The spec's task.tokenizer (role "text"), or null: the file's own char / word units (`tokens`).
  // With one, the split is made on lines first (train = the first lines, then eval, then test, by
  // valid_fraction / test_fraction of the lines), the tokenizer learns from the train lines only,
  // and each stretch is encoded and cut into windows on its own.
  std::shared_ptr<ablate::Tokenizer> tokenizer;
  // Without one: the host's TaskContext::keep_tokenizer (may be empty), given the units and their
  // vocabulary (role "text") once counted, so a trained run reads with the vocabulary it trained on.
  std::function<bool(const std::string&, const std::shared_ptr<ablate::Tokenizer>&)> keep_tokenizer;
};

// What reading the file kept and dropped (the text itself is not kept).
struct TextStats {
  std::int64_t lines_read = 0, total_tokens = 0, dropped_tokens = 0, windows = 0;
  std::int64_t train_tokens = 0, train_unk = 0;  // content tokens of the train windows; those that are <unk> (min_freq)
};

class TextLanguageModel final : public ablate::Task {
 public:
  static constexpr const char* kName = kPluginName;
  // Reads, tokenizes, cuts, splits and encodes the file (once). Throws ablate::Error naming the
  // plugin for bad settings and FILE:LINE for a bad line.
  explicit TextLanguageModel(const TextSettings& settings);

  ablate::TaskInfo info() const override;
  std::int64_t size(ablate::Split split) const override;
  // A window of `context` content tokens as tgt (src empty): the model reads bos + window.
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  // Characters concatenated (the text as written, lower-cased if asked); words joined by single
  // spaces, with no space around a line break. pad/bos/eos are dropped, an unknown id is "<unk>".
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override;
  // Windows of `length` tokens for eval.lengths. split: contiguous: the split's stretch of text cut
  // into floor(stretch / length) non-overlapping windows, in file order. split: random: the split's
  // windows when length is `context` (its windows are not adjacent), else none.
  std::int64_t size_at_length(ablate::Split split, std::int64_t length) const override;
  ablate::Example example_at_length(ablate::Split split, std::int64_t index, std::int64_t length) const override;
  // Another text file cut into windows of `context` tokens as the task's file is (every window).
  std::vector<ablate::Example> read_examples(const std::string& file, ablate::ReadReport& report) const override;
  // The text tokenized as the file was (one vocabulary: `target` does not matter).
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override;

  const ablate_text::Vocabulary& vocabulary() const { return vocab_; }
  const TextStats& stats() const { return stats_; }
  // The window an example is: its tokens are the file's tokens [w * context, (w + 1) * context).
  std::int64_t window_of(ablate::Split split, std::int64_t index) const;
  // The 1-based file line where an example's window starts.
  std::int64_t line_of(ablate::Split split, std::int64_t index) const;

 private:
  // The stream's tokens as ids of vocab_ (<unk> for a token it lacks).
  std::vector<std::int32_t> vocabulary_ids(const TokenStream& stream) const;
  // The file read, split and encoded with settings_.tokenizer (see TextSettings::tokenizer).
  void load_with_tokenizer();

  TextSettings settings_;
  ablate_text::Vocabulary vocab_;                 // without a tokenizer: the train windows' vocabulary
  std::shared_ptr<ablate::Tokenizer> tokenizer_;  // settings_.tokenizer, or the char / word units over vocab_
  std::vector<std::int32_t> ids_;                 // [windows * context]: the kept stream as vocabulary ids
  std::vector<std::int64_t> window_lines_;        // [windows]: the line each window starts on
  ablate_text::PerSplit<std::int64_t> windows_;   // window indices per split (shuffled order)
  TextStats stats_;
};

}  // namespace task_language_model
