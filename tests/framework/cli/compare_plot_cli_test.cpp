// Tests for `ablate compare` and `ablate plot` in-process, on real run files: a tiny copy sweep
// (pre_norm / post_norm × 2 seeds, attention logged) is trained once by `ablate run`, then
// compared (table, report files, summary.json parsed by python3) and plotted (PNG figures).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::cli {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

bool is_png(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  char sig[8] = {};
  f.read(sig, 8);
  return f.gcount() == 8 && std::string(sig, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

std::string slurp(const fs::path& file) {
  std::ifstream f(file);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class ComparePlotCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ablate::testing::fresh_dir("compare_plot_test", false);
    fs::create_directories(dir_ / "sweep");
    // 2 layers, 12 steps, attention logged at steps 6 and 12.
    std::ofstream(dir_ / "spec.yaml") << testing::TinyRun{.task = testing::sequence_task(400, 32),
                                                          .d_model = 16,
                                                          .layers = 2,
                                                          .steps = 12,
                                                          .batch_size = 16,
                                                          .clip_grad_norm = false,
                                                          .log_every = 2,
                                                          .attention_every = 6,
                                                          .eval_every = 6,
                                                          .eval_batches = 1}
                                             .yaml();
    for (const std::string block : {"pre_norm", "post_norm"})
      for (const std::string seed : {"1", "2"}) {
        const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "sweep" / (block + "_s" + seed)).string(),
                                "--progress", "quiet", "--set", "model.block=" + block, "--set", "train.seed=" + seed});
        ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
      }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path dir_;
};
fs::path ComparePlotCli::dir_;

TEST_F(ComparePlotCli, CompareTablesBothArmsAndWritesReports) {
  const fs::path out = dir_ / "cmp";
  const auto r = run_cli(
      {"compare", (dir_ / "sweep").string(), "--baseline", "model.block=post_norm", "--metric", "loss", "--out", out.string()});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("arms by model.block; baseline: post_norm"), std::string::npos) << r.out;
  // Both arms aggregate n = 2, and the same seeds ran in both: the test is paired by seed.
  EXPECT_NE(r.out.find("\npost_norm  2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\npre_norm   2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a t-test paired by"), std::string::npos) << r.out;
  for (const char* f : {"report.md", "summary.csv", "summary.json", "table.tex"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
    EXPECT_NE(r.out.find((out / f).string()), std::string::npos) << r.out;
  }
  // summary.json is valid JSON with both arms, two runs each, the baseline marked.
  const fs::path py = dir_ / "check.py";
  std::ofstream(py) << "import json, sys\n"
                       "d = json.load(open(sys.argv[1]))\n"
                       "arms = {a['label']: a for a in d['arms']}\n"
                       "assert set(arms) == {'pre_norm', 'post_norm'}, arms.keys()\n"
                       "assert all(len(a['runs']) == 2 and a['counts']['runs'] == 2 for a in d['arms'])\n"
                       "assert arms['post_norm']['baseline'] is True\n"
                       "assert arms['pre_norm']['key_label'] == 'model.block=pre_norm'\n"
                       "assert d['metric'] == 'loss'\n";
  const std::string cmd = "/usr/bin/python3 " + py.string() + " " + (out / "summary.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(out / "summary.json");
  EXPECT_NE(slurp(out / "summary.csv").find("model.block=pre_norm"), std::string::npos);
}

TEST_F(ComparePlotCli, LatexAndSummaryOptions) {
  const auto r = run_cli({"compare", (dir_ / "sweep").string(), "--metric", "loss", "--summary", "best", "--format", "latex",
                          "--out", (dir_ / "latex").string()});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("\\begin{tabular}{lrrrr"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("post\\_norm & 2 &"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir_ / "latex" / "summary.json").find("\"summary\": \"best\""), std::string::npos);
}

TEST_F(ComparePlotCli, CompareDefaultsToTheFirstDirAndSkipsUnreadableFiles) {
  const fs::path bad = dir_ / "with_bad";
  fs::create_directories(bad / "broken");
  std::ofstream(bad / "broken" / "run.h5") << "not hdf5";
  fs::copy(dir_ / "sweep" / "pre_norm_s1", bad / "ok", fs::copy_options::recursive);
  const auto r = run_cli({"compare", bad.string()});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((bad / "broken" / "run.h5").string()), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(bad / "report.md"));
}

