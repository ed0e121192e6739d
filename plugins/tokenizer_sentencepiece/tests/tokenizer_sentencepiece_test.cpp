// Tests for tokenizer/sentencepiece, through the public SDK and its test kit: Ablate's reserved
// ids, the line break piece, round trips, save/load, deterministic training, and the refusals
// (vocabulary sizes, text that cannot support a vocabulary, invalid UTF-8, foreign bytes), and
// subword sampling. Its ids against Python's sentencepiece: tests/plugins/sentencepiece_agreement_test.sh.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/task.hpp"
#include "ablate/testing/kit.hpp"
#include "ablate/tokenizer.hpp"
#include "text/text_test_util.hpp"

namespace tokenizer_sentencepiece {
namespace {

namespace kit = ablate::testing;
using ablate_text::testing::error_of;

// 600 lines of made-up words built from shared stems and affixes: text a subword model can compress.
std::vector<std::string> corpus() {
  const std::vector<std::string> stems = {"walk", "talk", "play", "read", "writ", "jump", "sing", "build", "paint", "cook"};
  const std::vector<std::string> affixes = {"", "s", "ed", "ing", "er", "ers"};
  std::vector<std::string> lines;
  std::uint64_t state = 7;
  for (int i = 0; i < 600; ++i) {
    std::string line;
    for (int w = 0; w < 8; ++w) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const auto r = static_cast<std::size_t>(state >> 33);
      line += (w ? " " : "") + (r % 7 == 0 ? std::string("re") : std::string()) + stems[r % stems.size()] +
              affixes[(r / 16) % affixes.size()];
    }
    lines.push_back(line + (i % 3 == 0 ? "." : ",") + "\n");
  }
  return lines;
}

std::shared_ptr<ablate::Tokenizer> trained(kit::OptionOverrides options = {{"vocab_size", "120"}}) {
  auto t = kit::make_component<ablate::Tokenizer>("sentencepiece", options);
  t->train(corpus());
  return t;
}

TEST(SentencePiece, ReservesAblatesIdsAndALineBreakPiece) {
  const auto t = trained();
  EXPECT_EQ(t->vocab_size(), 120);
  const std::vector<std::int32_t> ids = t->encode("walking talks\nplayed", nullptr);
  ASSERT_FALSE(ids.empty());
  for (std::int32_t id : ids) {
    EXPECT_GE(id, ablate::Tokenizer::kUnk) << "no pad / bos / eos in encoded text";
    EXPECT_LT(id, 120);
  }
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 4), 1) << "the line break is piece 4";
  EXPECT_EQ(t->decode(ids), "walking talks\nplayed") << "no space after the line break";
  EXPECT_EQ(t->encode("\n", nullptr).back(), 4);
  EXPECT_EQ(t->decode(t->encode("\n", nullptr)), "\n");
  EXPECT_LT(ids.size(), std::string("walking talks\nplayed").size()) << "subwords, not characters";
}

TEST(SentencePiece, DecodeDropsControlIdsAndReadsUnknownAsUnk) {
  const auto t = trained();
  const std::vector<std::int32_t> walk = t->encode("walk", nullptr);
  std::vector<std::int32_t> with_control = {ablate::TaskInfo::kBos};
  with_control.insert(with_control.end(), walk.begin(), walk.end());
  with_control.push_back(ablate::TaskInfo::kEos);
  with_control.push_back(ablate::TaskInfo::kPad);
  EXPECT_EQ(t->decode(with_control), "walk");
  std::int64_t unknown = -1;
  const std::vector<std::int32_t> greek = t->encode("walk ωμέγα", &unknown);
  EXPECT_GT(unknown, 0) << "characters the training text lacks are <unk> without byte_fallback";
  EXPECT_NE(t->decode(greek).find("<unk>"), std::string::npos) << t->decode(greek);
  EXPECT_NE(t->decode({walk[0], 100000}).find("<unk>"), std::string::npos) << "an id outside the vocabulary";
}

TEST(SentencePiece, ByteFallbackSpellsUnknownCharactersAsBytes) {
  const auto t = trained({{"vocab_size", "400"}, {"byte_fallback", "true"}});
  std::int64_t unknown = -1;
  const std::vector<std::int32_t> ids = t->encode("walk ωμέγα", &unknown);
  EXPECT_EQ(unknown, 0);
  EXPECT_EQ(t->decode(ids), "walk ωμέγα");
}

TEST(SentencePiece, SavedBytesRestoreTheSameIds) {
  const auto t = trained();
  auto restored = kit::make_component<ablate::Tokenizer>("sentencepiece", {{"vocab_size", "120"}});
  restored->load(t->save());
  for (const std::string& line : corpus()) ASSERT_EQ(restored->encode(line, nullptr), t->encode(line, nullptr)) << line;
  EXPECT_EQ(restored->vocab_size(), t->vocab_size());
}

TEST(SentencePiece, TrainingIsDeterministicForBpeAndUnigram) {
  for (const char* type : {"bpe", "unigram"}) {
    const kit::OptionOverrides o = {{"vocab_size", "150"}, {"model_type", type}};
    EXPECT_EQ(trained(o)->save(), trained(o)->save()) << type;
  }
  EXPECT_NE(trained({{"vocab_size", "150"}, {"model_type", "bpe"}})->save(),
            trained({{"vocab_size", "150"}, {"model_type", "unigram"}})->save());
}

