// Plugin tokenizer/char: one token per Unicode code point, spaces and line breaks included (or
// dropped), with a vocabulary of the code points the training text holds (min_freq: rarer ones
// are <unk>). What a text task's `tokens: char` does, as a tokenizer any text task can take.
#include "ablate/plugin.hpp"
#include "text/vocabulary_tokenizer.hpp"

namespace tokenizer_char {
namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"lowercase", ablate::OptionType::Bool, "false", nullptr, "lower-case the text (ASCII, Latin-1/Extended-A, Greek, Cyrillic)"},
    {"whitespace", ablate::OptionType::String, "keep", "keep|drop",
     "keep: spaces and line breaks are tokens (decoding gives the text back); drop: they only separate (Chinese, Japanese)"},
    {"min_freq", ablate::OptionType::Int, "1", nullptr,
     "training-text count a character needs to enter the vocabulary; rarer ones are <unk>"},
};

ablate::Component* create(const ablate::Options& o) {
  ablate_text::VocabularyTokenizerOptions t;
  t.units.level = ablate_text::Level::Char;
  t.units.lowercase = o.get_bool("lowercase");
  t.keep_whitespace = o.get_string("whitespace") == "keep";
  t.min_freq = o.get_int("min_freq");
  return new ablate_text::VocabularyTokenizer(t);
}

}  // namespace

ABLATE_PLUGIN("tokenizer", "char", "1.0.0", "Characters (code points) with a training-text vocabulary",
              ablate::options_of(kOptions), create)

}  // namespace tokenizer_char