TEST_F(ComparePlotCli, NoRunsIsAUsageError) {
  fs::create_directories(dir_ / "empty");
  const auto r = run_cli({"compare", (dir_ / "empty").string()});
  EXPECT_EQ(r.code, kExitUsage) << r.out << r.err;
  EXPECT_NE(r.err.find((dir_ / "empty").string()), std::string::npos) << r.err;
  EXPECT_EQ(run_cli({"plot", (dir_ / "empty").string()}).code, kExitUsage);
  EXPECT_EQ(run_cli({"compare", (dir_ / "nonexistent").string()}).code, kExitUsage);
  EXPECT_EQ(run_cli({"compare", (dir_ / "sweep").string(), "--metric", "no_such_metric", "--out", (dir_ / "x").string()}).code,
            kExitUsage);
  const auto bad_summary = run_cli({"compare", (dir_ / "sweep").string(), "--summary", "steps_to:fast"});
  EXPECT_EQ(bad_summary.code, kExitUsage);
  EXPECT_NE(bad_summary.err.find("steps_to:TARGET needs a number"), std::string::npos) << bad_summary.err;
  EXPECT_EQ(run_cli({"compare", (dir_ / "sweep").string(), "--format", "docx"}).code, kExitUsage);
}

TEST_F(ComparePlotCli, PlotWritesCurvesHeatmapsDecodeAndEntropy) {
  const auto r = run_cli({"plot", (dir_ / "sweep").string()});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  const fs::path figs = dir_ / "sweep" / "figures";
  for (const char* f : {"curves_loss.png", "curves_token_accuracy.png", "curves_exact_match.png", "curves_train_loss.png",
                        "attention_encoder_self.png", "attention_decoder_self.png", "attention_decoder_cross.png",
                        "decode_cross.png", "entropy.png"}) {
    EXPECT_TRUE(is_png(figs / f)) << f << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find((figs / f).string()), std::string::npos) << f << "\n" << r.out;
  }
}

TEST_F(ComparePlotCli, PlotOneRunAtAChosenStepAsSvg) {
  const fs::path out = dir_ / "svg";
  const auto r = run_cli({"plot", (dir_ / "sweep").string(), "--out", out.string(), "--run",
                          (dir_ / "sweep" / "post_norm_s2").string(), "--step", "6", "--format", "svg"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(slurp(out / "attention_encoder_self.svg").find("<svg"), std::string::npos);
  const auto bad = run_cli({"plot", (dir_ / "sweep").string(), "--out", out.string(), "--step", "5"});
  EXPECT_EQ(bad.code, kExitUsage) << bad.err;
  EXPECT_NE(bad.err.find("logged steps: 6, 12"), std::string::npos) << bad.err;
}

// --x on both commands: the curves against what was spent (these runs log tokens and FLOPs), in
// plot's figures and in compare's report.html; an axis that does not exist is refused by name.
TEST_F(ComparePlotCli, CurvesAgainstTokensOrFlopsOnPlotAndCompare) {
  const fs::path out = dir_ / "by_flops";
  const auto r = run_cli({"plot", (dir_ / "sweep").string(), "--out", out.string(), "--x", "flops", "--format", "svg"});
  ASSERT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const std::string svg = slurp(out / "curves_loss.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  const auto c = run_cli({"compare", (dir_ / "sweep").string(), "--out", (dir_ / "by_tokens").string(), "--x", "tokens"});
  ASSERT_EQ(c.code, kExitOk) << c.out << c.err;
  EXPECT_EQ(c.err.find("warning"), std::string::npos) << c.err;
  for (const char* command : {"plot", "compare"}) {
    const auto bad = run_cli({command, (dir_ / "sweep").string(), "--out", (dir_ / "bad").string(), "--x", "epochs"});
    EXPECT_EQ(bad.code, kExitUsage) << bad.err;
    EXPECT_NE(bad.err.find(std::string("ablate ") + command + ": --x: unknown x axis 'epochs'"), std::string::npos) << bad.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

}  // namespace
}  // namespace ablate::cli
