// Tests for validate_plugins (framework/spec/plugin_validation.hpp) against a fake catalog:
// unknown plugins with the available names, unknown and ill-typed options, required options,
// and declared defaults filled into the resolved spec.
#include "spec/plugin_validation.hpp"

#include "framework/spec/spec_test_util.hpp"

namespace ablate::spec {
namespace {

using testing::contains;
using testing::usage_error;

class FakeCatalog final : public PluginCatalog {
 public:
  FakeCatalog() {
    auto opt = [](std::string name, OptionType type, std::optional<std::string> def, std::vector<std::string> choices = {}) {
      return OptionDescriptor{std::move(name), type, std::move(def), std::move(choices), "doc of it"};
    };
    plugins_["task"]["copy"] = {opt("vocab_size", OptionType::Int, std::nullopt), opt("length", OptionType::Int, "16")};
    plugins_["block"]["post_norm"] = {opt("norm", OptionType::String, "layer_norm", {"layer_norm", "rms_norm"})};
    plugins_["block"]["pre_norm"] = plugins_["block"]["post_norm"];
    plugins_["attention"]["mha"] = {opt("kv_heads", OptionType::Int, "0")};
    plugins_["positional_encoding"]["sinusoidal"] = {opt("base", OptionType::Float, "10000")};
    plugins_["ffn"]["relu"] = {};
    plugins_["ffn"]["gelu"] = {};
    plugins_["backend"]["onednn"] = {opt("threads", OptionType::Int, "2")};
    plugins_["backend"]["reference"] = {};
    plugins_["schedule"]["constant"] = {opt("lr", OptionType::Float, "0.001")};
    plugins_["schedule"]["noam"] = {opt("warmup", OptionType::Int, "4000"), opt("factor", OptionType::Float, "1.0")};
    plugins_["optimizer"]["adam"] = {opt("beta1", OptionType::Float, "0.9"), opt("eps", OptionType::Float, "1e-9")};
    plugins_["optimizer"]["lion"] = {opt("beta1", OptionType::Float, "0.9")};
  }
  std::optional<std::vector<OptionDescriptor>> options(const std::string& kind, const std::string& name) const override {
    const auto k = plugins_.find(kind);
    if (k == plugins_.end()) return std::nullopt;
    const auto p = k->second.find(name);
    if (p == k->second.end()) return std::nullopt;
    return p->second;
  }
  std::vector<std::string> names(const std::string& kind) const override {
    std::vector<std::string> out;
    if (auto k = plugins_.find(kind); k != plugins_.end())
      for (const auto& [n, o] : k->second) out.push_back(n);
    return out;
  }

