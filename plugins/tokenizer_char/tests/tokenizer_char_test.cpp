// Tests for tokenizer/char through the public SDK and its test kit: every code point a token
// (spaces and line breaks kept, so text decodes back as written; or dropped), lower-casing, and
// <unk> for characters the training text lacks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ablate/testing/kit.hpp"
#include "ablate/tokenizer.hpp"

namespace tokenizer_char {
namespace {

namespace kit = ablate::testing;

const std::vector<std::string> kText = {"Señor, ¿qué tal?\n", "Muy bien.\n", "我很好。\n"};

TEST(CharTokenizer, KeepsSpacesAndLineBreaksSoTextDecodesBack) {
  auto t = kit::make_component<ablate::Tokenizer>("char");
  t->train(kText);
  const std::string text = "Muy bien, Señor.\n我很好";
  const std::vector<std::int32_t> ids = t->encode(text, nullptr);
  EXPECT_EQ(ids.size(), 20u) << "one id per code point";
  EXPECT_EQ(t->decode(ids), text);
  std::int64_t unknown = 0;
  EXPECT_EQ(t->decode(t->encode("Muy bien!", &unknown)), "Muy bien<unk>");
  EXPECT_EQ(unknown, 1);
}

TEST(CharTokenizer, DropsWhitespaceAndLowerCasesWhenAsked) {
  auto t = kit::make_component<ablate::Tokenizer>("char", {{"whitespace", "drop"}, {"lowercase", "true"}});
  t->train(kText);
  EXPECT_EQ(t->decode(t->encode("MUY bien\n好", nullptr)), "muybien好");
  auto kept = kit::make_component<ablate::Tokenizer>("char");
  kept->train(kText);
  EXPECT_EQ(t->vocab_size() + 2, kept->vocab_size()) << "no space and no line break in the vocabulary";
}

}  // namespace
}  // namespace tokenizer_char
