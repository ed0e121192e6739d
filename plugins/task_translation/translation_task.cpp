// Plugin task/translation (translation_task.hpp): options, loading, examples, scoring, text.
#include "translation_task.hpp"

#include <algorithm>

#include "bleu.hpp"
#include "sacrebleu.hpp"
#include "text/corpus_settings.hpp"
#include "text/deferred_task.hpp"
#include "text/subword_sampling.hpp"
#include "text/text_file.hpp"

namespace task_translation {

using ablate_text::Vocabulary;

namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"file", ablate::OptionType::String, nullptr, nullptr,
     "UTF-8 TSV of 'source<TAB>target[<TAB>ignored]' lines (Tatoeba style); a relative path is relative to the current directory"},
    {"source_tokens", ablate::OptionType::String, "word", "word|char",
     "source tokenization: word (whitespace, punctuation split) or char (one token per code point, spaces dropped)"},
    {"target_tokens", ablate::OptionType::String, "word", "word|char", "target tokenization: word or char (as source_tokens)"},
    {"lowercase", ablate::OptionType::Bool, "true", nullptr,
     "lower-case both sides (ASCII, Latin-1/Extended-A, Greek, Cyrillic)"},
    {"split_punctuation", ablate::OptionType::Bool, "true", nullptr,
     "word level: punctuation characters become their own tokens (don't, 3.5 stay whole)"},
    {"min_freq", ablate::OptionType::Int, "1", nullptr,
     "train-split count a token needs to enter its vocabulary; rarer ones are <unk>"},
    {"max_len", ablate::OptionType::Int, "20", nullptr, "longest side, in content tokens (without bos/eos)"},
    {"long_examples", ablate::OptionType::String, "filter", "filter|truncate",
     "pairs with a side longer than max_len: filter (drop the pair) or truncate (cut the side to max_len)"},
    {"max_examples", ablate::OptionType::Int, "0", nullptr, "keep the first N pairs after filtering, in file order; 0 = all"},
    {"valid_fraction", ablate::OptionType::Float, "0.05", nullptr,
     "fraction of the pairs in the eval split (rounded up); 0 = evaluate on the train pairs (toy runs that memorise)"},
    {"test_fraction", ablate::OptionType::Float, "0.05", nullptr,
     "fraction of the pairs in the held-out test split (rounded up; 0 = none)"},
    {"split_seed", ablate::OptionType::Int, "1", nullptr, "seed of the shuffle that assigns pairs to the train/eval/test splits"},
    {"bleu_k", ablate::OptionType::Int, "2", nullptr, "largest n-gram order of the D2L sentence BLEU (sentence_bleu)"},
    {"joint_vocabulary", ablate::OptionType::Bool, "false", nullptr,
     "one vocabulary (one tokenizer) learnt from both sides' train text, as Vaswani's shared BPE; false: one per side"},
    {"sacrebleu_tokenize", ablate::OptionType::String, "13a", "13a|zh",
     "tokenizer of the sacrebleu score: 13a (sacreBLEU's default) or zh (each Chinese character a token, as papers "
     "score Chinese targets)"},
};

[[noreturn]] void bad_option(const std::string& what, const std::string& hint = {}) {
  throw ablate::Error(std::string(TranslationTask::kName) + ": " + what, hint);
}

CorpusOptions corpus_options(const ablate::Options& o) {
  CorpusOptions c;
  c.source = ablate_text::tokenizer_options(o, "source_tokens");
  c.target = ablate_text::tokenizer_options(o, "target_tokens");
  c.max_len = o.get_int("max_len");
  c.long_examples = o.get_string("long_examples") == "truncate" ? LongExamples::Truncate : LongExamples::Filter;
  if (c.max_len < 1) bad_option("max_len must be >= 1, got " + std::to_string(c.max_len), "it counts content tokens per side");
  return c;
}

}  // namespace

