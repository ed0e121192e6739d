// Tests for gradient accumulation (train.accumulate, framework/train/runner.cpp): K micro-batches
// of B examples make the same optimizer step as one batch of K*B, up to float rounding, with
// examples of different lengths (each micro-batch's loss weighted by its target tokens); and
// train.accumulate 0 is a spec error naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"
#include "results/run_file.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

class GradientAccumulation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("gradient_accumulation_test");
    // Copy examples of 2 to 6 tokens (micro-batches hold different numbers of target tokens).
    std::ofstream(dir_ / "spec.yaml") << testing::TinyRun{.task = testing::sequence_task(2000, 64, 10, 6),
                                                          .backend = "{plugin: onednn, threads: 1}",
                                                          .steps = 24,
                                                          .log_every = 4,
                                                          .eval_every = 24}
                                             .yaml();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The train rows (loss, grad_norm) of a run with batch_size B x accumulate K. (Not its eval rows:
  // eval.batches counts batches of batch_size, so the arms score different numbers of examples.)
  struct Curve {
    std::vector<double> loss, grad_norm;
  };
  Curve train(std::int64_t B, std::int64_t K) {
    const std::string out = "b" + std::to_string(B) + "_k" + std::to_string(K);
    const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / out).string(), "--progress", "quiet", "--set",
                            "train.batch_size=" + std::to_string(B), "--set", "train.accumulate=" + std::to_string(K)});
    EXPECT_EQ(r.code, cli::kExitOk) << r.out << r.err;
    const results::RunReader reader(dir_ / out / "run.h5");
    const auto column = [](const results::MetricTable& t, const std::string& name) {
      const auto it = std::find(t.names.begin(), t.names.end(), name);
      EXPECT_NE(it, t.names.end()) << name;
      return it == t.names.end() ? std::vector<double>{} : t.columns[static_cast<std::size_t>(it - t.names.begin())];
    };
    const results::MetricTable train = reader.metrics(results::MetricSplit::Train);
    return {column(train, "loss"), column(train, "grad_norm")};
  }
  // The largest relative difference between two equally long curves.
  static double worst(const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double w = 0.0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) w = std::max(w, std::abs(a[i] - b[i]) / std::abs(a[i]));
    return w;
  }
  fs::path dir_;
};

TEST_F(GradientAccumulation, MicroBatchesMakeTheStepOfTheWholeBatch) {
  const Curve whole = train(16, 1);
  ASSERT_EQ(whole.loss.size(), 6u);
  for (const auto& [B, K] : std::vector<std::pair<std::int64_t, std::int64_t>>{{8, 2}, {4, 4}, {1, 16}}) {
    const Curve parts = train(B, K);
    EXPECT_LT(worst(whole.loss, parts.loss), 1e-5) << B << " x " << K;
    EXPECT_LT(worst(whole.grad_norm, parts.grad_norm), 1e-5) << B << " x " << K;
  }
  // The check can fail: half the batch without accumulation reads other examples, another curve.
  const Curve half = train(8, 1);
  EXPECT_GT(worst(whole.loss, half.loss), 1e-2);
}

TEST_F(GradientAccumulation, ZeroIsASpecErrorNamingTheKey) {
  const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "zero").string(), "--progress", "quiet", "--set",
                          "train.accumulate=0"});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("train.accumulate"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "zero"));
}

}  // namespace
}  // namespace ablate::train
