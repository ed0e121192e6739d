// Tests for beam search (framework/train/beam_search) and `ablate translate` / `ablate eval --beam`
// (run_translate, cmd_translate, run_eval): with beam 1 it is greedy decoding exactly; a copy model
// trained to exact copies keeps them under beam 4; translate writes one line per input line and
// refuses bad input with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "validation/validation.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "train/beam_search.hpp"
#include "train/run_eval.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t line_count(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

class BeamSearchTest : public ::testing::Test {
 protected:
  // A copy model at `steps`: 800 makes exact copies of every eval example, 40 does not yet.
  static void train(const std::string& name, int steps) {
    std::ofstream(dir_ / (name + ".yaml")) << testing::TinyRun{.name = "beam_" + name,
                                                               .steps = steps,
                                                               .log_every = 20,
                                                               .eval_every = steps,
                                                               .metrics = "loss, exact_match"}
                                                  .yaml();
    const auto r = run_cli({"run", (dir_ / (name + ".yaml")).string(), "--out", (dir_ / name).string(), "--progress", "quiet"});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  static void SetUpTestSuite() {
    dir_ = ablate::testing::fresh_dir("beam_search_test", false);
    train("early", 40);
    train("trained", 800);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static inline fs::path dir_;
};

TEST_F(BeamSearchTest, BeamOneIsGreedyDecodingExactly) {
  std::ostringstream err;
  const validation::LoadedSpec loaded = validation::load_run_spec(dir_ / "early", {}, err);
  TrainedRun run = open_trained_run(dir_ / "early", loaded.spec, *loaded.registry, std::cerr);
  Experiment& ex = *run.experiment;
  std::vector<std::int64_t> indices(64);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<std::int64_t>(i);
  const std::vector<Example> examples = ex.examples(Split::Eval, indices);
  std::vector<std::vector<std::int32_t>> sources;
  for (const Example& e : examples) sources.push_back(e.src);
  const auto greedy = ex.model->greedy_decode(*ex.backend, ex.batch(examples), ex.task_info.max_tgt_len);
  const auto beam = beam_search(ex, sources, {1, 1.0, ex.task_info.max_tgt_len});
  EXPECT_EQ(beam, greedy);
  int exact = 0;
  for (std::size_t i = 0; i < examples.size(); ++i) exact += greedy[i] == examples[i].tgt;
  EXPECT_LT(exact, 64) << "the early model must still make mistakes, or the comparison shows little";
  // Beam 4 decodes every source, each hypothesis within the length limit.
  const auto wide = beam_search(ex, sources, {4, 1.0, ex.task_info.max_tgt_len});
  ASSERT_EQ(wide.size(), sources.size());
  for (const auto& w : wide) EXPECT_LE(static_cast<std::int64_t>(w.size()), ex.task_info.max_tgt_len);
}

TEST_F(BeamSearchTest, ATrainedCopyModelKeepsItsExactCopiesUnderBeamFour) {
  for (const char* beam : {"1", "4"}) {
    const fs::path out = dir_ / (std::string("eval_beam") + beam);
    const auto r = run_cli({"eval", (dir_ / "trained").string(), "--split", "eval", "--beam", beam, "--out", out.string()});
    ASSERT_EQ(r.code, cli::kExitOk) << r.err;
    const std::string scores = slurp(out / "scores.json");
    EXPECT_NE(scores.find("\"exact_match\": 1"), std::string::npos) << "beam " << beam << ":\n" << scores;
    EXPECT_NE(scores.find(std::string("\"decoding\": \"") + (std::string(beam) == "1" ? "greedy" : "beam 4, length penalty 1")),
              std::string::npos)
        << scores;
  }
}

TEST_F(BeamSearchTest, TranslateReadsAndWritesTokenIdsWhereTheTaskHasNoText) {
  std::ofstream(dir_ / "ids.txt") << "3 4 5\n7 6\n";  // the copy task's content ids, 3 .. 7
  for (const char* beam : {"1", "3"}) {
    const auto r = run_cli({"translate", (dir_ / "trained").string(), "--input", (dir_ / "ids.txt").string(), "--beam", beam});
    ASSERT_EQ(r.code, cli::kExitOk) << r.err;
    EXPECT_EQ(r.out, "3 4 5\n7 6\n") << "beam " << beam << ": the trained model copies";
  }
}

TEST_F(BeamSearchTest, TranslateRefusesRunsAndInputsItCannotTranslate) {
  // The copy task has no text: a line is token ids.
  std::ofstream(dir_ / "lines.txt") << "a b\n";
  auto r = run_cli({"translate", (dir_ / "trained").string(), "--input", (dir_ / "lines.txt").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("line 1: 'a' is not a token id of the run's task (3 to 7)"), std::string::npos) << r.err;
  std::ofstream(dir_ / "lines.txt") << "3 8\n";
  r = run_cli({"translate", (dir_ / "trained").string(), "--input", (dir_ / "lines.txt").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("'8' is not a token id"), std::string::npos) << r.err;
  r = run_cli({"translate", (dir_ / "trained").string(), "--input", (dir_ / "lines.txt").string(), "--beam", "0"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("--beam must be >= 1"), std::string::npos) << r.err;
  r = run_cli({"eval", (dir_ / "trained").string(), "--split", "eval", "--beam", "0", "--out", (dir_ / "x").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("--beam must be >= 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

// task/translation end to end on the fixture corpus: one line out per line in, greedy and beam 3.
TEST_F(BeamSearchTest, TranslateWritesOneLinePerInputLine) {
  const fs::path corpus = fs::path(ABLATE_PLUGINS_SOURCE_DIR) / "task_translation" / "tests" / "data" / "translation_eng_spa.tsv";
  std::ofstream(dir_ / "tr.yaml") << testing::TinyRun{.name = "beam_translation",
                                                      .task = "{plugin: translation, file: " + corpus.string() + "}",
                                                      .block = "",
                                                      .steps = 20,
                                                      .batch_size = 8,
                                                      .lr = "",
                                                      .clip_grad_norm = false,
                                                      .seed = 2,
                                                      .log_every = 10,
                                                      .eval_every = 20,
                                                      .eval_batches = 1,
                                                      .metrics = "loss, exact_match"}
                                         .yaml();
  auto r = run_cli({"run", (dir_ / "tr.yaml").string(), "--out", (dir_ / "tr").string(), "--progress", "quiet"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  std::ofstream(dir_ / "sentences.txt") << "i am here .\nwhere is the zzzqqq ?\nhello\n";
  for (const char* beam : {"1", "3"}) {
    r = run_cli({"translate", (dir_ / "tr").string(), "--input", (dir_ / "sentences.txt").string(), "--beam", beam});
    ASSERT_EQ(r.code, cli::kExitOk) << r.err;
    EXPECT_EQ(line_count(r.out), 3u) << r.out;
    EXPECT_NE(r.err.find("source token(s) are not in the run's vocabulary"), std::string::npos) << r.err;
  }
  std::ofstream(dir_ / "blank.txt") << "i am here .\n\n";
  r = run_cli({"translate", (dir_ / "tr").string(), "--input", (dir_ / "blank.txt").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("line 2 has no tokens"), std::string::npos) << r.err;
  std::ofstream(dir_ / "empty.txt") << "";
  r = run_cli({"translate", (dir_ / "tr").string(), "--input", (dir_ / "empty.txt").string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("nothing to translate"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ablate::train