TranslationTask::TranslationTask(const ablate::Options& o, const ablate::TaskContext& context)
    : corpus_options_(corpus_options(o)),
      bleu_k_(o.get_int("bleu_k")),
      sacrebleu_tokenizer_(o.get_string("sacrebleu_tokenize") == "zh" ? BleuTokenizer::Zh : BleuTokenizer::T13a) {
  const ablate_text::CorpusSettings settings = ablate_text::corpus_settings(o, kName, "pair");
  corpus_options_.max_examples = settings.max_examples;
  const std::int64_t min_freq = settings.min_freq;
  const bool joint = o.get_bool("joint_vocabulary");
  joint_ = joint;
  const bool plugin = static_cast<bool>(context.tokenizer);
  if (bleu_k_ < 1) bad_option("bleu_k must be >= 1, got " + std::to_string(bleu_k_), "D2L uses k = 2 for short sentences");
  if (plugin)
    ablate_text::refuse_with_tokenizer(o, ablate::options_of(kOptions),
                                       {"source_tokens", "target_tokens", "lowercase", "split_punctuation", "min_freq"}, kName,
                                       "the tokenizer sets the units and the vocabulary");
  corpus_options_.tokenize = !plugin;

  const std::string& file = o.get_string("file");
  Corpus corpus;
  try {
    corpus = read_parallel_tsv_file(file, corpus_options_);
  } catch (const ablate::Error& e) {
    bad_option(e.what(), e.hint());
  }
  const auto n = static_cast<std::int64_t>(corpus.pairs.size());
  if (n == 0)
    bad_option(file + ": no pairs left after tokenization and filtering (" + std::to_string(corpus.lines_read) + " lines, " +
                   std::to_string(corpus.dropped_empty) + " with an empty side, " + std::to_string(corpus.dropped_long) +
                   " longer than max_len " + std::to_string(corpus_options_.max_len) + "); expected at least 3 pairs",
               "raise max_len, use long_examples: truncate, or check the file");
  ablate_text::SplitIndices split;
  try {
    split = ablate_text::split(settings, n);
  } catch (const ablate::Error& e) {
    bad_option(file + ": " + e.what(), e.hint());
  }

  // The tokenizers learn from the train pairs only: eval and test text never shapes them.
  const auto pair_at = [&](std::int64_t i) -> const TokenizedPair& { return corpus.pairs[static_cast<std::size_t>(i)]; };
  bool loaded = false;  // the vocabularies are a trained run's (TaskContext::keep_tokenizer), not counted now
  if (plugin) {
    src_ = context.tokenizer(joint ? "joint" : "source");
    tgt_ = joint ? src_ : context.tokenizer("target");
    std::vector<std::string> src_text, tgt_text;
    for (std::int64_t i : split.train) {
      src_text.push_back(pair_at(i).source);
      (joint ? src_text : tgt_text).push_back(pair_at(i).target);
    }
    src_->train(src_text);
    if (!joint) tgt_->train(tgt_text);
  } else {
    ablate_text::Vocabulary::Builder src_counts, tgt_counts;
    for (std::int64_t i : split.train) {
      src_counts.add(pair_at(i).src);
      (joint ? src_counts : tgt_counts).add(pair_at(i).tgt);
    }
    const ablate_text::Vocabulary src_vocab = src_counts.build(min_freq);
    src_units_ = std::make_shared<ablate_text::VocabularyTokenizer>(
        ablate_text::VocabularyTokenizerOptions{corpus_options_.source, false, min_freq}, src_vocab);
    const ablate_text::VocabularyTokenizerOptions target_units{corpus_options_.target, false, min_freq};
    tgt_units_ = std::make_shared<ablate_text::VocabularyTokenizer>(target_units, joint ? src_vocab : tgt_counts.build(min_freq));
    if (context.keep_tokenizer) {  // the run keeps them (a trained run's: loaded into them, as trained)
      loaded = context.keep_tokenizer(joint ? "joint" : "source", src_units_);
      if (joint)
        tgt_units_ = std::make_shared<ablate_text::VocabularyTokenizer>(target_units, src_units_->vocabulary());
      else
        loaded = context.keep_tokenizer("target", tgt_units_) || loaded;
    }
    src_ = src_units_;
    tgt_ = tgt_units_;
  }

  const auto encode = [&](ablate::Split part, const std::vector<std::int64_t>& indices) {
    std::vector<ablate::Example>& out = examples_[part];
    std::vector<std::int64_t>& lines = lines_[part];
    out.reserve(indices.size());
    lines.reserve(indices.size());
    const bool sampled = part == ablate::Split::Train && plugin && (src_->samples() || tgt_->samples());
    for (std::int64_t i : indices)
      if (std::optional<ablate::Example> e = example_of(pair_at(i), corpus, nullptr)) {
        out.push_back(std::move(*e));
        lines.push_back(pair_at(i).line);
        if (sampled) train_text_.emplace_back(pair_at(i).source, pair_at(i).target);
      }
  };
  encode(ablate::Split::Train, split.train);
  if (split.eval == split.train) {  // valid_fraction 0: evaluate on the train pairs
    examples_[ablate::Split::Eval] = examples_[ablate::Split::Train];
    lines_[ablate::Split::Eval] = lines_[ablate::Split::Train];
  } else {
    encode(ablate::Split::Eval, split.eval);
  }
  encode(ablate::Split::Test, split.test);
  if (plugin)
    for (const ablate::Split part : {ablate::Split::Train, ablate::Split::Eval})
      if (examples_.size(part) == 0)
        bad_option(file + ": every pair of the " + ablate_text::split_name(part) + " split has a side longer than max_len " +
                       std::to_string(corpus_options_.max_len) + " tokens of the tokenizer",
                   "raise max_len, or use long_examples: truncate");
  // A vocabulary that knows (almost) nothing trains a model of <unk>: refuse it rather than
  // let a run "complete" on it. Measured on the train split, per side, of a vocabulary counted now.
  for (const bool target : {false, true}) {
    if (loaded) break;
    std::int64_t tokens = 0, unknown = 0;
    for (const ablate::Example& e : examples_[ablate::Split::Train])
      for (std::int32_t id : target ? e.tgt : e.src) {
        ++tokens;
        unknown += id == Vocabulary::kUnk;
      }
    const std::int64_t known = side(target).vocab_size() - Vocabulary::kFirstContent;
    if (tokens > 0 && (known == 0 || 2 * unknown > tokens))
      bad_option(file + ": " + (plugin ? std::string("the tokenizer") : "min_freq " + std::to_string(min_freq)) + " leaves " +
                     std::to_string(known) + " " + (target ? "target" : "source") + " tokens in the vocabulary and " +
                     std::to_string(100 * unknown / tokens) + "% of the train split's " + (target ? "target" : "source") +
                     " tokens <unk>; expected most tokens known",
                 "lower min_freq (1 keeps every train token), or train on a larger corpus");
  }
  corpus.pairs.clear();
  corpus.pairs.shrink_to_fit();
  stats_ = std::move(corpus);
}

