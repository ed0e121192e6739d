// Plugin task/translation: sequence-to-sequence translation of real parallel text read from a
// TSV file (parallel_corpus.hpp), tokenized per side (tokenizer.hpp), split deterministically
// into train / eval / test (splits.hpp), with a source and a target vocabulary built from the
// train split (vocabulary.hpp); scored with exact match, token accuracy, corpus BLEU on tokens
// and the D2L sentence BLEU (bleu.hpp), and sacreBLEU and chrF on the detokenized text against the
// target as written (sacrebleu.hpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "parallel_corpus.hpp"
#include "sacrebleu.hpp"
#include "text/tokenizer.hpp"
#include "text/per_split.hpp"
#include "text/vocabulary.hpp"

namespace task_translation {

class TranslationTask final : public ablate::Task {
 public:
  static constexpr const char* kName = "task/translation";
  // Reads, tokenizes, splits and encodes the whole file (once). Throws ablate::Error naming the
  // plugin for bad options and FILE:LINE for a bad line.
  explicit TranslationTask(const ablate::Options& o);

  ablate::TaskInfo info() const override;
  std::int64_t size(ablate::Split split) const override;
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  std::map<std::string, double> score(const std::vector<ablate::Example>& references,
                                      const std::vector<std::vector<std::int32_t>>& predictions) const override;
  std::vector<std::string> score_names() const override;
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override;
  // Pairs of another TSV file read as the task's file is (tokenizers, max_len rule; every pair kept).
  std::vector<ablate::Example> read_examples(const std::string& file, std::int64_t* unknown) const override;
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override {
    return (target ? tgt_vocab_ : src_vocab_).encode((target ? tgt_tok_ : src_tok_).tokenize(text), unknown);
  }

  const ablate_text::Vocabulary& source_vocabulary() const { return src_vocab_; }
  const ablate_text::Vocabulary& target_vocabulary() const { return tgt_vocab_; }
  // What reading the file kept and dropped (the pairs themselves are not kept).
  const Corpus& corpus_stats() const { return stats_; }
  // The 1-based file line of an example (for people tracing an example back to the file).
  std::int64_t line_of(ablate::Split split, std::int64_t index) const;

 private:
  CorpusOptions corpus_options_;
  ablate_text::Tokenizer src_tok_, tgt_tok_;
  std::int64_t bleu_k_;
  BleuTokenizer sacrebleu_tokenizer_;
  ablate_text::Vocabulary src_vocab_, tgt_vocab_;
  Corpus stats_;  // counts only
  ablate_text::PerSplit<ablate::Example> examples_;
  ablate_text::PerSplit<std::int64_t> lines_;  // the 1-based file line of each example
};

}  // namespace task_translation
