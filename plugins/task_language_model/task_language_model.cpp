// Plugin task/language_model: next-token prediction, in one of two modes chosen by `file`:
// synthetic (no file: a random Markov chain, markov_chain.hpp) or text (windows of a UTF-8 text
// file, char or word tokens, text_task.hpp). An option of the other mode set to anything but its
// default is refused, so a spec never carries a setting that silently does nothing.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "markov_chain.hpp"
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
};
constexpr std::size_t kSyntheticOptions = 6;  // kOptions[0 .. 6) belong to the synthetic mode, the rest to the text mode

// The synthetic mode reads ablate_synthetic::Settings: its options are the shared table's, with
// the same names and defaults (only the docs say "synthetic:").
constexpr bool same_as_the_shared_synthetic_options() {
  if (std::size(ablate_synthetic::kOptions) != kSyntheticOptions) return false;
  for (std::size_t i = 0; i < kSyntheticOptions; ++i)
    if (std::string_view(kOptions[i].name) != ablate_synthetic::kOptions[i].name ||
        std::string_view(kOptions[i].default_value) != ablate_synthetic::kOptions[i].default_value)
      return false;
  return true;
}
static_assert(same_as_the_shared_synthetic_options(),
              "keep kOptions[0 .. kSyntheticOptions) equal to ablate_synthetic::kOptions");

using ablate_text::differs_from_default;

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Refuses the options of the mode not chosen (and split_punctuation at char level).
void refuse_other_mode(const ablate::Options& o, bool text) {
  std::vector<std::string> stray, expected;
  for (std::size_t i = 0; i < std::size(kOptions); ++i) {
    const bool synthetic_option = i < kSyntheticOptions;
    const std::string name = kOptions[i].name;
    if (synthetic_option == text) {
      if (name != "file" && differs_from_default(o, kOptions[i])) stray.push_back(name);
    } else {
      expected.push_back(name);
    }
  }
  const std::string plugin = MarkovLanguageModel::kName;
  if (!stray.empty() && text)
    throw ablate::Error(plugin + ": " + joined(stray) + (stray.size() > 1 ? " are options" : " is an option") +
                            " of the synthetic mode, but `file` is set (text mode); expected only " + joined(expected),
                        "remove them: in text mode the vocabulary comes from the file's train windows, `context` sets the "
                        "example length and split_seed the split");
  if (!stray.empty())
    throw ablate::Error(plugin + ": " + joined(stray) + (stray.size() > 1 ? " are options" : " is an option") +
                            " of the text mode, but `file` is empty (synthetic mode: a random Markov chain); expected only " +
                            joined(expected),
                        "set file: PATH to train on a text file, or remove them");
  const auto split_seed = std::find_if(std::begin(kOptions), std::end(kOptions),
                                       [](const ablate::OptionInfo& i) { return std::string_view(i.name) == "split_seed"; });
  if (text && o.get_string("split") == "contiguous" && differs_from_default(o, *split_seed))
    throw ablate::Error(plugin +
                            ": split_seed shuffles the windows of split: random; with split: contiguous (the default) "
                            "nothing is shuffled",
                        "remove split_seed, or set split: random");
  if (text && o.get_string("tokens") == "char" && !o.get_bool("split_punctuation"))
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

}  // namespace

ablate::Component* create(const ablate::Options& o) {
  const bool text = !o.get_string("file").empty();
  refuse_other_mode(o, text);
  if (!text) return new MarkovLanguageModel(o);  // Task::prepare refuses a tokenizer
  return new ablate_text::DeferredTask([settings = text_settings(o), o](const ablate::TaskContext& context) {
    TextSettings s = settings;
    if (context.tokenizer) {
      ablate_text::refuse_with_tokenizer(
          o, ablate::options_of(kOptions), {"tokens", "lowercase", "split_punctuation", "min_freq", "max_examples", "split"},
          TextLanguageModel::kName,
          "the tokenizer sets the units and the vocabulary; the lines are split contiguously before tokenizing");
      s.tokenizer = context.tokenizer("text");
    }
    return std::make_shared<TextLanguageModel>(s);
  });
}

ABLATE_PLUGIN("task", "language_model", "1.3.0",
              "Language model: a synthetic Markov chain, or windows of a text file (char/word tokens or a tokenizer plugin, "
              "train-split vocabulary, held-out stretches at its end)",
              ablate::options_of(kOptions), create)

}  // namespace task_language_model