std::optional<ablate::Example> TranslationTask::example_of(const TokenizedPair& p, Corpus& stats, std::int64_t* unknown) const {
  ablate::Example e;
  std::int64_t src_unk = 0, tgt_unk = 0;
  if (src_units_) {  // the reader tokenized the pair and applied max_len already
    e.src = src_units_->vocabulary().encode(p.src, &src_unk);
    e.tgt = tgt_units_->vocabulary().encode(p.tgt, &tgt_unk);
  } else {
    e.src = src_->encode(p.source, &src_unk);
    e.tgt = tgt_->encode(p.target, &tgt_unk);
    if (e.src.empty() || e.tgt.empty()) {
      ++stats.dropped_empty;
      return std::nullopt;
    }
    if (!ablate_text::fit_max_len(corpus_options_.max_len, corpus_options_.long_examples, stats.dropped_long, stats.truncated,
                                  e.src, e.tgt))
      return std::nullopt;
  }
  if (unknown) *unknown += src_unk + tgt_unk;
  e.reference = p.target;
  return e;
}

const ablate_text::Vocabulary& TranslationTask::source_vocabulary() const {
  if (!src_units_)
    throw ablate::Error("task/translation: the source side is read by task.tokenizer, not a vocabulary of its own");
  return src_units_->vocabulary();
}

const ablate_text::Vocabulary& TranslationTask::target_vocabulary() const {
  if (!tgt_units_)
    throw ablate::Error("task/translation: the target side is read by task.tokenizer, not a vocabulary of its own");
  return tgt_units_->vocabulary();
}

std::vector<ablate::Example> TranslationTask::read_examples(const std::string& file, ablate::ReadReport& report) const {
  CorpusOptions o = corpus_options_;
  o.max_examples = 0;
  Corpus corpus = read_parallel_tsv_file(file, o);
  std::vector<ablate::Example> out;
  for (const TokenizedPair& p : corpus.pairs)
    if (std::optional<ablate::Example> e = example_of(p, corpus, &report.unknown)) out.push_back(std::move(*e));
  report.read = static_cast<std::int64_t>(out.size()) + corpus.dropped_empty + corpus.dropped_long;
  report.dropped = corpus.dropped_empty + corpus.dropped_long;
  report.truncated = corpus.truncated;
  report.dropped_why = ablate_text::dropped_text(corpus.dropped_long, "a side", o.max_len, corpus.dropped_empty,
                                                 "a side empty after tokenization");
  return out;
}

