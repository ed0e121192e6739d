// Plugin task/translation: sequence-to-sequence translation of real parallel text read from a
// TSV file (parallel_corpus.hpp), tokenized per side (tokenizer.hpp), split deterministically
// into train / eval / test (splits.hpp), with a source and a target vocabulary built from the
// train split (vocabulary.hpp); scored with exact match, token accuracy, corpus BLEU on tokens
// and the D2L sentence BLEU (bleu.hpp), and sacreBLEU and chrF on the detokenized text against the
// target as written (sacrebleu.hpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ablate/task.hpp"
#include "parallel_corpus.hpp"
#include "sacrebleu.hpp"
#include "text/tokenizer.hpp"
#include "text/per_split.hpp"
#include "text/vocabulary.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace task_translation {

class TranslationTask final : public ablate::Task {
 public:
  static constexpr const char* kName = "task/translation";
  // Reads, tokenizes, splits and encodes the whole file (once). Throws ablate::Error naming the
  // plugin for bad options and FILE:LINE for a bad line. With `context.tokenizer` (task.tokenizer)
  // the pairs are split first, the tokenizers ("source" and "target", or one "joint" for both
  // sides with joint_vocabulary) learn from the train pairs, and max_len applies to their tokens.
  TranslationTask(const ablate::Options& o, const ablate::TaskContext& context);

  ablate::TaskInfo info() const override;
  std::int64_t size(ablate::Split split) const override;
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  // With a sampling tokenizer (alpha), each side of the train pair segmented anew from `draw`.
  ablate::Example train_example(std::int64_t index, std::uint64_t draw) const override;
  std::map<std::string, double> score(const std::vector<ablate::Example>& references,
                                      const std::vector<std::vector<std::int32_t>>& predictions) const override;
  std::vector<std::string> score_names() const override;
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override;
  // Pairs of another TSV file read as the task's file is (tokenizers, max_len rule; every pair kept).
  std::vector<ablate::Example> read_examples(const std::string& file, ablate::ReadReport& report) const override;
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override {
    return side(target).encode(text, unknown);
  }

  // The vocabularies of the task's own word / char units (no task.tokenizer); throws otherwise.
  const ablate_text::Vocabulary& source_vocabulary() const;
  const ablate_text::Vocabulary& target_vocabulary() const;
  // What reading the file kept and dropped (the pairs themselves are not kept).
  const Corpus& corpus_stats() const { return stats_; }
  // The 1-based file line of an example (for people tracing an example back to the file).
  std::int64_t line_of(ablate::Split split, std::int64_t index) const;

 private:
  const ablate::Tokenizer& side(bool target) const { return target ? *tgt_ : *src_; }
  // A pair as an example: its sides' ids (the reader's token lists looked up, or the text encoded
  // by the tokenizer plugins, which then applies max_len, counting into `stats`); nullopt when the
  // pair is dropped. `unknown` (when not null) adds the <unk> ids.
  std::optional<ablate::Example> example_of(const TokenizedPair& p, Corpus& stats, std::int64_t* unknown) const;

  CorpusOptions corpus_options_;
  std::int64_t bleu_k_;
  BleuTokenizer sacrebleu_tokenizer_;
  // Each side's tokenizer (one for both with joint_vocabulary); with the task's own units, also as
  // the vocabulary tokenizers they are (null with a tokenizer plugin).
  std::shared_ptr<ablate::Tokenizer> src_, tgt_;
  bool joint_ = false;  // joint_vocabulary: a source and a target id name the same token
  std::shared_ptr<ablate_text::VocabularyTokenizer> src_units_, tgt_units_;
  Corpus stats_;  // counts only
  ablate_text::PerSplit<ablate::Example> examples_;
  ablate_text::PerSplit<std::int64_t> lines_;  // the 1-based file line of each example
  // The train pairs' text, by example index, kept when a tokenizer samples (subword sampling).
  std::vector<std::pair<std::string, std::string>> train_text_;
};

}  // namespace task_translation
