// Tests for a run's tokenizers (train/tokenizer_store.hpp) and `ablate tokenize`
// (ablate/token_shards.hpp) end to end: a run trains its task.tokenizer once through the cache and
// keeps it in its folder, eval reads text with that one; the spec key, the refusals, and the shard
// files with their header checks.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ablate/error.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/tiny_run.hpp"
#include "ablate/token_shards.hpp"
#include "train/tokenizer_store.hpp"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

const fs::path kFable =
    fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_language_model" / "tests" / "data" / "language_model_fable.txt";

// The test's own tokenizer cache (ABLATE_CACHE_DIR), restored afterwards.
class TokenizerRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("ABLATE_CACHE_DIR")) old_ = old;
    ::setenv("ABLATE_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
    fs::copy_file(kFable, corpus());
  }
  void TearDown() override {
    if (old_.empty())
      ::unsetenv("ABLATE_CACHE_DIR");
    else
      ::setenv("ABLATE_CACHE_DIR", old_.c_str(), 1);
  }
  fs::path corpus() const { return dir.path() / "fable.txt"; }
  fs::path cache() const { return dir.path() / "cache" / "tokenizers"; }
  // A tiny LM of the fable with `tokenizer` (empty: none, the task's own `tokens`); `extra` adds
  // task options ("tokens: word, ").
  std::string spec(const std::string& tokenizer = "{plugin: sentencepiece, vocab_size: 90}",
                   const std::string& extra = "") const {
    return testing::TinyRun{.name = "tokenized_lm",
                            .task = "{plugin: language_model, file: " + corpus().string() + ", " + extra +
                                    "context: 32, valid_fraction: 0.1, test_fraction: 0.1" +
                                    (tokenizer.empty() ? std::string() : ", tokenizer: " + tokenizer) + "}",
                            .arch = "decoder",
                            .backend = "{plugin: onednn, threads: 1}",
                            .steps = 6,
                            .batch_size = 4,
                            .log_every = 3,
                            .eval_every = 6,
                            .eval_batches = 1,
                            .metrics = "loss, perplexity"}
        .yaml();
  }
  testing::CliResult run(const std::string& name, const std::string& yaml) {
    std::ofstream(dir.path() / (name + ".yaml")) << yaml;
    return run_cli(
        {"run", (dir.path() / (name + ".yaml")).string(), "--out", (dir.path() / name).string(), "--progress", "quiet"});
  }
  static std::string bytes(const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static int entries(const fs::path& d) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(d)) n += e.path().extension() == ".bin";
    return n;
  }
  testing::TempDir dir;
  std::string old_;
};

TEST_F(TokenizerRun, ARunTrainsItsTokenizerOnceAndKeepsItInItsFolder) {
  const auto first = run("a", spec());
  ASSERT_EQ(first.code, cli::kExitOk) << first.err;
  const fs::path stored = dir.path() / "a" / "tokenizer-text.bin";
  ASSERT_TRUE(fs::exists(stored));
  EXPECT_EQ(entries(cache()), 1);
  const train::StoredTokenizer t = train::read_stored_tokenizer(stored);
  EXPECT_EQ(t.plugin, "tokenizer/sentencepiece");
  EXPECT_NE(t.options.find("vocab_size=90;"), std::string::npos) << t.options;
  const auto second = run("b", spec());  // another run of the same text: the cached tokenizer
  ASSERT_EQ(second.code, cli::kExitOk) << second.err;
  EXPECT_EQ(bytes(dir.path() / "b" / "tokenizer-text.bin"), bytes(stored));
  EXPECT_EQ(entries(cache()), 1) << "trained once";
  const auto other = run("c", spec("{plugin: sentencepiece, vocab_size: 80}"));
  ASSERT_EQ(other.code, cli::kExitOk) << other.err;
  EXPECT_EQ(entries(cache()), 2) << "other options, another tokenizer";
  EXPECT_NE(train::read_stored_tokenizer(dir.path() / "c" / "tokenizer-text.bin").key, t.key);
}

