// Tests for tokenizer/word through the public SDK and its test kit: the same units and vocabulary
// as a text task's own `tokens: word` (ablate_text::Tokenizer and Vocabulary), the line break
// token, decoding, min_freq, and save/load.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ablate/testing/kit.hpp"
#include "ablate/tokenizer.hpp"
#include "text/text_test_util.hpp"
#include "text/tokenizer.hpp"
#include "text/vocabulary.hpp"

namespace tokenizer_word {
namespace {

namespace kit = ablate::testing;
using ablate_text::testing::error_of;

const std::vector<std::string> kText = {"The cat sat.\n", "The dog, the cat!\n", "\n", "A dog's bone.\n"};

TEST(WordTokenizer, HasTheUnitsAndVocabularyOfATasksOwnWordTokens) {
  auto t = kit::make_component<ablate::Tokenizer>("word", {{"lowercase", "true"}});
  t->train(kText);
  ablate_text::TokenizerOptions o;
  o.level = ablate_text::Level::Word;
  o.lowercase = true;
  const ablate_text::Tokenizer words(o);
  ablate_text::Vocabulary::Builder counts;
  for (const std::string& line : kText) {
    std::vector<std::string> units = words.tokenize(line);
    if (!units.empty()) units.push_back("\n");  // a line with words ends with the line break token
    counts.add(units);
  }
  const ablate_text::Vocabulary v = counts.build(1);
  ASSERT_EQ(t->vocab_size(), v.size());
  EXPECT_EQ(t->encode("the dog's cat , bone", nullptr), v.encode({"the", "dog's", "cat", ",", "bone"}));
  EXPECT_EQ(t->encode("a\nbone", nullptr), v.encode({"a", "\n", "bone"}));
}

TEST(WordTokenizer, DecodesWithSpacesButNoneAroundLineBreaks) {
  auto t = kit::make_component<ablate::Tokenizer>("word");
  t->train(kText);
  EXPECT_EQ(t->decode(t->encode("The cat sat.\nThe dog", nullptr)), "The cat sat .\nThe dog");
  std::int64_t unknown = 0;
  EXPECT_EQ(t->decode(t->encode("The zebra", &unknown)), "The <unk>");
  EXPECT_EQ(unknown, 1);
}

TEST(WordTokenizer, MinFreqAndSaveLoad) {
  auto rare = kit::make_component<ablate::Tokenizer>("word", {{"min_freq", "2"}});
  rare->train(kText);
  std::int64_t unknown = 0;
  rare->encode("sat bone", &unknown);
  EXPECT_EQ(unknown, 2) << "words seen once are <unk> at min_freq 2";
  auto restored = kit::make_component<ablate::Tokenizer>("word", {{"min_freq", "2"}});
  restored->load(rare->save());
  EXPECT_EQ(restored->vocab_size(), rare->vocab_size());
  EXPECT_EQ(restored->encode("The cat, the dog.\n", nullptr), rare->encode("The cat, the dog.\n", nullptr));
  EXPECT_NE(error_of([&] { restored->load("something else"); }).find("not a vocabulary saved by a char or word tokenizer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rare->load("ablate-vocabulary 1\n3:cat3:cat"); }).find("lists the token 'cat' twice"),
            std::string::npos);
  auto none = kit::make_component<ablate::Tokenizer>("word", {{"min_freq", "100"}});
  EXPECT_NE(error_of([&] { none->train(kText); }).find("leaves no unit"), std::string::npos);
}

}  // namespace
}  // namespace tokenizer_word