TEST(SentencePiece, RefusesVocabularySizesAndTextThatCannotHoldThem) {
  for (const char* size : {"0", "7", "2147483648"}) {
    const std::string e = error_of([&] { kit::make_component<ablate::Tokenizer>("sentencepiece", {{"vocab_size", size}}); });
    EXPECT_NE(e.find("vocab_size must be in [8, 1048576], got " + std::string(size)), std::string::npos) << e;
  }
  const std::string big = error_of([] { trained({{"vocab_size", "50000"}}); });
  EXPECT_NE(big.find("training failed"), std::string::npos) << big;
  EXPECT_NE(big.find("lower it"), std::string::npos) << big;
  const std::string one_char = error_of([] {
    kit::make_component<ablate::Tokenizer>("sentencepiece", {{"vocab_size", "1000"}})
        ->train(std::vector<std::string>(200, "aaaaaaaaaaaaaaaa\n"));
  });
  EXPECT_NE(one_char.find("training failed"), std::string::npos) << one_char;
  const std::string latin1 =
      error_of([] { kit::make_component<ablate::Tokenizer>("sentencepiece")->train({"caf\xE9 au lait\n"}); });
  EXPECT_NE(latin1.find("training text 1 is not valid UTF-8 (at byte 4)"), std::string::npos) << latin1;
  const std::string alpha = error_of([] {
    kit::make_component<ablate::Tokenizer>("sentencepiece", {{"character_coverage", "0"}});
  });
  EXPECT_NE(alpha.find("character_coverage must be in (0, 1]"), std::string::npos) << alpha;
  const std::string blank = error_of([] { kit::make_component<ablate::Tokenizer>("sentencepiece")->train({"  \n", ""}); });
  EXPECT_NE(blank.find("no training text"), std::string::npos) << blank;
}

// Subword sampling (alpha, nbest): a segmentation per key, the same for the same key, spelling the
// text encode() reads; off by default.
TEST(SentencePiece, SubwordSamplingIsAFunctionOfTheKeyAndSpellsTheSameText) {
  const std::string text = "rewalking talkers\nplayed buildings";
  // alpha: BPE-dropout's merge drop rate; unigram's exponent on p (0.1 flattens a peaked model).
  for (const auto& [type, alpha] : {std::pair{"bpe", "0.5"}, std::pair{"unigram", "0.1"}}) {
    const auto t = trained({{"vocab_size", "150"}, {"model_type", type}, {"alpha", alpha}});
    ASSERT_TRUE(t->samples()) << type;
    const std::string spelled = t->decode(t->encode(text, nullptr));
    std::set<std::vector<std::int32_t>> seen;
    for (std::uint64_t key = 0; key < 24; ++key) {
      const std::vector<std::int32_t> ids = t->encode_sampled(text, key * 0x9E3779B97F4A7C15ULL);
      EXPECT_EQ(t->encode_sampled(text, key * 0x9E3779B97F4A7C15ULL), ids) << type << ": the same key draws the same";
      EXPECT_EQ(t->decode(ids), spelled) << type;
      seen.insert(ids);
    }
    EXPECT_GE(seen.size(), 6u) << type << ": 24 keys draw several segmentations";
  }
  const auto off = trained({{"vocab_size", "150"}});
  EXPECT_FALSE(off->samples());
  EXPECT_EQ(off->encode_sampled(text, 7), off->encode(text, nullptr)) << "alpha 0: no sampling";
}

TEST(SentencePiece, BpeDropoutOfOneDropsEveryMergeAndNbestBoundsUnigramSamples) {
  // alpha 1: every merge dropped, one piece per character of the normalised text (spaces as "▁").
  const auto chars = trained({{"vocab_size", "150"}, {"alpha", "1"}});
  EXPECT_EQ(chars->encode_sampled("walking talks", 3).size(), std::string("_walking_talks").size());
  EXPECT_LT(chars->encode("walking talks", nullptr).size(), 14u);
  // nbest 3: each sample one of the 3 best segmentations, so at most 3 over many keys.
  const auto three = trained({{"vocab_size", "150"}, {"model_type", "unigram"}, {"alpha", "1"}, {"nbest", "3"}});
  std::set<std::vector<std::int32_t>> seen;
  for (std::uint64_t key = 1; key <= 60; ++key) seen.insert(three->encode_sampled("rewalkers", key * 1000003));
  EXPECT_GE(seen.size(), 2u);
  EXPECT_LE(seen.size(), 3u);
}

TEST(SentencePiece, RefusesSamplingOptionsOutsideTheirRanges) {
  for (const char* alpha : {"-0.1", "1.5"}) {
    const std::string e = error_of([&] { kit::make_component<ablate::Tokenizer>("sentencepiece", {{"alpha", alpha}}); });
    EXPECT_NE(e.find("alpha must be in (0, 1] (0: no sampling), got"), std::string::npos) << e;
  }
  const std::string bpe = error_of([] {
    kit::make_component<ablate::Tokenizer>("sentencepiece", {{"alpha", "0.1"}, {"nbest", "8"}});
  });
  EXPECT_NE(bpe.find("nbest applies to unigram sampling, got 8 with model_type bpe"), std::string::npos) << bpe;
  for (const char* nbest : {"0", "1", "-2"}) {
    const std::string e = error_of([&] {
      kit::make_component<ablate::Tokenizer>("sentencepiece", {{"model_type", "unigram"}, {"alpha", "0.1"}, {"nbest", nbest}});
    });
    EXPECT_NE(e.find("nbest must be -1 (the whole lattice) or >= 2, got " + std::string(nbest)), std::string::npos) << e;
  }
}

TEST(SentencePiece, RefusesBytesItDidNotWriteAndUseBeforeTraining) {
  auto t = kit::make_component<ablate::Tokenizer>("sentencepiece");
  EXPECT_NE(error_of([&] { t->encode("walk", nullptr); }).find("used before train() or load()"), std::string::npos);
  EXPECT_NE(error_of([&] { t->load("ablate-vocabulary 1\n4:walk"); }).find("not a SentencePiece model"), std::string::npos);
}

}  // namespace
}  // namespace tokenizer_sentencepiece