TEST_F(TokenizerRun, EvalReadsTextWithTheRunsOwnTokenizer) {
  ASSERT_EQ(run("a", spec()).code, cli::kExitOk);
  const fs::path stored = dir.path() / "a" / "tokenizer-text.bin";
  const std::string before = bytes(stored);
  fs::remove_all(cache());
  const auto eval = run_cli({"eval", (dir.path() / "a").string(), "--split", "test"});
  ASSERT_EQ(eval.code, cli::kExitOk) << eval.err;
  EXPECT_FALSE(fs::exists(cache()) && entries(cache()) > 0) << "nothing trained again";
  EXPECT_EQ(bytes(stored), before) << "never written over";
  // Another tokenizer in the run folder is what eval reads, and refuses.
  ASSERT_EQ(run_cli({"tokenize", "--tokenizer", "char", "--train", corpus().string(), "--out", (dir.path() / "t").string(),
                     corpus().string()})
                .code,
            cli::kExitOk);
  fs::copy_file(dir.path() / "t" / "tokenizer-text.bin", stored, fs::copy_options::overwrite_existing);
  const auto other = run_cli({"eval", (dir.path() / "a").string(), "--split", "test", "--out", (dir.path() / "e").string()});
  EXPECT_EQ(other.code, cli::kExitUsage);
  EXPECT_NE(other.err.find("holds a tokenizer/char tokenizer, but the spec's task.tokenizer is tokenizer/sentencepiece"),
            std::string::npos)
      << other.err;
}

// The number after "NAME": in a scores.json.
double score_of(const std::string& json, const std::string& name) {
  const std::size_t at = json.find("\"" + name + "\":");
  return at == std::string::npos ? -1.0 : std::stod(json.substr(at + name.size() + 3));
}

TEST_F(TokenizerRun, WithoutATokenizerTheRunKeepsItsTasksOwnVocabularyAndReadsTextWithIt) {
  const fs::path a = dir.path() / "a", stored = a / "tokenizer-text.bin";
  fs::create_directories(dir.path() / "b");
  std::ofstream(dir.path() / "b" / "tokenizer-text.bin") << "left by a start killed before run.h5";
  ASSERT_EQ(run("a", spec("", "tokens: word, ")).code, cli::kExitOk);
  const train::StoredTokenizer t = train::read_stored_tokenizer(stored);
  EXPECT_EQ(t.plugin, "task/language_model");
  EXPECT_EQ(t.options, "role=text;");
  EXPECT_TRUE(t.bytes.starts_with("ablate-vocabulary 1\n")) << t.bytes.substr(0, 40);
  EXPECT_NE(t.bytes.find("6:miller"), std::string::npos) << "the fable's words";
  const auto fresh = run("b", spec("", "tokens: word, "));
  ASSERT_EQ(fresh.code, cli::kExitOk) << fresh.err;
  EXPECT_EQ(bytes(dir.path() / "b" / "tokenizer-text.bin"), bytes(stored)) << "a new run writes over a leftover";

  std::ofstream(dir.path() / "other.txt") << bytes(corpus()).substr(0, 1500);  // text with "miller" in it
  const auto data_eval = [&](const std::string& out) {
    return run_cli({"eval", a.string(), "--data", (dir.path() / "other.txt").string(), "--out", (dir.path() / out).string()});
  };
  const auto before = data_eval("e1");
  ASSERT_EQ(before.code, cli::kExitOk) << before.err;
  std::string text = bytes(corpus());
  for (std::size_t at; (at = text.find("miller")) != std::string::npos;) text.replace(at, 6, "zebra");
  std::ofstream(corpus(), std::ios::trunc) << text;  // the run's id of "miller" would change meaning if rebuilt

  const auto split = run_cli({"eval", a.string(), "--split", "test"});
  EXPECT_EQ(split.code, cli::kExitUsage);
  EXPECT_NE(split.err.find("task.file " + corpus().string() + " changed since the run read it"), std::string::npos) << split.err;
  EXPECT_NE(split.err.find("its splits drawn anew"), std::string::npos) << split.err;
  EXPECT_FALSE(fs::exists(a / "evals")) << "nothing written";
  const auto resumed = run_cli({"run", (dir.path() / "a.yaml").string(), "--out", a.string(), "--resume", "--progress", "quiet"});
  EXPECT_EQ(resumed.code, cli::kExitUsage) << "a run never goes on with other examples";

  const auto after = data_eval("e2");
  ASSERT_EQ(after.code, cli::kExitOk) << after.err;
  EXPECT_NE(after.out.find("warning: task.file " + corpus().string() + " changed since the run read it"), std::string::npos)
      << after.out;
  EXPECT_NE(after.out.find("read with the run's own tokenizer-text.bin"), std::string::npos) << after.out;
  const double loss = score_of(bytes(dir.path() / "e1" / "scores.json"), "loss");
  ASSERT_GT(loss, 0.0);
  EXPECT_EQ(score_of(bytes(dir.path() / "e2" / "scores.json"), "loss"), loss) << "the same ids: the run's vocabulary";
  EXPECT_EQ(train::read_stored_tokenizer(stored).bytes, t.bytes) << "kept as trained";

  fs::remove(stored);  // a run made before runs kept their vocabularies: it would rebuild them
  const auto old = data_eval("e3");
  EXPECT_EQ(old.code, cli::kExitUsage);
  EXPECT_NE(old.err.find("vocabularies would be rebuilt"), std::string::npos) << old.err;
}

