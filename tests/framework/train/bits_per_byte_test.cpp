// Tests for eval.metrics' bits_per_byte (framework/train/evaluator.cpp, text_bytes): with character
// tokens it is the loss in bits, with subwords the bytes of a stretch's windows add up to the
// stretch's and a line's to its own, and a task without text skips it with a note.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/test_dirs.hpp"
#include "train/evaluator.hpp"
#include "train/experiment.hpp"
#include "validation/validation.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;

// 80 lines over a few words: every character and word occurs in the train lines, so no held-out
// token is <unk> and the bytes a window spells are the file's.
std::string corpus() {
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"};
  std::string text;
  for (int i = 0; i < 80; ++i) {
    for (int w = 0; w < 6; ++w) text += (w ? " " : "") + words[static_cast<std::size_t>((i * 7 + w * 3 + w * i) % 10)];
    text += "\n";
  }
  return text;
}

class BitsPerByte : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("bits_per_byte");
    std::ofstream(dir_ / "text.txt") << corpus();
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A tiny decoder LM over the file (untrained: the identities hold for any weights).
  validation::LoadedSpec load(const std::string& tokenizer) {
    std::ofstream(dir_ / "spec.yaml") << "name: bpb\n"
                                      << "task: {plugin: language_model, file: " << (dir_ / "text.txt").string()
                                      << ", context: 16, valid_fraction: 0.2, test_fraction: 0.1" << tokenizer << "}\n"
                                      << "model: {arch: decoder, d_model: 16, heads: 2, layers: 1, d_ff: 32, dropout: 0.0}\n"
                                      << "backend: reference\n"
                                      << "train: {steps: 1, batch_size: 4}\n"
                                      << "eval: {batches: 3, metrics: [loss, bits_per_byte]}\n";
    std::ostringstream err;
    return validation::load_validated_spec((dir_ / "spec.yaml").string(), {{}, {}}, err);
  }
  fs::path dir_;
};

const std::vector<spec::Metric> kMetrics = {spec::Metric::loss, spec::Metric::bits_per_byte};

TEST_F(BitsPerByte, CharacterTokensGiveTheLossInBits) {
  const validation::LoadedSpec loaded = load("");
  Experiment ex(loaded.spec, *loaded.registry);
  ASSERT_TRUE(ex.has_text());
  for (std::int64_t i = 0; i < ex.task->size(Split::Eval); ++i)
    EXPECT_EQ(text_bytes(ex, ex.task->example(Split::Eval, i).tgt), 16) << "window " << i << ": 16 ASCII characters";
  const Evaluation e = evaluate(ex, kMetrics, Split::Eval);
  // A window's 16 tokens are scored (no eos after a cut window) and spell 16 bytes.
  EXPECT_NEAR(e.metrics.at("bits_per_byte"), e.metrics.at("loss") / std::log(2.0), 1e-9);
}

TEST_F(BitsPerByte, SubwordBytesAddUpToTheText) {
  const validation::LoadedSpec loaded = load(", tokenizer: {plugin: sentencepiece, vocab_size: 40, model_type: bpe}");
  Experiment ex(loaded.spec, *loaded.registry);
  // A line's pieces spell its bytes, the word boundaries' spaces included.
  for (const std::string line : {"the cat sat on a mat\n", "dog ran far\n", "a\n"})
    EXPECT_EQ(text_bytes(ex, ex.task->encode(line, true, nullptr)), static_cast<std::int64_t>(line.size())) << line;
  // The eval stretch's windows: their bytes, each after the window before it, add up to the bytes
  // of the stretch they cut, though a window may start at a word boundary (a piece with its
  // space) and a piece spans several bytes.
  std::vector<std::int32_t> stretch;
  std::int64_t sum = 0, tokens = 0, alone = 0;
  const std::int64_t n = std::min<std::int64_t>(ex.task->size(Split::Eval), 3 * 4);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::vector<std::int32_t> w = ex.task->example(Split::Eval, i).tgt;
    sum += text_bytes(ex, w, stretch.empty() ? -1 : stretch.back());
    alone += text_bytes(ex, w);
    tokens += static_cast<std::int64_t>(w.size());
    stretch.insert(stretch.end(), w.begin(), w.end());
  }
  EXPECT_EQ(sum, text_bytes(ex, stretch));
  EXPECT_LT(alone, sum) << "windows read alone lose the space of a word they start with";
  EXPECT_GT(sum, tokens) << "subwords spell more than a byte each";
  const Evaluation e = evaluate(ex, kMetrics, Split::Eval);
  EXPECT_NEAR(e.metrics.at("bits_per_byte"),
              e.metrics.at("loss") * static_cast<double>(tokens) / (std::log(2.0) * static_cast<double>(sum)), 1e-9);
}

TEST_F(BitsPerByte, ATaskWithoutTextSkipsItWithANote) {
  std::ofstream(dir_ / "copy.yaml") << "name: copy\ntask: {plugin: copy, vocab_size: 16, max_len: 6}\n"
                                    << "model: {d_model: 16, heads: 2, layers: 1, d_ff: 32}\nbackend: reference\n"
                                    << "train: {steps: 1, batch_size: 4}\neval: {metrics: [loss, bits_per_byte]}\n";
  std::ostringstream err;
  const validation::LoadedSpec loaded = validation::load_validated_spec((dir_ / "copy.yaml").string(), {{}, {}}, err);
  Experiment ex(loaded.spec, *loaded.registry);
  EXPECT_FALSE(ex.has_text());
  std::vector<std::string> skipped;
  const std::vector<spec::Metric> m = applicable_metrics(ex.spec, ex.task_info, ex.has_text(), &skipped);
  EXPECT_EQ(m, std::vector<spec::Metric>{spec::Metric::loss});
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("bits_per_byte (bits per byte of the target text; task/copy's tokens spell no text)"),
            std::string::npos)
      << skipped[0];
}

}  // namespace
}  // namespace ablate::train
