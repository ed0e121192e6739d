// Plugin tokenizer/word: words split at whitespace (and punctuation, as its own tokens), a line
// break as a token, with a vocabulary of the words the training text holds (min_freq: rarer ones
// are <unk>). What a text task's `tokens: word` does, as a tokenizer any text task can take.
#include "ablate/plugin.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace tokenizer_word {
namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"lowercase", ablate::OptionType::Bool, "false", nullptr, "lower-case the text (ASCII, Latin-1/Extended-A, Greek, Cyrillic)"},
    {"split_punctuation", ablate::OptionType::Bool, "true", nullptr,
     "punctuation characters become their own tokens (don't, 3.5, twenty-one stay whole)"},
    {"min_freq", ablate::OptionType::Int, "1", nullptr,
     "training-text count a word needs to enter the vocabulary; rarer ones are <unk>"},
};

ablate::Component* create(const ablate::Options& o) {
  ablate_text::VocabularyTokenizerOptions t;
  t.units.level = ablate_text::Level::Word;
  t.units.lowercase = o.get_bool("lowercase");
  t.units.split_punctuation = o.get_bool("split_punctuation");
  t.min_freq = o.get_int("min_freq");
  return new ablate_text::VocabularyTokenizer(t);
}

}  // namespace

ABLATE_PLUGIN("tokenizer", "word", "1.0.0", "Words (whitespace and punctuation split) with a training-text vocabulary",
              ablate::options_of(kOptions), create)

}  // namespace tokenizer_word
