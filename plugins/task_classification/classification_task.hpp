// Plugin task/classification: text classification of labelled lines read from a TSV file
// (labelled_text.hpp), for the encoder-only model's classifier head. The texts are tokenized and
// split deterministically (plugins/common/text), the vocabulary comes from the train split, the
// classes are the file's distinct labels in sorted order; scored with accuracy and macro-F1.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/task.hpp"
#include "labelled_text.hpp"
#include "text/tokenizer.hpp"
#include "text/per_split.hpp"
#include "text/vocabulary.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace task_classification {

class ClassificationTask final : public ablate::Task {
 public:
  static constexpr const char* kName = "task/classification";
  // Reads, tokenizes, splits and encodes the whole file (once). Throws ablate::Error naming the
  // plugin for bad options, FILE:LINE for a bad line, and for a file with fewer than 2 labels.
  // With `context.tokenizer` (task.tokenizer) the examples are split first, the tokenizer (role
  // "text") learns from the train texts, and max_len applies to its tokens.
  ClassificationTask(const ablate::Options& o, const ablate::TaskContext& context);

  // Classification, vocab_size = the vocabulary's size, max_src_len = max_len, max_tgt_len 1,
  // num_classes = labels().size().
  ablate::TaskInfo info() const override;
  std::int64_t size(ablate::Split split) const override;
  // src: the text's token ids; tgt: {class id}.
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  // With a sampling tokenizer (alpha), the train text segmented anew from `draw`.
  ablate::Example train_example(std::int64_t index, std::uint64_t draw) const override;
  // exact_match and accuracy (the same number: the one-token prediction equals the class), macro_f1.
  std::map<std::string, double> score(const std::vector<ablate::Example>& references,
                                      const std::vector<std::vector<std::int32_t>>& predictions) const override;
  std::vector<std::string> score_names() const override;
  // target: the label of each class id ("<unk>" for an id outside the classes), space-separated;
  // else the detokenized text.
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override;
  // The text side (a label is not encoded: `target` must be false).
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override {
    if (target) throw ablate::Error(std::string(kName) + ": the target is a class label, not text to encode");
    return tokenizer_->encode(text, unknown);
  }
  // The examples of another labelled TSV file of the same columns (`ablate eval --data`): the
  // texts read, filtered and encoded as the task's own (<unk> counted), each label mapped to its
  // class. Throws ablate::Error naming FILE:LINE for a bad line or a label the run has no class for.
  std::vector<ablate::Example> read_examples(const std::string& file, ablate::ReadReport& report) const override;

  // Class id -> label: the distinct labels of the kept examples, sorted byte-wise; or a trained
  // run's as it kept them (TaskContext::keep_tokenizer, role "labels").
  const std::vector<std::string>& labels() const { return labels_; }
  // The vocabulary of the task's own word / char units (no task.tokenizer); throws otherwise.
  const ablate_text::Vocabulary& vocabulary() const;
  // What reading the file kept and dropped (the examples themselves are not kept).
  const LabelledCorpus& corpus_stats() const { return stats_; }
  // The 1-based file line of an example (for people tracing an example back to the file).
  std::int64_t line_of(ablate::Split split, std::int64_t index) const;

 private:
  // An example of `e` (its class `cls`): its text's ids (the reader's tokens looked up, or the
  // text encoded by the tokenizer plugin, which then applies max_len, counting into `stats`);
  // nullopt when it is dropped. `unknown` (when not null) adds its <unk> ids.
  std::optional<ablate::Example> example_of(const LabelledText& e, std::int32_t cls, LabelledCorpus& stats,
                                            std::int64_t* unknown) const;

  // The class of `label`, or -1 when it is none of labels_.
  std::int32_t class_id(const std::string& label) const;

  ReadOptions read_options_;
  std::shared_ptr<ablate::Tokenizer> tokenizer_;             // the text's: the plugin's, or units_
  std::shared_ptr<ablate_text::VocabularyTokenizer> units_;  // the task's own word / char units (null with a plugin)
  std::vector<std::string> labels_;
  LabelledCorpus stats_;  // counts only
  ablate_text::PerSplit<ablate::Example> examples_;
  ablate_text::PerSplit<std::int64_t> lines_;  // the 1-based file line of each example
  std::vector<std::string> train_text_;        // the train examples' text, kept when the tokenizer samples
};

}  // namespace task_classification
