// Plugin task/classification (classification_task.hpp): options, loading, examples, scoring, text.
#include "classification_task.hpp"

#include <algorithm>

#include "class_scores.hpp"
#include "text/corpus_settings.hpp"
#include "text/deferred_task.hpp"
#include "text/subword_sampling.hpp"
#include "text/text_file.hpp"

namespace task_classification {
namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"file", ablate::OptionType::String, nullptr, nullptr,
     "UTF-8 TSV of 'text<TAB>label' lines (see text_column, label_column); a relative path is relative to the current directory"},
    {"text_column", ablate::OptionType::Int, "1", nullptr, "the tab-separated column (from 1) holding the text"},
    {"label_column", ablate::OptionType::Int, "2", nullptr, "the tab-separated column (from 1) holding the label"},
    {"header", ablate::OptionType::Bool, "false", nullptr, "the first line names the columns and is skipped"},
    {"tokens", ablate::OptionType::String, "word", "word|char",
     "tokenization: word (whitespace, punctuation split) or char (one token per code point, spaces dropped)"},
    {"lowercase", ablate::OptionType::Bool, "true", nullptr,
     "lower-case the text (ASCII, Latin-1/Extended-A, Greek, Cyrillic); labels stay as written"},
    {"split_punctuation", ablate::OptionType::Bool, "true", nullptr,
     "word level: punctuation characters become their own tokens (don't, 3.5 stay whole)"},
    {"min_freq", ablate::OptionType::Int, "1", nullptr,
     "train-split count a token needs to enter the vocabulary; rarer ones are <unk>"},
    {"max_len", ablate::OptionType::Int, "64", nullptr, "longest text, in tokens"},
    {"long_examples", ablate::OptionType::String, "filter", "filter|truncate",
     "texts longer than max_len: filter (drop the example) or truncate (keep its first max_len tokens)"},
    {"max_examples", ablate::OptionType::Int, "0", nullptr, "keep the first N examples after filtering, in file order; 0 = all"},
    {"valid_fraction", ablate::OptionType::Float, "0.1", nullptr,
     "fraction of the examples in the eval split (rounded up); 0 = evaluate on the train examples"},
    {"test_fraction", ablate::OptionType::Float, "0.1", nullptr,
     "fraction of the examples in the held-out test split (rounded up; 0 = none)"},
    {"split_seed", ablate::OptionType::Int, "1", nullptr,
     "seed of the shuffle that assigns examples to the train/eval/test splits"},
};

[[noreturn]] void bad_option(const std::string& what, const std::string& hint = {}) {
  throw ablate::Error(std::string(ClassificationTask::kName) + ": " + what, hint);
}

ReadOptions read_options(const ablate::Options& o) {
  ReadOptions r;
  r.tokens = ablate_text::tokenizer_options(o, "tokens");
  r.text_column = o.get_int("text_column");
  r.label_column = o.get_int("label_column");
  r.header = o.get_bool("header");
  r.max_len = o.get_int("max_len");
  r.long_examples = o.get_string("long_examples") == "truncate" ? LongExamples::Truncate : LongExamples::Filter;
  if (r.text_column < 1 || r.label_column < 1 || r.text_column == r.label_column)
    bad_option("text_column " + std::to_string(r.text_column) + " and label_column " + std::to_string(r.label_column) +
                   "; expected two different columns >= 1",
               "columns are counted from 1: text_column: 1, label_column: 2 reads 'text<TAB>label'");
  if (r.max_len < 1) bad_option("max_len must be >= 1, got " + std::to_string(r.max_len), "it counts the tokens of a text");
  return r;
}

}  // namespace