TEST_F(TokenizerRun, TheSpecKeyPrintsReadsBackAndIsRefusedWhereItCannotApply) {
  std::ofstream(dir.path() / "s.yaml") << spec("{plugin: word, min_freq: 2}");
  const auto printed = run_cli({"validate", (dir.path() / "s.yaml").string(), "--print"});
  ASSERT_EQ(printed.code, cli::kExitOk) << printed.err;
  EXPECT_NE(printed.out.find("tokenizer: {plugin: word, lowercase: false, min_freq: 2, split_punctuation: true}"),
            std::string::npos)
      << printed.out;
  std::ofstream(dir.path() / "s2.yaml") << printed.out.substr(printed.out.find('\n') + 1);
  const auto again = run_cli({"validate", (dir.path() / "s2.yaml").string(), "--print"});
  EXPECT_EQ(again.out.substr(again.out.find('\n') + 1), printed.out.substr(printed.out.find('\n') + 1));

  std::ofstream(dir.path() / "bad.yaml") << spec("{plugin: bpe}");
  const auto unknown = run_cli({"validate", (dir.path() / "bad.yaml").string()});
  EXPECT_EQ(unknown.code, cli::kExitUsage);
  EXPECT_NE(unknown.err.find("task.tokenizer: unknown tokenizer plugin 'bpe'; expected one of char, sentencepiece, word"),
            std::string::npos)
      << unknown.err;
  const auto set = run_cli({"validate", (dir.path() / "s.yaml").string(), "--set", "task.tokenizer.vocab_size=100"});
  EXPECT_NE(set.err.find("tokenizer plugin 'word' has no option 'vocab_size'"), std::string::npos) << set.err;

  std::ofstream(dir.path() / "copy.yaml") << testing::TinyRun{.task = "{plugin: copy, tokenizer: char}", .steps = 2}.yaml();
  const auto copy = run_cli({"validate", (dir.path() / "copy.yaml").string()});
  EXPECT_EQ(copy.code, cli::kExitUsage);
  EXPECT_NE(copy.err.find("this task reads no text, so it takes no tokenizer"), std::string::npos) << copy.err;

  std::ofstream(dir.path() / "units.yaml") << spec("char", "tokens: word, ");
  const auto units = run_cli({"validate", (dir.path() / "units.yaml").string()});
  EXPECT_EQ(units.code, cli::kExitUsage);
  EXPECT_NE(units.err.find("tokens: not with task.tokenizer"), std::string::npos) << units.err;
}

