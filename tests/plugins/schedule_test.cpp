// Tests for the built-in schedule plugins (constant, noam, cosine), loaded from the built-in
// plugin dir as `ablate` loads them: each one's formula, defaults and refused options.
#include <cmath>

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

}  // namespace
}  // namespace ablate