ClassificationTask::ClassificationTask(const ablate::Options& o, const ablate::TaskContext& context)
    : read_options_(read_options(o)) {
  const ablate_text::CorpusSettings settings = ablate_text::corpus_settings(o, kName, "example");
  read_options_.max_examples = settings.max_examples;
  const bool plugin = static_cast<bool>(context.tokenizer);
  if (plugin)
    ablate_text::refuse_with_tokenizer(o, ablate::options_of(kOptions), {"tokens", "lowercase", "split_punctuation", "min_freq"},
                                       kName, "the tokenizer sets the units and the vocabulary");
  read_options_.tokenize = !plugin;

  const std::string& file = o.get_string("file");
  LabelledCorpus corpus;
  try {
    corpus = read_labelled_tsv_file(file, read_options_);
  } catch (const ablate::Error& e) {
    bad_option(e.what(), e.hint());
  }
  const auto n = static_cast<std::int64_t>(corpus.examples.size());
  if (n == 0)
    bad_option(file + ": no examples left after filtering (" + std::to_string(corpus.lines_read) + " lines, " +
                   std::to_string(corpus.dropped_long) + " longer than max_len " + std::to_string(read_options_.max_len) +
                   "); expected at least 3 examples",
               "raise max_len, use long_examples: truncate, or check the file");

  for (const LabelledText& e : corpus.examples) labels_.push_back(e.label);
  std::sort(labels_.begin(), labels_.end());
  labels_.erase(std::unique(labels_.begin(), labels_.end()), labels_.end());
  if (labels_.size() < 2)
    bad_option(file + ": " + std::to_string(labels_.size()) + " distinct label ('" + labels_.front() + "') in " +
                   std::to_string(n) + " examples; expected at least 2 labels",
               "a classifier needs two classes or more; check label_column");
  const std::vector<std::string> reserved = ablate_text::Vocabulary().tokens();  // the run keeps the labels as such a table
  for (const std::string& l : labels_)
    if (std::find(reserved.begin(), reserved.end(), l) != reserved.end())
      bad_option(file + ": the label '" + l + "' is spelled like a reserved token", "rename that label in the file");

  ablate_text::SplitIndices split;
  try {
    split = ablate_text::split(settings, n);
  } catch (const ablate::Error& e) {
    bad_option(file + ": " + e.what(), e.hint());
  }

  // The tokenizer learns from the train texts only: eval and test text never shapes it.
  if (plugin) {
    tokenizer_ = context.tokenizer("text");
    std::vector<std::string> texts;
    for (std::int64_t i : split.train) texts.push_back(corpus.examples[static_cast<std::size_t>(i)].text);
    tokenizer_->train(texts);
  } else {
    ablate_text::Vocabulary::Builder counts;
    for (std::int64_t i : split.train) counts.add(corpus.examples[static_cast<std::size_t>(i)].tokens);
    units_ = std::make_shared<ablate_text::VocabularyTokenizer>(
        ablate_text::VocabularyTokenizerOptions{read_options_.tokens, false, settings.min_freq}, counts.build(settings.min_freq));
    if (context.keep_tokenizer) context.keep_tokenizer("text", units_);  // a trained run's: loaded into it, as trained
    tokenizer_ = units_;
  }
  if (context.keep_tokenizer) {  // the class names too, in class id order: a class id never changes meaning
    auto classes = std::make_shared<ablate_text::VocabularyTokenizer>(ablate_text::VocabularyTokenizerOptions{},
                                                                      ablate_text::Vocabulary::from_tokens(labels_));
    context.keep_tokenizer("labels", classes);
    const std::vector<std::string>& kept = classes->vocabulary().tokens();
    labels_.assign(kept.begin() + ablate_text::Vocabulary::kFirstContent, kept.end());
  }

  const auto encode = [&](ablate::Split part, const std::vector<std::int64_t>& indices) {
    std::vector<ablate::Example>& out = examples_[part];
    std::vector<std::int64_t>& lines = lines_[part];
    out.reserve(indices.size());
    lines.reserve(indices.size());
    for (std::int64_t i : indices) {
      const LabelledText& e = corpus.examples[static_cast<std::size_t>(i)];
      const std::int32_t cls = class_id(e.label);
      if (cls < 0) continue;  // a label the run's kept class names lack: the file changed since (read for its text only)
      if (std::optional<ablate::Example> x = example_of(e, cls, corpus, nullptr)) {
        out.push_back(std::move(*x));
        lines.push_back(e.line);
        if (part == ablate::Split::Train && plugin && tokenizer_->samples()) train_text_.push_back(e.text);
      }
    }
  };
  encode(ablate::Split::Train, split.train);
  encode(ablate::Split::Eval, split.eval);
  encode(ablate::Split::Test, split.test);
  if (plugin && examples_.size(ablate::Split::Train) == 0)
    bad_option(
        file + ": every train text is longer than max_len " + std::to_string(read_options_.max_len) + " tokens of the tokenizer",
        "raise max_len, or use long_examples: truncate");
  corpus.examples.clear();
  corpus.examples.shrink_to_fit();
  stats_ = std::move(corpus);
}

std::optional<ablate::Example> ClassificationTask::example_of(const LabelledText& e, std::int32_t cls, LabelledCorpus& stats,
                                                              std::int64_t* unknown) const {
  ablate::Example x;
  std::int64_t unk = 0;
  x.tgt = {cls};
  if (units_) {  // the reader tokenized the text and applied max_len already
    x.src = units_->vocabulary().encode(e.tokens, &unk);
  } else {
    x.src = tokenizer_->encode(e.text, &unk);
    if (x.src.empty()) return std::nullopt;
    if (!ablate_text::fit_max_len(read_options_.max_len, read_options_.long_examples, stats.dropped_long, stats.truncated, x.src))
      return std::nullopt;
  }
  if (unknown) *unknown += unk;
  return x;
}

ablate::Example ClassificationTask::train_example(std::int64_t index, std::uint64_t draw) const {
  ablate::Example e = example(ablate::Split::Train, index);
  if (!train_text_.empty())
    ablate_text::resample(*tokenizer_, train_text_[static_cast<std::size_t>(index)], ablate_text::sample_key(draw, index, 0),
                          read_options_.max_len, e.src);
  return e;
}