ablate::TaskInfo TranslationTask::info() const {
  // As the synthetic tasks: the length bound is the max_len option (every kept side is within it).
  return {ablate::TaskType::Seq2Seq,
          std::max(src_->vocab_size(), tgt_->vocab_size()),
          corpus_options_.max_len,
          corpus_options_.max_len,
          0,
          joint_};
}

std::int64_t TranslationTask::size(ablate::Split split) const { return examples_.size(split); }

ablate::Example TranslationTask::example(ablate::Split split, std::int64_t index) const {
  return examples_.at(split, index, kName);
}

ablate::Example TranslationTask::train_example(std::int64_t index, std::uint64_t draw) const {
  ablate::Example e = example(ablate::Split::Train, index);
  if (train_text_.empty()) return e;
  const auto& [source, target] = train_text_[static_cast<std::size_t>(index)];
  ablate_text::resample(*src_, source, ablate_text::sample_key(draw, index, 0), corpus_options_.max_len, e.src);
  ablate_text::resample(*tgt_, target, ablate_text::sample_key(draw, index, 1), corpus_options_.max_len, e.tgt);
  return e;
}

std::int64_t TranslationTask::line_of(ablate::Split split, std::int64_t index) const { return lines_.at(split, index, kName); }

std::vector<std::string> TranslationTask::score_names() const {
  return {"exact_match",   "token_accuracy", "bleu",          "sacrebleu",  "chrf",
          "sentence_bleu", "n_bleu_gt_0",    "n_bleu_gt_0_8", "n_sentences"};
}

std::map<std::string, double> TranslationTask::score(const std::vector<ablate::Example>& references,
                                                     const std::vector<std::vector<std::int32_t>>& predictions) const {
  std::map<std::string, double> out = Task::score(references, predictions);  // checks the sizes
  // BLEU on the target tokens the ids stand for: pad/bos/eos in a prediction are no tokens
  // (dropped, as text() drops them), and <unk> (or an id outside the target vocabulary) never
  // matches, not even a reference's <unk>.
  constexpr std::int32_t kNoMatch = -1;
  BleuStats corpus;
  SacreBleu sacrebleu(sacrebleu_tokenizer_);  // and chrF: the detokenized hypothesis against the target as written
  Chrf chrf;
  double sentence_sum = 0.0;
  std::int64_t above_0 = 0, above_08 = 0;
  std::vector<std::int32_t> hypothesis;
  for (std::size_t i = 0; i < references.size(); ++i) {
    hypothesis.clear();
    for (std::int32_t id : predictions[i]) {
      if (id == Vocabulary::kPad || id == Vocabulary::kBos || id == Vocabulary::kEos) continue;
      hypothesis.push_back(id == Vocabulary::kUnk || id < 0 || id >= tgt_->vocab_size() ? kNoMatch : id);
    }
    const std::vector<std::int32_t>& reference = references[i].tgt;
    corpus.add(hypothesis, reference);
    const std::string hypothesis_text = text(predictions[i], true);
    // A reference without its text (an Example built by hand) reads as its tokens detokenized.
    const std::string reference_text = references[i].reference.empty() ? text(reference, true) : references[i].reference;
    sacrebleu.add(hypothesis_text, reference_text);
    chrf.add(hypothesis_text, reference_text);
    const double b = d2l_sentence_bleu(hypothesis, reference, static_cast<int>(bleu_k_));
    sentence_sum += b;
    above_0 += b > 0.0 ? 1 : 0;
    above_08 += b > 0.8 ? 1 : 0;
  }
  const auto n = static_cast<double>(references.size());
  out["bleu"] = corpus.score();
  out["sacrebleu"] = sacrebleu.score();
  out["chrf"] = chrf.score();
  out["sentence_bleu"] = sentence_sum / n;
  out["n_bleu_gt_0"] = static_cast<double>(above_0);
  out["n_bleu_gt_0_8"] = static_cast<double>(above_08);
  out["n_sentences"] = n;
  return out;
}

std::string TranslationTask::text(const std::vector<std::int32_t>& tokens, bool target) const {
  return side(target).decode(tokens);
}

ablate::Component* create(const ablate::Options& o) {
  return new ablate_text::DeferredTask(
      [o](const ablate::TaskContext& context) { return std::make_shared<TranslationTask>(o, context); });
}

ABLATE_PLUGIN("task", "translation", "1.5.0",
              "Translation of parallel text from a TSV file (word/char tokens or a tokenizer plugin, train-split "
              "vocabularies, joint or per side, BLEU, sacreBLEU, chrF)",
              ablate::options_of(kOptions), create)

}  // namespace task_translation
