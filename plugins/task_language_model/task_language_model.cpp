// Plugin task/language_model: next-token prediction, in one of three modes chosen by `file` and
// `shards`: synthetic (neither: a random Markov chain, markov_chain.hpp), text (windows of a UTF-8
// text file, char or word tokens or a tokenizer plugin, text_task.hpp) or shards (windows of token
// shards read on demand, shard_task.hpp). An option of another mode set to anything but its
// default is refused, so a spec never carries a setting that silently does nothing.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/token_shards.hpp"
#include "markov_chain.hpp"
#include "shard_task.hpp"
#include "text_task.hpp"
#include "text/corpus_settings.hpp"
#include "text/deferred_task.hpp"
#include "text/text_file.hpp"

namespace task_language_model {
namespace {

constexpr ablate::OptionInfo kOptions[] = {
    // Synthetic mode (file empty): the shared options of the synthetic tasks.
    {"vocab_size", ablate::OptionType::Int, "32", nullptr, "synthetic: token ids incl. the 3 reserved ones (pad, bos, eos)"},
    {"min_len", ablate::OptionType::Int, "4", nullptr, "synthetic: shortest sequence, in content tokens"},
    {"max_len", ablate::OptionType::Int, "12", nullptr, "synthetic: longest sequence, in content tokens"},
    {"train_examples", ablate::OptionType::Int, "20000", nullptr, "synthetic: examples in the train split"},
    {"eval_examples", ablate::OptionType::Int, "500", nullptr, "synthetic: examples in the eval split"},
    {"seed", ablate::OptionType::Int, "1", nullptr,
     "synthetic: seed of the Markov chain and the data (independent of the training seed)"},
    // Text mode (file set).
    {"file", ablate::OptionType::String, "", nullptr,
     "UTF-8 text file to model (relative to the current directory); empty = the synthetic Markov chain"},
    {"tokens", ablate::OptionType::String, "char", "char|word",
     "text: char (every character, spaces and line breaks included) or word (whitespace/punctuation split, "
     "a line break is a token)"},
    {"lowercase", ablate::OptionType::Bool, "false", nullptr,
     "text: lower-case the text (ASCII, Latin-1/Extended-A, Greek, Cyrillic)"},
    {"split_punctuation", ablate::OptionType::Bool, "true", nullptr,
     "text, tokens: word: punctuation characters become their own tokens (don't, 3.5 stay whole)"},
    {"min_freq", ablate::OptionType::Int, "1", nullptr,
     "text: train-split count a token needs to enter the vocabulary; rarer ones are <unk>"},
    {"context", ablate::OptionType::Int, "64", nullptr, "text: tokens per example (a window; the model reads bos + window)"},
    {"max_examples", ablate::OptionType::Int, "0", nullptr, "text: keep the first N windows of the file; 0 = all"},
    {"valid_fraction", ablate::OptionType::Float, "0.05", nullptr,
     "text: fraction of the windows in the eval split (rounded up; 0 = evaluate on the train windows)"},
    {"test_fraction", ablate::OptionType::Float, "0.05", nullptr,
     "text: fraction of the windows in the held-out test split (rounded up; 0 = none)"},
    {"split", ablate::OptionType::String, "contiguous", "contiguous|random",
     "text: contiguous (train is the text's start, then the eval stretch, then the test stretch at its end: no held-out "
     "window has a training neighbour, and eval.lengths cuts the held-out stretch into windows of each length) or random "
     "(windows shuffled into the splits by split_seed, before 1.2.0 the only split: held-out windows sit between training "
     "windows of the same passage)"},
    {"split_seed", ablate::OptionType::Int, "1", nullptr,
     "text, split: random: seed of the shuffle that assigns windows to train/eval/test"},
    // Shard mode (shards set; context, valid_fraction and test_fraction above apply too).
    {"shards", ablate::OptionType::String, "", nullptr,
     "token shards to train on (a glob, relative to the current directory, e.g. data/shards/train_*.bin; llm.c's format, "
     "as `ablate tokenize` writes it), read a window at a time; empty = not the shard mode. With tokenizer-text.bin beside "
     "the first shard, task.tokenizer must name that tokenizer"},
    {"eval_shards", ablate::OptionType::String, "", nullptr,
     "shards: the eval split's shards (a glob); empty = the last valid_fraction of the windows of `shards`"},
    {"test_shards", ablate::OptionType::String, "", nullptr,
     "shards: the test split's shards (a glob); empty = the last test_fraction of the windows of `shards`"},
    {"shard_vocab_size", ablate::OptionType::Int, "0", nullptr,
     "shards without a tokenizer file (another tool's, e.g. GPT-2 ids: 50257): their ids 0 .. N-1, read as 3 .. N+2 "
     "(0-2 are pad, bos, eos)"},
};
constexpr std::size_t kSyntheticOptions = 6;  // kOptions[0 .. 6) belong to the synthetic mode

// The declared option `name` (one of kOptions).
const ablate::OptionInfo& option_named(std::string_view name) {
  return *std::find_if(std::begin(kOptions), std::end(kOptions), [&](const ablate::OptionInfo& i) { return i.name == name; });
}

enum class Mode { Synthetic, Text, Shards };
constexpr const char* kModeName[] = {"synthetic", "text", "shard"};
// Whether option `name` (kOptions[i]) belongs to `mode`.
bool in_mode(std::size_t i, Mode mode) {
  const std::string_view name = kOptions[i].name;
  if (i < kSyntheticOptions) return mode == Mode::Synthetic;
  const bool shard_option = name == "shards" || name == "eval_shards" || name == "test_shards" || name == "shard_vocab_size";
  const bool both = name == "context" || name == "valid_fraction" || name == "test_fraction";
  if (mode == Mode::Shards) return shard_option || both;
  return mode == Mode::Text && !shard_option;
}

// The synthetic mode reads ablate::synthetic::Settings: its options are the shared table's, with
// the same names and defaults (only the docs say "synthetic:").
constexpr bool same_as_the_shared_synthetic_options() {
  if (std::size(ablate::synthetic::kOptions) != kSyntheticOptions) return false;
  for (std::size_t i = 0; i < kSyntheticOptions; ++i)
    if (std::string_view(kOptions[i].name) != ablate::synthetic::kOptions[i].name ||
        std::string_view(kOptions[i].default_value) != ablate::synthetic::kOptions[i].default_value)
      return false;
  return true;
}
static_assert(same_as_the_shared_synthetic_options(),
              "keep kOptions[0 .. kSyntheticOptions) equal to ablate::synthetic::kOptions");

using ablate_text::differs_from_default;

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Refuses the options of the modes not chosen (and split_punctuation at char level).
void refuse_other_mode(const ablate::Options& o, Mode mode) {
  const std::string plugin = MarkovLanguageModel::kName;
  if (mode == Mode::Shards && !o.get_string("file").empty())
    throw ablate::Error(plugin + ": `file` (a text file) and `shards` (token shards) are both set; expected one of them",
                        "train on the text file, or on shards made from it with `ablate tokenize`");
  std::vector<std::string> stray, expected;
  std::optional<Mode> stray_mode;
  for (std::size_t i = 0; i < std::size(kOptions); ++i) {
    const std::string name = kOptions[i].name;
    if (in_mode(i, mode)) {
      expected.push_back(name);
    } else if (name != "file" && name != "shards" && differs_from_default(o, kOptions[i])) {
      stray.push_back(name);
      if (!stray_mode) stray_mode = i < kSyntheticOptions ? Mode::Synthetic : in_mode(i, Mode::Text) ? Mode::Text : Mode::Shards;
    }
  }
  const char* selected[] = {"`file` and `shards` are empty (synthetic mode: a random Markov chain)", "`file` is set (text mode)",
                            "`shards` is set (shard mode)"};
  const char* hints[] = {"set file: PATH to train on a text file, shards: GLOB on token shards, or remove them",
                         "remove them: in text mode the vocabulary comes from the file's train windows, `context` sets the "
                         "example length and split_seed the split",
                         "remove them: in shard mode the shards hold token ids, `context` sets the example length and "
                         "eval_shards / test_shards or the fractions the held-out text"};
  if (!stray.empty())
    throw ablate::Error(plugin + ": " + joined(stray) + (stray.size() > 1 ? " are options" : " is an option") + " of the " +
                            kModeName[static_cast<int>(*stray_mode)] + " mode, but " + selected[static_cast<int>(mode)] +
                            "; expected only " + joined(expected),
                        hints[static_cast<int>(mode)]);
  if (mode != Mode::Text) return;
  if (o.get_string("split") == "contiguous" && differs_from_default(o, option_named("split_seed")))
    throw ablate::Error(plugin +
                            ": split_seed shuffles the windows of split: random; with split: contiguous (the default) "
                            "nothing is shuffled",
                        "remove split_seed, or set split: random");
  if (o.get_string("tokens") == "char" && !o.get_bool("split_punctuation"))
    throw ablate::Error(plugin + ": split_punctuation applies to tokens: word; with tokens: char every character is a token",
                        "remove split_punctuation, or set tokens: word");
}

TextSettings text_settings(const ablate::Options& o) {
  TextSettings s;
  s.file = o.get_string("file");
  s.stream.tokenizer = ablate_text::tokenizer_options(o, "tokens");
  s.stream.context = o.get_int("context");
  s.corpus = ablate_text::corpus_settings(o, TextLanguageModel::kName, "window of the file");
  s.stream.max_examples = s.corpus.max_examples;
  s.corpus.contiguous = o.get_string("split") == "contiguous";
  return s;
}

// The shard mode's settings and tokenizer: task.tokenizer restored from tokenizer-text.bin beside
// the first shard, or none (another tool's shards: shard_vocab_size).
ShardSettings shard_settings(const ablate::Options& o, const ablate::TaskContext& context) {
  const std::string plugin = MarkovLanguageModel::kName;
  ShardSettings s;
  s.shards = o.get_string("shards");
  s.eval_shards = o.get_string("eval_shards");
  s.test_shards = o.get_string("test_shards");
  s.context = o.get_int("context");
  s.shard_vocab_size = o.get_int("shard_vocab_size");
  const ablate_text::CorpusSettings corpus = ablate_text::corpus_settings(o, plugin, "window of the shards");
  s.valid_fraction = corpus.valid_fraction;
  s.test_fraction = corpus.test_fraction;
  if (!s.eval_shards.empty() && differs_from_default(o, option_named("valid_fraction")))
    throw ablate::Error(plugin + ": valid_fraction holds out a tail of `shards` for eval, but eval_shards is set",
                        "remove valid_fraction (eval_shards is the eval split), or eval_shards");
  if (!s.test_shards.empty() && differs_from_default(o, option_named("test_fraction")))
    throw ablate::Error(plugin + ": test_fraction holds out a tail of `shards` for test, but test_shards is set",
                        "remove test_fraction (test_shards is the test split), or test_shards");

  const std::vector<std::filesystem::path> first = ablate::shard_glob(s.shards, plugin + ": shards");
  const std::filesystem::path file = first.front().parent_path() / "tokenizer-text.bin";
  std::error_code ec;
  const bool beside = std::filesystem::exists(file, ec);
  if (beside && !context.stored_tokenizer)
    throw ablate::Error(
        plugin + ": the shards were made with the tokenizer in " + file.string() + ", but the spec names no task.tokenizer",
        "set task.tokenizer to the tokenizer the shards were made with (the file's second line lists its "
        "options): the run then decodes its samples and keeps the tokenizer for eval and export");
  if (beside && s.shard_vocab_size != 0)
    throw ablate::Error(
        plugin + ": shard_vocab_size is for shards without a tokenizer file, but " + file.string() + " names their vocabulary",
        "remove shard_vocab_size");
  if (!beside && context.tokenizer)
    throw ablate::Error(plugin + ": task.tokenizer is set, but " + first.front().parent_path().string() +
                            " has no tokenizer-text.bin to check the shards' ids against",
                        "shards made by `ablate tokenize` have one beside them; for another tool's shards remove "
                        "task.tokenizer and set shard_vocab_size");
  if (!beside && s.shard_vocab_size < 1)
    throw ablate::Error(plugin + ": shards without a tokenizer file (" + file.string() +
                            " does not exist) need shard_vocab_size, got " + std::to_string(s.shard_vocab_size),
                        "set shard_vocab_size to the vocabulary the shards were made with (GPT-2: 50257), or make the "
                        "shards with `ablate tokenize`");
  if (beside) s.tokenizer = context.stored_tokenizer("text", file.string());
  return s;
}

}  // namespace

ablate::Component* create(const ablate::Options& o) {
  const Mode mode = !o.get_string("shards").empty() ? Mode::Shards : !o.get_string("file").empty() ? Mode::Text : Mode::Synthetic;
  refuse_other_mode(o, mode);
  if (mode == Mode::Synthetic) return new MarkovLanguageModel(o);  // Task::prepare refuses a tokenizer
  if (mode == Mode::Shards)
    return new ablate_text::DeferredTask(
        [o](const ablate::TaskContext& context) { return std::make_shared<ShardLanguageModel>(shard_settings(o, context)); });
  return new ablate_text::DeferredTask([settings = text_settings(o), o](const ablate::TaskContext& context) {
    TextSettings s = settings;
    s.keep_tokenizer = context.keep_tokenizer;
    if (context.tokenizer) {
      ablate_text::refuse_with_tokenizer(
          o, ablate::options_of(kOptions), {"tokens", "lowercase", "split_punctuation", "min_freq", "max_examples", "split"},
          TextLanguageModel::kName,
          "the tokenizer sets the units and the vocabulary; the lines are split contiguously before tokenizing");
      s.tokenizer = context.tokenizer("text");
      if (s.tokenizer->samples())
        throw ablate::Error(std::string(TextLanguageModel::kName) +
                                ": task.tokenizer samples segmentations (alpha), but a language model cuts its windows "
                                "from one encoded stream, segmented once",
                            "subword sampling applies to translation and classification: remove alpha from task.tokenizer");
    }
    return std::make_shared<TextLanguageModel>(s);
  });
}

ABLATE_PLUGIN("task", "language_model", "1.5.0",
              "Language model: a synthetic Markov chain, windows of a text file (char/word tokens or a tokenizer plugin, "
              "train-split vocabulary, held-out stretches at its end), or windows of token shards read on demand",
              ablate::options_of(kOptions), create)

}  // namespace task_language_model