TEST_F(TokenizerRun, TokenizeWritesShardsAndTheTokenizerAndNeverWritesOver) {
  const fs::path out = dir.path() / "shards";
  const auto made = run_cli(
      {"tokenize", "--tokenizer", "{plugin: char}", "--train", corpus().string(), "--out", out.string(), corpus().string()});
  ASSERT_EQ(made.code, cli::kExitOk) << made.err;
  const ShardHeader h = read_shard_header(out / "fable.bin");
  EXPECT_EQ(h.version, 1);
  std::size_t code_points = 0;
  for (unsigned char c : bytes(corpus())) code_points += (c & 0xC0) != 0x80;
  EXPECT_EQ(h.tokens, static_cast<std::int64_t>(code_points)) << "char: one id per code point, line breaks included";
  EXPECT_TRUE(fs::exists(out / "tokenizer-text.bin"));

  const auto again =
      run_cli({"tokenize", "--tokenizer-file", (out / "tokenizer-text.bin").string(), "--out", out.string(), corpus().string()});
  EXPECT_EQ(again.code, cli::kExitUsage);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  const auto restored = run_cli({"tokenize", "--tokenizer-file", (out / "tokenizer-text.bin").string(), "--out",
                                 (dir.path() / "again").string(), corpus().string()});
  ASSERT_EQ(restored.code, cli::kExitOk) << restored.err;
  EXPECT_EQ(bytes(dir.path() / "again" / "fable.bin"), bytes(out / "fable.bin"));

  std::ofstream(dir.path() / "latin1.txt") << "ok\ncaf\xE9\n";
  const auto latin1 = run_cli({"tokenize", "--tokenizer", "char", "--train", corpus().string(), "--out",
                               (dir.path() / "l").string(), (dir.path() / "latin1.txt").string()});
  EXPECT_EQ(latin1.code, cli::kExitUsage);
  EXPECT_NE(latin1.err.find("latin1.txt:2: invalid UTF-8 at byte 4"), std::string::npos) << latin1.err;
  EXPECT_FALSE(fs::exists(dir.path() / "l" / "latin1.bin")) << "no half-written shard";
  const auto no_train = run_cli({"tokenize", "--tokenizer", "char", "--out", (dir.path() / "n").string(), corpus().string()});
  EXPECT_NE(no_train.err.find("--tokenizer needs --train FILE"), std::string::npos) << no_train.err;
}

// Shards made before the tokenizer plugin gained an option (tokenizer/sentencepiece's alpha and
// nbest): the file's options lack it, which reads as its default, so the spec still matches.
TEST_F(TokenizerRun, AStoredTokenizerWithoutALaterOptionMatchesItsDefault) {
  const fs::path out = dir.path() / "shards";
  ASSERT_EQ(run_cli({"tokenize", "--tokenizer", "{plugin: sentencepiece, vocab_size: 90}", "--train", corpus().string(), "--out",
                     out.string(), corpus().string()})
                .code,
            cli::kExitOk);
  const fs::path stored = out / "tokenizer-text.bin";
  std::string text = bytes(stored);
  for (const std::string option : {"alpha=0;", "nbest=-1;"}) {
    const std::size_t at = text.find(option);
    ASSERT_NE(at, std::string::npos) << option;
    text.erase(at, option.size());
  }
  std::ofstream(stored, std::ios::binary | std::ios::trunc) << text;
  const auto shard_spec = [&](const std::string& tokenizer) {  // the fixture's spec, reading the shard
    std::string yaml = spec(tokenizer);
    const std::string file = "file: " + corpus().string();
    return yaml.replace(yaml.find(file), file.size(), "shards: " + (out / "fable.bin").string());
  };
  std::ofstream(dir.path() / "s.yaml") << shard_spec("{plugin: sentencepiece, vocab_size: 90}");
  const auto ok = run_cli({"validate", (dir.path() / "s.yaml").string()});
  EXPECT_EQ(ok.code, cli::kExitOk) << ok.out << ok.err;
  std::ofstream(dir.path() / "t.yaml") << shard_spec("{plugin: sentencepiece, vocab_size: 90, alpha: 0.1}");
  const auto other = run_cli({"validate", (dir.path() / "t.yaml").string()});
  EXPECT_EQ(other.code, cli::kExitUsage) << "a value other than the default is another tokenizer";
  EXPECT_NE(other.err.find("alpha=0.1;"), std::string::npos) << other.err;
}

TEST_F(TokenizerRun, AShardHeaderIsCheckedAgainstTheFile) {
  const fs::path f = dir.path() / "s.bin";
  {
    ShardWriter w(f, 100);
    w.add({4, 5, 6, 99});
    w.finish();
  }
  EXPECT_EQ(read_shard_header(f).tokens, 4);
  EXPECT_THROW(ShardWriter(f, 100), UsageError) << "never written over";
  const std::string whole = bytes(f);
  std::ofstream(f, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 1);
  EXPECT_THROW(read_shard_header(f), UsageError) << "truncated";
  std::string magic = whole;
  magic[0] = 'x';
  std::ofstream(f, std::ios::binary | std::ios::trunc) << magic;
  EXPECT_THROW(read_shard_header(f), UsageError);
  ShardWriter wide(dir.path() / "w.bin", 70000);
  EXPECT_EQ(wide.version(), 2) << "uint32 tokens past 65,536 ids";
  EXPECT_THROW(wide.add({70000}), Error) << "an id outside the vocabulary";
}

}  // namespace
}  // namespace ablate
