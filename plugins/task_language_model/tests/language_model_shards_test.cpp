// Tests for task/language_model's shard mode (shard_task.hpp), on the public SDK and its test kit:
// windows read from shards as the files hold them, contiguous held-out tails or held-out shards,
// eval.lengths on them, and every bad shard or setting refused naming the file or the option.
// Trained end to end (with `ablate tokenize` and a resume): tests/plugins/task_language_model_shards_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "ablate/testing/kit.hpp"
#include "ablate/token_shards.hpp"
#include "shard_task.hpp"
#include "text/deferred_task.hpp"
#include "text/text_test_util.hpp"

namespace task_language_model {
namespace {

namespace fs = std::filesystem;
using ablate::Split;
using ablate_text::testing::error_of;
using ablate_text::testing::TempDir;
namespace kit = ablate::testing;

class LanguageModelShards : public ::testing::Test {
 protected:
  // A shard of `n` tokens, token i = (first + i) % vocab, written by the core's ShardWriter.
  fs::path shard(const std::string& name, std::int64_t n, std::int64_t first = 0, std::int64_t vocab = 1000) {
    const fs::path f = dir.path() / name;
    ablate::ShardWriter w(f, vocab);
    std::vector<std::int32_t> ids;
    for (std::int64_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>((first + i) % vocab));
    w.add(ids);
    w.finish();
    return f;
  }
  std::shared_ptr<ablate::Task> make(std::map<std::string, std::string> options) {
    options.emplace("shard_vocab_size", "1000");
    return kit::make_task("language_model", options);
  }
  std::string error(std::map<std::string, std::string> options) {
    return error_of([&] { make(std::move(options))->info(); });  // the task is built on first use
  }
  std::string at(const std::string& name) const { return (dir.path() / name).string(); }
  TempDir dir;
};

TEST_F(LanguageModelShards, WindowsAreTheShardsTokensAndTheHeldOutTailIsContiguous) {
  shard("train_0.bin", 1000, 0);    // 15 windows of 64 (40 tokens left over)
  shard("train_1.bin", 700, 1000);  // 10 windows (60 left over): 25 windows in all
  const auto t = make({{"shards", at("train_*.bin")}, {"context", "64"}, {"valid_fraction", "0.1"}, {"test_fraction", "0.05"}});
  EXPECT_EQ(t->info().type, ablate::TaskType::LanguageModel);
  EXPECT_EQ(t->info().vocab_size, 1003) << "the shards' 1000 ids after pad, bos, eos";
  EXPECT_EQ(t->info().max_tgt_len, 64);
  // ceil(0.05 * 25) = 2 test windows at the end, ceil(0.1 * 25) = 3 eval windows before them.
  ASSERT_EQ(t->size(Split::Train), 20);
  ASSERT_EQ(t->size(Split::Eval), 3);
  ASSERT_EQ(t->size(Split::Test), 2);
  // Window w of shard 0 is its tokens [64w, 64w + 64); of shard 1, shard 1's from its start.
  const auto expect_window = [&](Split split, std::int64_t index, std::int64_t first_token) {
    const std::vector<std::int32_t> tgt = t->example(split, index).tgt;
    ASSERT_EQ(tgt.size(), 64u);
    EXPECT_TRUE(t->example(split, index).cut) << "a window of the shards' stream: no eos after it";
    for (std::int64_t i = 0; i < 64; ++i)
      ASSERT_EQ(tgt[static_cast<std::size_t>(i)], (first_token + i) % 1000 + 3) << "window " << index << " token " << i;
  };
  expect_window(Split::Train, 0, 0);
  expect_window(Split::Train, 14, 14 * 64);
  expect_window(Split::Train, 15, 1000);  // shard 1 starts a window of its own (shard 0's tail is dropped)
  expect_window(Split::Train, 19, 1000 + 4 * 64);
  expect_window(Split::Eval, 0, 1000 + 5 * 64);  // eval follows train in shard order
  expect_window(Split::Eval, 2, 1000 + 7 * 64);
  expect_window(Split::Test, 0, 1000 + 8 * 64);
  expect_window(Split::Test, 1, 1000 + 9 * 64);  // test is the last windows
  EXPECT_NE(error_of([&] { t->example(Split::Test, 2); }).find("outside the test split's 2 windows"), std::string::npos);
  // eval.lengths: the held-out stretch (3 x 64 = 192 tokens) in windows of other lengths.
  EXPECT_EQ(t->size_at_length(Split::Eval, 32), 6);
  EXPECT_EQ(t->size_at_length(Split::Eval, 128), 1);
  EXPECT_EQ(t->example_at_length(Split::Eval, 5, 32).tgt.front(), (1000 + 5 * 64 + 5 * 32) % 1000 + 3);
  EXPECT_TRUE(t->example_at_length(Split::Eval, 5, 32).cut);
  EXPECT_EQ(t->text(t->example(Split::Eval, 0).tgt, true), "") << "ids without a tokenizer have no text";
}

TEST_F(LanguageModelShards, HeldOutShardsAreTheEvalAndTestSplitsAndNeverTrainingShards) {
  shard("train.bin", 640, 0);
  shard("valid.bin", 200, 500);  // 3 windows of 64
  shard("test.bin", 130, 900);   // 2 windows
  const auto t = make({{"shards", at("train.bin")},
                       {"eval_shards", at("valid.bin")},
                       {"test_shards", at("test.bin")},
                       {"context", "64"},
                       {"valid_fraction", "0.05"}});  // 0.05 is the default: says nothing
  EXPECT_EQ(t->size(Split::Train), 10) << "no tail held out of the training shards";
  EXPECT_EQ(t->size(Split::Eval), 3);
  EXPECT_EQ(t->size(Split::Test), 2);
  EXPECT_EQ(t->example(Split::Eval, 1).tgt.front(), 500 + 64 + 3);
  EXPECT_EQ(t->example(Split::Test, 1).tgt.back(), (900 + 127) % 1000 + 3);

  const std::string overlap = error({{"shards", at("*.bin")}, {"eval_shards", at("valid.bin")}});
  EXPECT_NE(overlap.find("valid.bin is matched by two of shards / eval_shards / test_shards"), std::string::npos) << overlap;
  const std::string both = error({{"shards", at("train.bin")}, {"eval_shards", at("valid.bin")}, {"valid_fraction", "0.2"}});
  EXPECT_NE(both.find("valid_fraction holds out a tail of `shards` for eval, but eval_shards is set"), std::string::npos) << both;
  const auto no_eval = make({{"shards", at("train.bin")}, {"valid_fraction", "0"}, {"test_fraction", "0"}, {"context", "64"}});
  EXPECT_EQ(no_eval->size(Split::Eval), 10) << "valid_fraction 0: evaluate on the train windows, as the text mode";
  EXPECT_EQ(no_eval->size(Split::Test), 0);
}

TEST_F(LanguageModelShards, WideShardsAreReadAsWrittenAndIdsAreCheckedWhenRead) {
  const fs::path wide = shard("wide.bin", 300, 69990, 70000);  // > 65536 ids: version 2, uint32 tokens
  EXPECT_EQ(ablate::read_shard_header(wide).version, 2);
  const auto t = kit::make_task("language_model", {{"shards", wide.string()},
                                                   {"context", "100"},
                                                   {"shard_vocab_size", "70000"},
                                                   {"test_fraction", "0"},
                                                   {"valid_fraction", "0"}});
  EXPECT_EQ(t->example(Split::Train, 0).tgt[9], 69999 + 3);
  EXPECT_EQ(t->example(Split::Train, 0).tgt[10], 0 + 3);
  const auto narrow = kit::make_task("language_model", {{"shards", wide.string()},
                                                        {"context", "100"},
                                                        {"shard_vocab_size", "69995"},
                                                        {"test_fraction", "0"},
                                                        {"valid_fraction", "0"}});
  const std::string id = error_of([&] { narrow->example(Split::Train, 0); });
  EXPECT_NE(id.find("wide.bin: token 5 is id 69995, outside the shard_vocab_size of 69995"), std::string::npos) << id;
  EXPECT_NE(id.find("GPT-2: 50257"), std::string::npos) << id;
}

TEST_F(LanguageModelShards, BadShardsAndSettingsAreRefusedNamingTheFileOrOption) {
  const fs::path good = shard("good.bin", 640);
  const auto damaged = [&](const std::string& name, std::int64_t at_byte, std::int32_t value, std::int64_t truncate_to = -1) {
    const fs::path f = dir.path() / name;
    fs::copy_file(good, f);
    if (at_byte >= 0) {
      std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(at_byte);
      io.write(reinterpret_cast<const char*>(&value), 4);
    }
    if (truncate_to >= 0) fs::resize_file(f, static_cast<std::uintmax_t>(truncate_to));
    return f.string();
  };
  const std::string magic = error({{"shards", damaged("magic.bin", 0, 12345)}});
  EXPECT_NE(magic.find("magic.bin is not a token shard"), std::string::npos) << magic;
  const std::string version = error({{"shards", damaged("version.bin", 4, 7)}});
  EXPECT_NE(version.find("version.bin: shard version 7; expected 1 (uint16 tokens) or 2 (uint32)"), std::string::npos) << version;
  const std::string truncated = error({{"shards", damaged("short.bin", -1, 0, 1024 + 100)}});
  EXPECT_NE(truncated.find("short.bin: the header counts 640 tokens"), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  const std::string none = error({{"shards", at("nothing_*.bin")}});
  EXPECT_NE(none.find("task/language_model: shards: '" + at("nothing_*.bin") + "' matches no file"), std::string::npos) << none;
  const std::string tiny = error({{"shards", shard("tiny.bin", 10).string()}, {"context", "64"}});
  EXPECT_NE(tiny.find("hold no whole window of context 64"), std::string::npos) << tiny;
  const std::string vocab = error_of([&] {
    kit::make_task("language_model", {{"shards", good.string()}})->info();
  });  // no shard_vocab_size
  EXPECT_NE(vocab.find("need shard_vocab_size, got 0"), std::string::npos) << vocab;
  const std::string file_too = error({{"shards", good.string()}, {"file", "x.txt"}});
  EXPECT_NE(file_too.find("`file` (a text file) and `shards` (token shards) are both set"), std::string::npos) << file_too;
  const std::string stray = error({{"shards", good.string()}, {"tokens", "word"}});
  EXPECT_NE(stray.find("tokens is an option of the text mode, but `shards` is set (shard mode); expected only context, "
                       "valid_fraction, test_fraction, shards, eval_shards, test_shards, shard_vocab_size"),
            std::string::npos)
      << stray;
  const std::string shard_option = error_of([&] { kit::make_task("language_model", {{"eval_shards", good.string()}}); });
  EXPECT_NE(shard_option.find("eval_shards is an option of the shard mode, but `file` and `shards` are empty"), std::string::npos)
      << shard_option;
  // A tokenizer file beside the shards names their vocabulary: the spec must name it too.
  std::ofstream(dir.path() / "tokenizer-text.bin") << "ablate-tokenizer 1 tokenizer/char 1.0.0 0123456789abcdef\n\n";
  const std::string beside = error({{"shards", at("good.bin")}});
  EXPECT_NE(beside.find("the shards were made with the tokenizer in " + at("tokenizer-text.bin") +
                        ", but the spec names no task.tokenizer"),
            std::string::npos)
      << beside;
  EXPECT_EQ(ablate::shard_glob(at("*.bin"), "x").size(), 5u) << "DIR/*.bin: the shards, not the tokenizer file beside them";
}

}  // namespace
}  // namespace task_language_model
