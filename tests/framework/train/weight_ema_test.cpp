// Tests for the moving average of the weights (framework/train/weight_ema, train.ema): the update
// is the warmed-up formula element for element; saving swaps the average in and the weights back
// bit for bit; through `ablate run` a run keeps one ema-STEP.bin (its checkpoint's), `ablate eval
// --ema` scores it, and a resumed run's average equals the uninterrupted run's.
#include "train/weight_ema.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/core/backend_fixture.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using ablate::testing::reference_backend;
using ablate::testing::TempDir;

std::vector<float> values(ParameterStore& s) {
  std::vector<float> out;
  for (Parameter* p : s.all()) {
    std::vector<float> v(static_cast<std::size_t>(p->value.numel()));
    s.backend().copy_to_host(v.data(), p->value);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void set_values(ParameterStore& s, float offset) {
  float x = offset;
  for (Parameter* p : s.all()) {
    std::vector<float> v(static_cast<std::size_t>(p->value.numel()));
    for (float& e : v) e = (x += 0.25f);
    s.backend().copy_from_host(p->value, v.data());
  }
}

TEST(WeightEma, UpdatesByTheWarmedUpDecayAndSavesWithoutDisturbingTheWeights) {
  TempDir dir;
  Backend& be = reference_backend();
  ParameterStore store(be);
  store.add("a.weight", {3, 4}, Init::normal(0.5f), 1);
  store.add("a.bias", {5}, Init::uniform(0.3f), 1);
  const std::vector<float> initial = values(store);
  std::vector<double> expected(initial.begin(), initial.end());  // the average starts at the initial weights
  WeightEma ema(store, 0.95);
  for (std::int64_t step = 1; step <= 40; ++step) {
    set_values(store, static_cast<float>(step));
    const std::vector<float> w = values(store);
    const double d = std::min(0.95, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
    for (std::size_t i = 0; i < w.size(); ++i)
      expected[i] = static_cast<float>(static_cast<float>(d) * expected[i] + (1.0f - static_cast<float>(d)) * w[i]);
    ema.update(step);
  }
  const std::vector<float> weights = values(store);
  TrainState state;
  state.step = 40;
  ema.save(dir.path(), state, "spec\n");
  EXPECT_EQ(values(store), weights) << "the weights are put back exactly";
  ParameterStore loaded(be);
  loaded.add("a.weight", {3, 4}, Init::zeros(), 1);
  loaded.add("a.bias", {5}, Init::zeros(), 1);
  load_checkpoint(ema_file(dir.path(), 40), loaded);
  const std::vector<float> got = values(loaded);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5 * (1.0 + std::abs(expected[i]))) << i;
  EXPECT_NE(got, weights) << "but an average, not the weights";

  WeightEma again(store, 0.95);
  again.restore(dir.path(), 40);
  state.step = 41;
  again.save(dir.path(), state, "spec\n");
  WeightEma::keep_newest(dir.path());
  EXPECT_FALSE(fs::exists(ema_file(dir.path(), 40))) << "only the checkpoint's average stays";
  load_checkpoint(ema_file(dir.path(), 41), loaded);
  EXPECT_EQ(values(loaded), got) << "restored bit for bit";
  EXPECT_THROW(again.restore(dir.path(), 7), UsageError);
  EXPECT_THROW(WeightEma(store, 1.0), Error);
}

class EmaRun : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(dir.path() / "spec.yaml") << spec(); }
  static std::string spec() {
    return testing::TinyRun{.name = "ema_copy",
                            .task = testing::sequence_task(2000, 64),
                            .steps = 60,
                            .log_every = 20,
                            .eval_every = 30,
                            .metrics = "loss, token_accuracy"}
        .yaml();
  }
  testing::CliResult run(const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "run",          (dir.path() / "spec.yaml").string(), "--out", (dir.path() / out).string(), "--progress", "quiet", "--set",
        "train.ema=0.9"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  }
  std::string scores(const std::string& run, const std::string& name) {
    std::ifstream in(dir.path() / run / "evals" / name / "scores.json");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  TempDir dir;
};

TEST_F(EmaRun, ARunKeepsItsAverageEvalScoresItAndAResumeContinuesIt) {
  const auto whole = run("whole");
  ASSERT_EQ(whole.code, cli::kExitOk) << whole.out << whole.err;
  EXPECT_TRUE(fs::exists(ema_file(dir.path() / "whole", 60)));
  EXPECT_FALSE(fs::exists(ema_file(dir.path() / "whole", 30))) << "the average of the last checkpoint only";
  ASSERT_EQ(run("split", {"--stop-after", "30"}).code, cli::kExitOk);
  const auto resumed = run("split", {"--resume"});
  ASSERT_EQ(resumed.code, cli::kExitOk) << resumed.out << resumed.err;
  for (const std::string r : {"whole", "split"}) {
    const auto e = testing::run_cli({"eval", (dir.path() / r).string(), "--split", "eval", "--ema"});
    ASSERT_EQ(e.code, cli::kExitOk) << e.out << e.err;
    EXPECT_NE(e.out.find("the moving average of its weights, ema-0000000060.bin"), std::string::npos) << e.out;
    const auto plain = testing::run_cli({"eval", (dir.path() / r).string(), "--split", "eval"});
    ASSERT_EQ(plain.code, cli::kExitOk) << plain.out << plain.err;
  }
  const auto metrics = [](const std::string& s) { return s.substr(s.find("\"metrics\"")); };
  EXPECT_NE(scores("whole", "eval-ema").find("\"ema\": true"), std::string::npos) << scores("whole", "eval-ema");
  EXPECT_EQ(metrics(scores("split", "eval-ema")), metrics(scores("whole", "eval-ema")))
      << "the resumed run's average is the same";
  EXPECT_NE(metrics(scores("whole", "eval-ema")), metrics(scores("whole", "eval"))) << "the average is not the last weights";

  const auto both = testing::run_cli({"eval", (dir.path() / "whole").string(), "--ema", "--average-last", "2"});
  EXPECT_EQ(both.code, cli::kExitUsage);
  EXPECT_NE(both.err.find("--average-last and --ema name two sets of weights"), std::string::npos) << both.err;
  std::ofstream(dir.path() / "plain.yaml") << spec();
  ASSERT_EQ(testing::run_cli(
                {"run", (dir.path() / "plain.yaml").string(), "--out", (dir.path() / "plain").string(), "--progress", "quiet"})
                .code,
            cli::kExitOk);
  const auto none = testing::run_cli({"eval", (dir.path() / "plain").string(), "--ema"});
  EXPECT_EQ(none.code, cli::kExitUsage);
  EXPECT_NE(none.err.find("train with train.ema"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace ablate::train