const ablate_text::Vocabulary& ClassificationTask::vocabulary() const {
  if (!units_) throw ablate::Error(std::string(kName) + ": the text is read by task.tokenizer, not a vocabulary of its own");
  return units_->vocabulary();
}

std::int32_t ClassificationTask::class_id(const std::string& label) const {
  const auto it = std::find(labels_.begin(), labels_.end(), label);
  return it == labels_.end() ? -1 : static_cast<std::int32_t>(it - labels_.begin());
}

std::vector<ablate::Example> ClassificationTask::read_examples(const std::string& file, ablate::ReadReport& report) const {
  ReadOptions o = read_options_;
  o.max_examples = 0;
  LabelledCorpus corpus = read_labelled_tsv_file(file, o);
  const std::int64_t long_before = corpus.dropped_long;  // those the reader dropped (the task's own tokens)
  std::vector<ablate::Example> out;
  for (const LabelledText& e : corpus.examples) {
    const std::int32_t cls = class_id(e.label);
    if (cls < 0) {
      std::string known;
      for (const std::string& l : labels_) known += (known.empty() ? "" : ", ") + l;
      throw ablate::Error(file + ":" + std::to_string(e.line) + ": label '" + e.label + "' is not one of the run's " +
                              std::to_string(labels_.size()) + " classes [" + known + "]",
                          "a classifier scores only the labels it was trained on; check label_column, or drop such lines");
    }
    if (std::optional<ablate::Example> x = example_of(e, cls, corpus, &report.unknown)) out.push_back(std::move(*x));
  }
  const std::int64_t empty = static_cast<std::int64_t>(corpus.examples.size() - out.size()) - (corpus.dropped_long - long_before);
  report.dropped = corpus.dropped_long + empty;
  report.read = static_cast<std::int64_t>(out.size()) + report.dropped;
  report.truncated = corpus.truncated;
  report.dropped_why =
      ablate_text::dropped_text(corpus.dropped_long, "the text", o.max_len, empty, "no tokens from task.tokenizer");
  return out;
}

ablate::TaskInfo ClassificationTask::info() const {
  ablate::TaskInfo i{ablate::TaskType::Classification, tokenizer_->vocab_size(), read_options_.max_len, 1};
  i.num_classes = static_cast<std::int64_t>(labels_.size());
  return i;
}

std::int64_t ClassificationTask::size(ablate::Split split) const { return examples_.size(split); }

ablate::Example ClassificationTask::example(ablate::Split split, std::int64_t index) const {
  return examples_.at(split, index, kName);
}

std::int64_t ClassificationTask::line_of(ablate::Split split, std::int64_t index) const { return lines_.at(split, index, kName); }

std::vector<std::string> ClassificationTask::score_names() const { return {"exact_match", "accuracy", "macro_f1"}; }

std::map<std::string, double> ClassificationTask::score(const std::vector<ablate::Example>& references,
                                                        const std::vector<std::vector<std::int32_t>>& predictions) const {
  if (references.size() != predictions.size())
    throw ablate::Error(std::string(kName) + ": " + std::to_string(predictions.size()) + " predictions for " +
                            std::to_string(references.size()) + " references",
                        "pass one prediction (the class, as a one-token sequence) per reference example");
  std::vector<std::int32_t> ref(references.size()), pred(predictions.size());
  for (std::size_t i = 0; i < references.size(); ++i) {
    if (references[i].tgt.size() != 1)
      throw ablate::Error(std::string(kName) + ": reference " + std::to_string(i) + " has " +
                              std::to_string(references[i].tgt.size()) + " target tokens; expected one, the class id",
                          "score the task's own examples");
    ref[i] = references[i].tgt[0];
    pred[i] = predictions[i].size() == 1 ? predictions[i][0] : -1;  // no single class: wrong
  }
  const ClassScores s = class_scores(ref, pred, static_cast<std::int64_t>(labels_.size()));
  return {{"exact_match", s.accuracy}, {"accuracy", s.accuracy}, {"macro_f1", s.macro_f1}};
}

std::string ClassificationTask::text(const std::vector<std::int32_t>& tokens, bool target) const {
  if (!target) return tokenizer_->decode(tokens);
  std::string out;
  for (std::int32_t c : tokens) {
    if (!out.empty()) out += ' ';
    out += c >= 0 && c < static_cast<std::int32_t>(labels_.size()) ? labels_[static_cast<std::size_t>(c)] : "<unk>";
  }
  return out;
}

ablate::Component* create(const ablate::Options& o) {
  return new ablate_text::DeferredTask(
      [o](const ablate::TaskContext& context) { return std::make_shared<ClassificationTask>(o, context); });
}

ABLATE_PLUGIN("task", "classification", "1.4.0",
              "Text classification of 'text<TAB>label' lines from a TSV file (word/char tokens or a tokenizer plugin, "
              "train-split vocabulary, accuracy, macro-F1)",
              ablate::options_of(kOptions), create)

}  // namespace task_classification
