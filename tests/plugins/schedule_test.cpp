// Tests for the built-in schedule plugins (constant, noam, cosine, wsd, inverse_sqrt, linear), loaded from the built-in
// plugin dir as `ablate` loads them: each one's formula, defaults and refused options.
#include <cmath>
#include <iomanip>
#include <sstream>
#include <map>
#include <string>

#include "ablate/schedule.hpp"
#include "backends/backend_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace ablate {
namespace {

class Schedules : public ::testing::Test {
 protected:
  PluginRegistry& registry = testing::builtin_registry();  // the built plugins, loaded once
};

TEST_F(Schedules, ConstantIsTheSameAtEveryStep) {
  auto s = registry.create<Schedule>("constant", {{"lr", "0.0003"}});
  for (std::int64_t step : {1, 2, 1000, 1000000}) EXPECT_DOUBLE_EQ(s->learning_rate(step), 3e-4);
  EXPECT_DOUBLE_EQ(registry.create<Schedule>("constant")->learning_rate(5), 1e-3);  // declared default
  EXPECT_THROW(registry.create<Schedule>("constant", {{"lr", "-1"}}), PluginError);
}

TEST_F(Schedules, NoamMatchesThePaperFormula) {
  auto s = registry.create<Schedule>("noam", {{"d_model", "512"}, {"warmup", "4000"}});
  // Peak at step == warmup: 512^-0.5 * 4000^-0.5 (Vaswani et al. 2017, eq. 3).
  EXPECT_NEAR(s->learning_rate(4000), 1.0 / std::sqrt(512.0 * 4000.0), 1e-15);
  EXPECT_NEAR(s->learning_rate(1), 1.0 / std::sqrt(512.0) * std::pow(4000.0, -1.5), 1e-18);
  EXPECT_NEAR(s->learning_rate(16000), 1.0 / std::sqrt(512.0) / std::sqrt(16000.0), 1e-15);
  EXPECT_LT(s->learning_rate(3999), s->learning_rate(4000));
  EXPECT_LT(s->learning_rate(4001), s->learning_rate(4000));
  auto doubled = registry.create<Schedule>("noam", {{"d_model", "512"}, {"warmup", "4000"}, {"factor", "2"}});
  EXPECT_DOUBLE_EQ(doubled->learning_rate(123), 2 * s->learning_rate(123));
}

TEST_F(Schedules, CosineWarmsUpLinearlyThenDecaysToMinLr) {
  auto s = registry.create<Schedule>("cosine", {{"lr", "0.01"}, {"min_lr", "0.001"}, {"warmup", "100"}, {"total_steps", "1100"}});
  EXPECT_DOUBLE_EQ(s->learning_rate(50), 0.005);
  EXPECT_DOUBLE_EQ(s->learning_rate(100), 0.01);
  EXPECT_NEAR(s->learning_rate(600), 0.0055, 1e-15);  // halfway: (lr + min_lr) / 2
  EXPECT_NEAR(s->learning_rate(1100), 0.001, 1e-15);
  EXPECT_DOUBLE_EQ(s->learning_rate(5000), 0.001);
}

TEST_F(Schedules, CosineRequiresTotalStepsAndRejectsInconsistentOptions) {
  const std::string missing = testing::error_of<UsageError>([&] { registry.create<Schedule>("cosine"); });
  EXPECT_NE(missing.find("required option 'total_steps'"), std::string::npos) << missing;
  EXPECT_THROW(registry.create<Schedule>("cosine", {{"warmup", "10"}, {"total_steps", "10"}}), PluginError);
  EXPECT_THROW(registry.create<Schedule>("cosine", {{"lr", "0.1"}, {"min_lr", "0.2"}, {"total_steps", "10"}}), PluginError);
}

TEST_F(Schedules, WsdWarmsUpHoldsThenDecaysOverItsShareInEachShape) {
  // 1000 steps, warm-up 100, the last 20% (steps 800 .. 1000) decaying from 0.01 to 0.001.
  const std::map<std::string, std::string> base = {
      {"lr", "0.01"}, {"min_lr", "0.001"}, {"warmup", "100"}, {"total_steps", "1000"}};
  for (const char* shape : {"linear", "cosine", "sqrt"}) {
    SCOPED_TRACE(shape);
    std::map<std::string, std::string> o = base;
    o["shape"] = shape;
    auto s = registry.create<Schedule>("wsd", o);
    EXPECT_DOUBLE_EQ(s->learning_rate(50), 0.005);
    EXPECT_DOUBLE_EQ(s->learning_rate(100), 0.01);
    EXPECT_DOUBLE_EQ(s->learning_rate(800), 0.01) << "stable up to the decay's start";
    EXPECT_NEAR(s->learning_rate(1000), 0.001, 1e-15);
    EXPECT_DOUBLE_EQ(s->learning_rate(3000), 0.001);
    const double mid = s->learning_rate(900);  // progress 1/2
    const double want = std::string(shape) == "linear"   ? 0.0055
                        : std::string(shape) == "cosine" ? 0.0055
                                                         : 0.001 + 0.009 * (1 - std::sqrt(0.5));
    EXPECT_NEAR(mid, want, 1e-15);
    EXPECT_LT(s->learning_rate(801), 0.01);
  }
  auto cosine = registry.create<Schedule>("wsd", {{"lr", "0.01"}, {"total_steps", "1000"}, {"shape", "cosine"}});
  EXPECT_NEAR(cosine->learning_rate(850), 0.01 * 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-15) << "a quarter into the decay";
  auto whole = registry.create<Schedule>("wsd", {{"lr", "0.01"}, {"total_steps", "10"}, {"decay", "1"}, {"shape", "linear"}});
  EXPECT_NEAR(whole->learning_rate(5), 0.005, 1e-15) << "decay 1: all decay, no stable phase";
}

TEST_F(Schedules, WsdRefusesInconsistentOptions) {
  EXPECT_NE(testing::error_of<UsageError>([&] { registry.create<Schedule>("wsd"); }).find("required option 'total_steps'"),
            std::string::npos);
  const std::string late = testing::error_of<PluginError>([&] {
    registry.create<Schedule>("wsd", {{"warmup", "900"}, {"total_steps", "1000"}});
  });
  EXPECT_NE(late.find("must end by the decay's start (step 800 of 1000)"), std::string::npos) << late;
  EXPECT_THROW(registry.create<Schedule>("wsd", {{"total_steps", "10"}, {"decay", "0"}}), PluginError);
  EXPECT_THROW(registry.create<Schedule>("wsd", {{"total_steps", "10"}, {"decay", "1.5"}}), PluginError);
  EXPECT_THROW(registry.create<Schedule>("wsd", {{"total_steps", "10"}, {"shape", "step"}}), UsageError);
  EXPECT_THROW(registry.create<Schedule>("wsd", {{"total_steps", "10"}, {"min_lr", "0.1"}, {"lr", "0.01"}}), PluginError);
}

TEST_F(Schedules, LinearWarmsUpThenDecaysLinearlyToMinLr) {
  auto s = registry.create<Schedule>("linear", {{"lr", "0.01"}, {"min_lr", "0.002"}, {"warmup", "100"}, {"total_steps", "500"}});
  EXPECT_DOUBLE_EQ(s->learning_rate(50), 0.005);
  EXPECT_DOUBLE_EQ(s->learning_rate(100), 0.01);
  EXPECT_NEAR(s->learning_rate(300), 0.006, 1e-15) << "halfway: (lr + min_lr) / 2";
  EXPECT_NEAR(s->learning_rate(500), 0.002, 1e-15);
  EXPECT_DOUBLE_EQ(s->learning_rate(900), 0.002);
  EXPECT_THROW(registry.create<Schedule>("linear", {{"warmup", "10"}, {"total_steps", "10"}}), PluginError);
  EXPECT_THROW(registry.create<Schedule>("linear", {{"min_lr", "1"}, {"total_steps", "10"}}), PluginError);
}

TEST_F(Schedules, InverseSqrtWarmsUpThenDecaysWithTheRootOfTheStep) {
  auto s = registry.create<Schedule>("inverse_sqrt", {{"lr", "0.0005"}, {"warmup", "4000"}});
  EXPECT_DOUBLE_EQ(s->learning_rate(2000), 0.00025);
  EXPECT_DOUBLE_EQ(s->learning_rate(4000), 0.0005);
  EXPECT_NEAR(s->learning_rate(16000), 0.00025, 1e-18) << "4x the warm-up: half the peak";
  auto noam = registry.create<Schedule>("noam", {{"d_model", "512"}, {"warmup", "4000"}});
  std::ostringstream peak;
  peak << std::setprecision(17) << noam->learning_rate(4000);
  auto same_peak = registry.create<Schedule>("inverse_sqrt", {{"lr", peak.str()}, {"warmup", "4000"}});
  for (std::int64_t step : {1, 3999, 4000, 4001, 100000})
    EXPECT_NEAR(same_peak->learning_rate(step), noam->learning_rate(step), 1e-12 * noam->learning_rate(4000)) << step;
  EXPECT_THROW(registry.create<Schedule>("inverse_sqrt", {{"warmup", "0"}}), PluginError);
}

}  // namespace
}  // namespace ablate