 private:
  std::map<std::string, std::map<std::string, std::vector<OptionDescriptor>>> plugins_;
};

std::string validation_error(const std::string& yaml) {
  ExperimentSpec s = parse_spec(yaml, "t.yaml");
  return usage_error([&] { validate_plugins(s, FakeCatalog()); });
}

TEST(SpecPlugins, ValidSpecGetsThePluginDefaults) {
  ExperimentSpec s = parse_spec(
      "name: a\ntask: {plugin: copy, vocab_size: 10}\ntrain: {steps: 1, schedule: {plugin: noam, warmup: 5}}\n", "t.yaml");
  validate_plugins(s, FakeCatalog());
  EXPECT_EQ(s.task, (PluginRef{"copy", {{"length", "16"}, {"vocab_size", "10"}}}));
  EXPECT_EQ(s.model.block, (PluginRef{"post_norm", {{"norm", "layer_norm"}}}));
  EXPECT_EQ(s.model.attention, (PluginRef{"mha", {{"kv_heads", "0"}}}));
  EXPECT_EQ(s.model.positional_encoding, (PluginRef{"sinusoidal", {{"base", "10000"}}}));
  EXPECT_EQ(s.backend, (PluginRef{"onednn", {{"threads", "2"}}}));
  EXPECT_EQ(s.train.schedule, (PluginRef{"noam", {{"factor", "1.0"}, {"warmup", "5"}}}));
  EXPECT_EQ(s.train.optimizer.plugin, (PluginRef{"adam", {{"beta1", "0.9"}, {"eps", "1e-9"}}}));
  // The resolved spec carries the plugin defaults and still validates.
  const std::string yaml = resolved_yaml(s);
  EXPECT_TRUE(contains(yaml, "block: {plugin: post_norm, norm: layer_norm}")) << yaml;
  ExperimentSpec back = parse_spec(yaml, "r.yaml");
  validate_plugins(back, FakeCatalog());
  EXPECT_EQ(back, s);
}

// The optimizer's options sit beside the framework's keys in train.optimizer's map: an unknown
// option is named with the rule's, the framework's keys are not options.
TEST(SpecPlugins, OptimizerOptionsAreCheckedBesideTheFrameworksKeys) {
  const std::string e = validation_error(
      "name: a\ntask: {plugin: copy, vocab_size: 1}\ntrain:\n  steps: 1\n  optimizer: {plugin: lion, lr: 0.01, beta2: 0.9, weight_decay: 0.1}\n");
  EXPECT_TRUE(
      contains(e, "t.yaml:5:39: train.optimizer.beta2: optimizer plugin 'lion' has no option 'beta2'; expected one of beta1"))
      << e;
  EXPECT_FALSE(contains(e, "'lr'")) << e;
  EXPECT_FALSE(contains(e, "weight_decay")) << e;
}

TEST(SpecPlugins, UnknownPluginListsTheAvailableNames) {
  const std::string e =
      validation_error("name: a\ntask: {plugin: copy, vocab_size: 1}\ntrain: {steps: 1}\nmodel:\n  block: pre_nrom\n");
  EXPECT_TRUE(contains(e,
                       "t.yaml:5:10: model.block: unknown block plugin 'pre_nrom'; expected one of post_norm, pre_norm "
                       "(did you mean 'pre_norm'?)"))
      << e;
  const std::string none =
      validation_error("name: a\ntask: {plugin: copy, vocab_size: 1}\ntrain: {steps: 1}\nmodel: {ffn: swiglu}\n");
  EXPECT_TRUE(contains(none, "t.yaml:4:14: model.ffn: unknown ffn plugin 'swiglu'; expected one of gelu, relu")) << none;
}

TEST(SpecPlugins, UnknownOptionAtItsKey) {
  const std::string e = validation_error(
      "name: a\ntask: {plugin: copy, vocab_size: 1}\ntrain:\n  steps: 1\n  schedule: {plugin: noam, warmpu: 5}\n");
  EXPECT_TRUE(
      contains(e,
               "t.yaml:5:28: train.schedule.warmpu: schedule plugin 'noam' has no option 'warmpu'; expected one of warmup, "
               "factor (did you mean 'warmup'?)"))
      << e;
}

TEST(SpecPlugins, IllTypedOptionAndBadChoice) {
  const std::string e = validation_error(
      "name: a\ntask: {plugin: copy, vocab_size: ten}\ntrain: {steps: 1}\nmodel:\n  block: {plugin: pre_norm, norm: rms}\n");
  EXPECT_TRUE(contains(e,
                       "t.yaml:2:34: task.vocab_size: 'ten' is not a valid value of task plugin 'copy' option 'vocab_size'; "
                       "expected an integer (int64)"))
      << e;
  EXPECT_TRUE(contains(e,
                       "t.yaml:5:35: model.block.norm: 'rms' is not a valid value of block plugin 'pre_norm' option 'norm'; "
                       "expected one of: layer_norm, rms_norm"))
      << e;
}

TEST(SpecPlugins, RequiredOptionMissing) {
  const std::string e = validation_error("name: a\ntask: copy\ntrain: {steps: 1}\n");
  EXPECT_TRUE(contains(e, "t.yaml:2:7: task: task plugin 'copy' needs option 'vocab_size'; expected vocab_size: int (doc of it)"))
      << e;
}

TEST(SpecPlugins, OverrideProblemsNameTheOverride) {
  ExperimentSpec s = parse_spec("name: a\ntask: {plugin: copy, vocab_size: 1}\ntrain: {steps: 1}\n", "t.yaml",
                                {"backend=cuda", "model.block.norm=x"});
  const std::string e = usage_error([&] { validate_plugins(s, FakeCatalog()); });
  EXPECT_TRUE(contains(e, "--set backend=cuda: backend: unknown backend plugin 'cuda'; expected one of onednn, reference")) << e;
  EXPECT_TRUE(contains(e, "--set model.block.norm=x: model.block.norm: 'x' is not a valid value")) << e;
}

}  // namespace
}  // namespace ablate::spec
