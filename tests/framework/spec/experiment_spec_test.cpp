// Tests for the typed experiment spec (framework/spec/experiment_spec.hpp): defaults, every kind
// of error with its FILE:LINE:COLUMN, `extends:` chains, `--set` overrides, the resolved-YAML
// round trip, and sweep validation.
#include "spec/experiment_spec.hpp"

#include <fstream>
#include <map>

#include "framework/spec/spec_test_util.hpp"

namespace ablate::spec {
namespace {

using testing::contains;
using testing::kMinimal;
using testing::usage_error;
using testing::write_file;

const std::filesystem::path kData = std::filesystem::path(ABLATE_SPEC_TEST_DATA);

std::string parse_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return usage_error([&] { parse_spec(yaml, "t.yaml", overrides); });
}

TEST(SpecLoad, MinimalSpecGetsTheTransformerBaseDefaults) {
  const ExperimentSpec s = parse_spec(kMinimal, "t.yaml");
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.task, (PluginRef{"copy", {}}));
  EXPECT_EQ(s.model.arch, Arch::EncoderDecoder);
  EXPECT_EQ(s.model.d_model, 512);
  EXPECT_EQ(s.model.heads, 8);
  EXPECT_EQ(s.model.layers, 6);
  EXPECT_EQ(s.model.encoder_layers, 6);
  EXPECT_EQ(s.model.decoder_layers, 6);
  EXPECT_EQ(s.model.d_ff, 2048);
  EXPECT_DOUBLE_EQ(s.model.dropout, 0.1);
  EXPECT_DOUBLE_EQ(s.model.attention_dropout, 0.0);
  EXPECT_DOUBLE_EQ(s.model.embedding_dropout, 0.1);
  EXPECT_EQ(s.model.block.name, "post_norm");
  EXPECT_EQ(s.model.positional_encoding.name, "sinusoidal");
  EXPECT_EQ(s.model.ffn.name, "relu");
  EXPECT_TRUE(s.model.qkv_bias && s.model.out_bias && s.model.scale_embedding && s.model.final_norm && s.model.tie_embeddings);
  EXPECT_DOUBLE_EQ(s.model.norm_eps, 1e-5);
  EXPECT_EQ(s.model.pooling, Pooling::Mean);
  EXPECT_EQ(s.backend.name, "onednn");
  EXPECT_EQ(s.precision, Precision::f32);
  EXPECT_EQ(s.train.steps, 10);
  EXPECT_EQ(s.train.batch_size, 64);
  EXPECT_EQ(s.train.optimizer.plugin, (PluginRef{"adam", {}}));  // its options' defaults come with the plugin
  EXPECT_DOUBLE_EQ(s.train.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(s.train.optimizer.weight_decay, 0.0);
  EXPECT_TRUE(s.train.optimizer.groups.empty());
  EXPECT_EQ(s.train.schedule.name, "constant");
  EXPECT_DOUBLE_EQ(s.train.clip_grad_norm, 0.0);
  EXPECT_DOUBLE_EQ(s.train.label_smoothing, 0.0);
  EXPECT_EQ(s.train.seed, 1);
  EXPECT_TRUE(s.train.deterministic);
  EXPECT_FALSE(s.train.early_stopping);
  EXPECT_FALSE(s.train.loss_threshold);
  EXPECT_EQ(s.log.every, 50);
  EXPECT_EQ(s.log.attention.every, 0);
  EXPECT_EQ(s.log.attention.probe_examples, 4);
  EXPECT_EQ(s.eval.every, 500);
  EXPECT_EQ(s.eval.metrics.size(), 4u);
  EXPECT_EQ(s.eval.batches, 8);
  EXPECT_TRUE(s.sweep.empty());
}

TEST(SpecIdentity, TheKeptFilesAndExecutionKeysAreNoPartOfIt) {
  const ExperimentSpec plain = parse_spec(kMinimal, "t.yaml", {"train.steps=10"});
  const std::map<std::string, std::string> values = {{"train.keep_checkpoints", "3"},
                                                     {"train.ema", "0.9"},
                                                     {"train.branch_points", "[2, 5]"},
                                                     {"log.tensorboard", "true"},
                                                     {"backend.threads", "2"}};
  std::vector<std::string> keys = kept_files_keys();
  keys.insert(keys.end(), execution_keys().begin(), execution_keys().end());
  for (const std::string& key : keys) {
    ASSERT_TRUE(values.count(key)) << key << ": give the test a value for it";
    const ExperimentSpec set = parse_spec(kMinimal, "t.yaml", {"train.steps=10", key + "=" + values.at(key)});
    EXPECT_NE(resolved_yaml(set), resolved_yaml(plain)) << key << " is recorded";
    EXPECT_EQ(identity_yaml(set), identity_yaml(plain)) << key << " is no part of the run's identity";
  }
  EXPECT_NE(identity_yaml(parse_spec(kMinimal, "t.yaml", {"train.steps=10", "train.branch_from={run: r, step: 2}"})),
            identity_yaml(plain))
      << "where a run starts is part of it";
}

TEST(SpecLoad, LayersAndDropoutDefaultTheirSpecificForms) {
  const ExperimentSpec s =
      parse_spec("name: a\ntask: copy\ntrain: {steps: 1}\nmodel: {layers: 2, decoder_layers: 4, dropout: 0.3}\n", "t.yaml");
  EXPECT_EQ(s.model.encoder_layers, 2);
  EXPECT_EQ(s.model.decoder_layers, 4);
  EXPECT_DOUBLE_EQ(s.model.embedding_dropout, 0.3);
}

TEST(SpecLoad, PluginReferencesKeepTheirOptionsAndMarks) {
  const ExperimentSpec s = parse_spec(
      "name: a\ntask: {plugin: copy, vocab_size: 32, length: 16}\ntrain:\n  steps: 1\n  schedule: {plugin: noam, warmup: 400}\n",
      "t.yaml");
  EXPECT_EQ(s.task, (PluginRef{"copy", {{"length", "16"}, {"vocab_size", "32"}}}));
  EXPECT_EQ(s.train.schedule, (PluginRef{"noam", {{"warmup", "400"}}}));
  EXPECT_EQ(s.marks.of("task").str(), "t.yaml:2:16");
  EXPECT_EQ(s.marks.of("train.schedule.warmup").str(), "t.yaml:5:36");
  EXPECT_EQ(s.marks.of("model.d_model").str(), "t.yaml:1:1");  // a default: the document
}

TEST(SpecErrors, UnknownKeySuggestsTheClosestAndListsTheAllowed) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel:\n  d_modle: 128\n");
  EXPECT_TRUE(contains(e, "t.yaml:5:3: model.d_modle: unknown key; expected one of arch, d_model, heads,")) << e;
  EXPECT_TRUE(contains(e, "(did you mean 'd_model'?)")) << e;
  const std::string top = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\ntrian: {}\n");
  EXPECT_TRUE(contains(top, "t.yaml:4:1: trian: unknown key; expected one of extends, name,")) << top;
  EXPECT_TRUE(contains(top, "(did you mean 'train'?)")) << top;
}

TEST(SpecErrors, WrongTypeNamesTheValueAndTheExpectedType) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain:\n  steps: ten\n  deterministic: maybe\nmodel: {d_model: [1]}\n");
  EXPECT_TRUE(contains(e, "t.yaml:4:10: train.steps: 'ten' is not an integer; expected an integer > 0")) << e;
  EXPECT_TRUE(contains(e, "t.yaml:5:18: train.deterministic: 'maybe' is not a bool; expected true or false")) << e;
  EXPECT_TRUE(contains(e, "t.yaml:6:18: model.d_model: a list is not an integer; expected an integer > 0")) << e;
}

TEST(SpecErrors, OutOfRangeNamesTheRange) {
  const std::string e = parse_error(
      "name: a\ntask: copy\ntrain: {steps: 0, optimizer: {groups: [{name: g, roles: norm, lr_scale: -1}], lr: 0}}\n"
      "model: {dropout: 1.0, norm_eps: -1}\n");
  EXPECT_TRUE(contains(e, "t.yaml:3:16: train.steps: 0 is out of range; expected an integer > 0")) << e;
  EXPECT_TRUE(contains(e, "train.optimizer.groups[0].lr_scale: -1 is out of range; expected a number >= 0")) << e;
  EXPECT_TRUE(contains(e, "train.optimizer.lr: 0 is out of range; expected a number > 0")) << e;
  EXPECT_TRUE(contains(e, "t.yaml:4:18: model.dropout: 1.0 is out of range; expected a number in [0, 1)")) << e;
  EXPECT_TRUE(contains(e, "model.norm_eps: -1 is out of range; expected a number > 0")) << e;
}

TEST(SpecErrors, EnumListsTheAllowedValuesAndTheClosest) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel:\n  arch: encoder-decoder\nprecision: fp16\n");
  EXPECT_TRUE(contains(e,
                       "t.yaml:5:9: model.arch: 'encoder-decoder' is not one of encoder, decoder, encoder_decoder "
                       "(did you mean 'encoder_decoder'?)"))
      << e;
  EXPECT_TRUE(contains(e, "t.yaml:6:12: precision: 'fp16' is not one of f32, bf16")) << e;
}

TEST(SpecErrors, HeadsMustDivideDModel) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel:\n  d_model: 100\n  heads: 8\n");
  EXPECT_TRUE(contains(e, "t.yaml:6:10: model.heads: 8 does not divide model.d_model 100; expected a divisor of d_model")) << e;
  const std::string d = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel: {d_model: 100}\n");
  EXPECT_TRUE(contains(d, "t.yaml:4:18: model.d_model: 100 is not divisible by model.heads 8")) << d;
}

TEST(SpecErrors, SharedEmbeddingsNeedAnEncoderDecoder) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel: {arch: decoder, share_embeddings: true}\n");
  EXPECT_TRUE(contains(e,
                       "model.share_embeddings: true with model.arch decoder, which has one embedding table; expected false, "
                       "or model.arch encoder_decoder"))
      << e;
}

TEST(SpecErrors, AnInvalidHeadsIsNotAlsoReportedAsNotDividing) {
  const std::string e = parse_error("name: a\ntask: copy\ntrain: {steps: 1}\nmodel: {d_model: 100, heads: 0}\n");
  EXPECT_TRUE(contains(e, "model.heads: 0 is out of range")) << e;
  EXPECT_FALSE(contains(e, "divid")) << e;
}

TEST(SpecErrors, MissingRequiredKeys) {
  const std::string e = parse_error("description: nothing else\n");
  EXPECT_TRUE(contains(e, "t.yaml:1:1: name: missing (required); expected a string")) << e;
  EXPECT_TRUE(contains(e, "t.yaml:1:1: task: missing (required); expected a plugin name")) << e;
  EXPECT_TRUE(contains(e, "t.yaml:1:1: train.steps: missing (required); expected an integer > 0")) << e;
  const std::string es = parse_error("name: a\ntask: copy\ntrain:\n  steps: 1\n  early_stopping: {mode: min}\n");
  EXPECT_TRUE(contains(es, "t.yaml:5:3: train.early_stopping.metric: missing (required)")) << es;
  const std::string steps = parse_error("name: a\ntask: copy\ntrain:\n  batch_size: 8\n");
  EXPECT_TRUE(contains(steps, "t.yaml:3:1: train.steps: missing (required)")) << steps;
  const std::string p = parse_error("name: a\ntask: {vocab_size: 3}\ntrain: {steps: 1}\n");
  EXPECT_TRUE(contains(p, "t.yaml:2:7: task: no `plugin:` key; expected a plugin name, or {plugin: NAME, <options>}")) << p;
}

TEST(SpecErrors, BadNameIsRejected) {
  const std::string e = parse_error("name: my run\ntask: copy\ntrain: {steps: 1}\n");
  EXPECT_TRUE(contains(e, "t.yaml:1:7: name: 'my run' is not a valid name; expected letters, digits")) << e;
}

TEST(SpecErrors, AllProblemsAreReportedTogetherInFileOrder) {
  const std::string e = parse_error("name: a\ntask: copy\nmodel: {pooling: last, d_ff: -1}\ntrain: {steps: x}\n");
  const auto pooling = e.find("t.yaml:3:18: model.pooling");
  const auto d_ff = e.find("t.yaml:3:30: model.d_ff");
  const auto steps = e.find("t.yaml:4:16: train.steps");
  ASSERT_NE(pooling, std::string::npos) << e;
  ASSERT_NE(d_ff, std::string::npos) << e;
  ASSERT_NE(steps, std::string::npos) << e;
  EXPECT_LT(pooling, d_ff);
  EXPECT_LT(d_ff, steps);
}

TEST(SpecErrors, MalformedYamlHasItsPosition) {
  const std::string e = parse_error("name: a\ntask: [copy\n");
  EXPECT_TRUE(contains(e, "t.yaml:")) << e;
  EXPECT_TRUE(contains(e, "invalid YAML")) << e;
  const std::string indent = parse_error("name: a\n  task: copy\n");
  EXPECT_TRUE(contains(indent, "t.yaml:2:7: invalid YAML: illegal map value")) << indent;
}

TEST(SpecErrors, DuplicateKeyNamesBothPlaces) {
  const std::string e = parse_error("name: a\ntask: copy\nname: b\ntrain: {steps: 1}\n");
  EXPECT_TRUE(contains(e, "t.yaml:3:1: name: duplicate key (first written at t.yaml:1:1)")) << e;
}

TEST(SpecErrors, NotAMap) {
  EXPECT_TRUE(contains(parse_error("- a\n- b\n"), "t.yaml:1:1: a list is not a spec; expected a map"));
  EXPECT_TRUE(contains(parse_error("name: a\ntask: copy\ntrain: 5\n"), "t.yaml:3:8: train: '5' is not a map"));
}

TEST(SpecErrors, MissingFileIsAUsageError) {
  const std::string e = usage_error([] { load_spec("/nonexistent/spec.yaml"); });
  EXPECT_TRUE(contains(e, "cannot read spec file '/nonexistent/spec.yaml'")) << e;
}

TEST(SpecExtends, ChainsMergeDepthFirstWithTheChildOverriding) {
  const ExperimentSpec s = load_spec(kData / "child.yaml");
  EXPECT_EQ(s.name, "child");
  EXPECT_EQ(s.description, "the base");
  EXPECT_EQ(s.task, (PluginRef{"copy", {{"length", "8"}, {"vocab_size", "32"}}}));
  EXPECT_EQ(s.model.d_model, 128);
  EXPECT_EQ(s.model.heads, 8);
  EXPECT_EQ(s.model.layers, 3);
  EXPECT_EQ(s.model.encoder_layers, 3);
  EXPECT_DOUBLE_EQ(s.model.dropout, 0.2);
  EXPECT_DOUBLE_EQ(s.model.embedding_dropout, 0.2);
  EXPECT_EQ(s.model.block, (PluginRef{"pre_norm", {}}));  // another plugin: the base's options go
  EXPECT_EQ(s.train.steps, 300);
  EXPECT_EQ(s.train.schedule, (PluginRef{"noam", {{"warmup", "200"}}}));  // same plugin: options merge
  EXPECT_EQ(s.train.optimizer.plugin, (PluginRef{"lion", {}}));           // another optimizer: the base's beta2 goes,
  EXPECT_DOUBLE_EQ(s.train.optimizer.lr, 0.002);                          // the spec keys beside it stay
  EXPECT_EQ(s.eval.lengths, (std::vector<std::int64_t>{16}));             // lists replace
  // Marks point into the file that wrote each value.
  EXPECT_EQ(s.marks.of("model.d_model").str(), (kData / "base.yaml").string() + ":6:12");
  EXPECT_EQ(s.marks.of("model.layers").str(), (kData / "middle.yaml").string() + ":5:11");
  EXPECT_EQ(s.marks.of("train.steps").str(), (kData / "child.yaml").string() + ":9:10");
}

TEST(SpecExtends, ErrorsPointIntoTheFileThatWroteTheValue) {
  ablate::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "name: b\ntask: copy\nmodel:\n  heads: seven\n");
  write_file(dir.path() / "child.yaml", "extends: base.yaml\ntrain: {steps: 1}\n");
  const std::string e = usage_error([&] { load_spec(dir.path() / "child.yaml"); });
  EXPECT_TRUE(contains(e, (dir.path() / "base.yaml").string() + ":4:10: model.heads: 'seven' is not an integer")) << e;
}

TEST(SpecExtends, AnEmptySectionInTheChildKeepsTheBase) {
  ablate::testing::TempDir dir;
  write_file(dir.path() / "base.yaml", "name: b\ntask: copy\ntrain: {steps: 1}\nmodel: {d_model: 64}\n");
  write_file(dir.path() / "child.yaml", "extends: base.yaml\nmodel:\n  # d_model: 32\n");
  EXPECT_EQ(load_spec(dir.path() / "child.yaml").model.d_model, 64);
}

TEST(SpecExtends, CycleIsAnErrorNamingTheChain) {
  ablate::testing::TempDir dir;
  write_file(dir.path() / "a.yaml", "extends: b.yaml\nname: a\n");
  write_file(dir.path() / "b.yaml", "extends: sub/c.yaml\n");
  write_file(dir.path() / "sub" / "c.yaml", "extends: ../a.yaml\n");
  const std::string e = usage_error([&] { load_spec(dir.path() / "a.yaml"); });
  const auto canonical = std::filesystem::canonical(dir.path());
  EXPECT_TRUE(contains(e, "extends cycle: " + (canonical / "a.yaml").string() + " -> " + (canonical / "b.yaml").string() +
                              " -> " + (canonical / "sub/c.yaml").string() + " -> " + (canonical / "a.yaml").string()))
      << e;
  EXPECT_TRUE(contains(e, "c.yaml:1:10: extends:")) << e;
}

TEST(SpecExtends, MissingParentNamesTheExtendsLine) {
  ablate::testing::TempDir dir;
  write_file(dir.path() / "a.yaml", "name: a\nextends: nope.yaml\n");
  const std::string e = usage_error([&] { load_spec(dir.path() / "a.yaml"); });
  EXPECT_TRUE(
      contains(e, "a.yaml:2:10: extends: cannot read spec file '" + (dir.path() / "nope.yaml").string() + "': it does not exist"))
      << e;
}

TEST(SpecExtends, PluginPathsAreRelativeToTheirFile) {
  ablate::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "my_plugins");
  write_file(dir.path() / "base" / "b.yaml", "name: b\ntask: copy\ntrain: {steps: 1}\nplugin_paths: [../my_plugins, /tmp]\n");
  write_file(dir.path() / "a.yaml", "extends: base/b.yaml\n");
  const ExperimentSpec s = load_spec(dir.path() / "a.yaml");
  EXPECT_EQ(s.plugin_paths,
            (std::vector<std::string>{std::filesystem::absolute(dir.path() / "my_plugins").lexically_normal().string(), "/tmp"}));
  // One that does not exist is a spec error at its entry.
  write_file(dir.path() / "c.yaml", "name: c\ntask: copy\nplugin_paths: [nowhere]\n");
  const std::string e = usage_error([&] { load_spec(dir.path() / "c.yaml"); });
  EXPECT_TRUE(contains(e, "c.yaml:3:16: plugin_paths[0]: '" + (dir.path() / "nowhere").string() + "' does not exist")) << e;
}

TEST(SpecOverrides, SetReplacesValuesPluginsAndLists) {
  const ExperimentSpec s =
      load_spec(kData / "base.yaml", {"model.d_model=256", "model.block=pre_norm", "train.optimizer.beta1=0.8",
                                      "train.schedule.warmup=50", "backend={plugin: reference}", "name=renamed"});
  EXPECT_EQ(s.model.d_model, 256);
  EXPECT_EQ(s.model.block, (PluginRef{"pre_norm", {}}));
  EXPECT_EQ(s.train.optimizer.plugin, (PluginRef{"adam", {{"beta1", "0.8"}, {"beta2", "0.99"}}}));
  EXPECT_EQ(s.train.schedule, (PluginRef{"noam", {{"warmup", "50"}}}));
  EXPECT_EQ(s.backend, (PluginRef{"reference", {}}));
  EXPECT_EQ(s.name, "renamed");
  EXPECT_EQ(s.marks.of("model.d_model").str(), "--set model.d_model=256");
}

TEST(SpecOverrides, SetAddsAnOptionToAPluginNamedByName) {
  const ExperimentSpec s = parse_spec(kMinimal, "t.yaml", {"train.schedule=noam", "train.schedule.warmup=10", "task.length=4"});
  EXPECT_EQ(s.train.schedule, (PluginRef{"noam", {{"warmup", "10"}}}));
  EXPECT_EQ(s.task, (PluginRef{"copy", {{"length", "4"}}}));
}

TEST(SpecOverrides, UnknownPathSuggestsTheClosest) {
  const std::string e = parse_error(kMinimal, {"model.d_modle=3", "nonsense.key.x=1"});
  EXPECT_TRUE(contains(
      e, "--set model.d_modle=3: model.d_modle: unknown key path; expected a spec key path (did you mean 'model.d_model'?)"))
      << e;
  EXPECT_TRUE(contains(e, "--set nonsense.key.x=1: nonsense.key.x: unknown key path")) << e;
}

TEST(SpecOverrides, BadValuesNameTheOverride) {
  EXPECT_TRUE(contains(parse_error(kMinimal, {"model.d_model=-4"}), "--set model.d_model=-4: model.d_model: -4 is out of range"));
  EXPECT_TRUE(
      contains(parse_error(kMinimal, {"model.d_model"}), "--set model.d_model: not an override; expected KEY.PATH=VALUE"));
  EXPECT_TRUE(contains(parse_error(kMinimal, {"model.d_model=[1,"}), "--set model.d_model=[1,: the value is not valid YAML"));
}

TEST(SpecResolved, RoundTripGivesAnEqualSpec) {
  const ExperimentSpec s =
      load_spec(kData / "child.yaml",
                {"train.early_stopping={metric: eval.exact_match, target: 0.99, patience: 3}", "eval.metrics=[loss, exact_match]",
                 "train.loss_threshold=0.001", "sweep.seeds=[1, 2]", "model.norm_eps=1e-6", "description='yes: quoted'"});
  const std::string yaml = resolved_yaml(s);
  const ExperimentSpec back = parse_spec(yaml, "resolved.yaml");
  EXPECT_EQ(back, s) << yaml;
  EXPECT_EQ(resolved_yaml(back), yaml);
}

TEST(SpecUpgrade, AnOlderRunsOptimizerReadsInTodaysKeys) {
  const std::string old =
      "name: x\ntask: copy\ntrain:\n  steps: 1\n  optimizer: {name: adamw, lr: 0.002, betas: [0.8, 0.95], eps: 1e-06, "
      "weight_decay: 0.1}\n";
  const ExperimentSpec s = parse_spec(upgraded_run_yaml(old), "old.yaml");
  EXPECT_EQ(s.train.optimizer.plugin, (PluginRef{"adamw", {{"beta1", "0.8"}, {"beta2", "0.95"}, {"eps", "1e-06"}}}));
  EXPECT_DOUBLE_EQ(s.train.optimizer.lr, 0.002);
  EXPECT_DOUBLE_EQ(s.train.optimizer.weight_decay, 0.1);
  const std::string today = resolved_yaml(s);
  EXPECT_EQ(upgraded_run_yaml(today), today) << "today's keys are left as they are";
  EXPECT_NE(usage_error([&] { parse_spec(old, "old.yaml"); }).find("write `plugin: NAME`, not `name: NAME`"), std::string::npos)
      << "a spec file in the old keys is told what to write";
}

TEST(SpecResolved, WritesEveryDefault) {
  const std::string yaml = resolved_yaml(parse_spec(kMinimal, "t.yaml"));
  for (const char* key :
       {"arch: encoder_decoder", "d_model: 512", "heads: 8", "encoder_layers: 6", "d_ff: 2048", "dropout: 0.1",
        "block: {plugin: post_norm}", "norm_eps: 1e-05", "backend: {plugin: onednn}", "precision: f32",
        "optimizer: {plugin: adam, lr: 0.001, weight_decay: 0.0, groups: []}", "schedule: {plugin: constant}",
        "early_stopping: ~", "metrics: [loss, perplexity, token_accuracy, exact_match]", "probe_examples: 4", "grid: {}"})
    EXPECT_TRUE(contains(yaml, key)) << key << "\n" << yaml;
  EXPECT_EQ(parse_spec(yaml, "r.yaml"), parse_spec(kMinimal, "t.yaml"));
}

TEST(SpecSweep, AxesAreKeptAsYamlValues) {
  const ExperimentSpec s =
      parse_spec(std::string(kMinimal) +
                     "sweep:\n  grid: {model.block: [pre_norm, post_norm], train.schedule: [{plugin: noam, warmup: 4}]}\n"
                     "  zip: {model.d_model: [128, 256], model.d_ff: [512, 1024]}\n  seeds: [1, 2, 3]\n"
                     "  runs: [{model.ffn: gelu, eval.lengths: [8, 16]}]\n",
                 "t.yaml");
  ASSERT_EQ(s.sweep.grid.size(), 2u);
  EXPECT_EQ(s.sweep.grid[0], (std::pair<std::string, std::vector<std::string>>{"model.block", {"pre_norm", "post_norm"}}));
  EXPECT_EQ(s.sweep.grid[1].second, (std::vector<std::string>{"{plugin: noam, warmup: 4}"}));
  EXPECT_EQ(s.sweep.zip.size(), 2u);
  EXPECT_EQ(s.sweep.seeds, (std::vector<std::int64_t>{1, 2, 3}));
  ASSERT_EQ(s.sweep.runs.size(), 1u);
  EXPECT_EQ(s.sweep.runs[0][1], (std::pair<std::string, std::string>{"eval.lengths", "[8, 16]"}));
  EXPECT_EQ(parse_spec(resolved_yaml(s), "r.yaml"), s);
}

TEST(SpecSweep, UnknownPathAndZipLengthMismatch) {
  const std::string e = parse_error(std::string(kMinimal) +
                                    "sweep:\n  grid: {model.blok: [a, b], model.ffn: relu}\n"
                                    "  zip: {model.d_model: [128, 256], train.seed: [1]}\n  seeds: [-1]\n");
  EXPECT_TRUE(contains(e,
                       "t.yaml:6:10: sweep.grid.model.blok: 'model.blok' is not a spec key path; expected a path such as "
                       "model.block or train.optimizer.lr (did you mean 'model.block'?)"))
      << e;
  EXPECT_TRUE(contains(e, "sweep.grid.model.ffn: 'relu' is not a list of values")) << e;
  EXPECT_TRUE(
      contains(e,
               "t.yaml:7:8: sweep.zip: the lists have different lengths (model.d_model: 2, train.seed: 1); expected lists "
               "of equal length"))
      << e;
  EXPECT_TRUE(contains(e, "sweep.seeds[0]: '-1' is not a seed; expected an integer >= 0")) << e;
}

TEST(SpecPaths, SchemaAndPluginOptionPaths) {
  EXPECT_TRUE(is_spec_path("model.d_model"));
  EXPECT_TRUE(is_spec_path("train.schedule.warmup"));
  EXPECT_TRUE(is_spec_path("task.vocab_size"));
  EXPECT_FALSE(is_spec_path("model.d_modle"));
  EXPECT_FALSE(is_spec_path("train.schedule.a.b"));
  EXPECT_FALSE(is_spec_path("extends"));
}

TEST(SpecEvalGenerate, DefaultsValuesErrorsAndTheResolvedSpec) {
  const GenerateSpec defaults = parse_spec(kMinimal, "t.yaml").eval.generate;
  EXPECT_EQ(defaults.prompt_tokens, 16);
  EXPECT_EQ(defaults.max_tokens, 48);
  EXPECT_DOUBLE_EQ(defaults.temperature, 0.8);
  EXPECT_EQ(defaults.top_k, 0);
  const ExperimentSpec s = parse_spec(std::string(kMinimal) + "eval: {generate: {prompt_tokens: 4, temperature: 0}}\n", "t.yaml",
                                      {"eval.generate.top_k=5"});
  EXPECT_EQ(s.eval.generate, (GenerateSpec{4, 48, 0.0, 5}));
  const std::string yaml = resolved_yaml(s);
  EXPECT_TRUE(contains(yaml, "generate:\n    prompt_tokens: 4\n    max_tokens: 48\n    temperature: 0.0\n    top_k: 5")) << yaml;
  EXPECT_EQ(parse_spec(yaml, "r.yaml"), s);
  const std::string e =
      parse_error(std::string(kMinimal) + "eval:\n  generate: {prompt_tokens: -1, temperature: -0.5, topk: 3}\n");
  EXPECT_TRUE(contains(e, "t.yaml:6:29: eval.generate.prompt_tokens: -1 is out of range; expected an integer >= 0")) << e;
  EXPECT_TRUE(contains(e, "eval.generate.temperature: -0.5 is out of range; expected a number >= 0")) << e;
  EXPECT_TRUE(contains(e,
                       "eval.generate.topk: unknown key; expected one of prompt_tokens, max_tokens, temperature, top_k "
                       "(did you mean 'top_k'?)"))
      << e;
  EXPECT_TRUE(is_spec_path("eval.generate.temperature")) << "--set and sweeps reach it";
}

// ---- the schema: one table drives reading, defaults, the resolved YAML and the docs ----

TEST(SpecSchema, EveryKeyIsDescribedAndEveryValueKeyCanBeSet) {
  const std::vector<KeyDoc> docs = key_docs();
  ASSERT_GT(docs.size(), 60u);
  for (const KeyDoc& d : docs) {
    EXPECT_FALSE(d.type.empty()) << d.path;
    EXPECT_FALSE(d.meaning.empty()) << d.path;
    EXPECT_FALSE(d.required && !d.default_value.empty()) << d.path << ": a required key with a default";
    if (d.path != "extends") {
      EXPECT_TRUE(is_spec_path(d.path)) << d.path;
    }
  }
  EXPECT_EQ(spec_paths().size() + 1, docs.size()) << "every key but extends is a spec path";
}

TEST(SpecSchema, TheDefaultSpecIsWhatAMinimalSpecReadsAndItsYamlLoadsBack) {
  ExperimentSpec d = default_spec();
  EXPECT_TRUE(d.name.empty() && d.task.name.empty() && d.train.steps == 0) << "required keys have no default";
  const ExperimentSpec minimal = parse_spec(kMinimal, "t.yaml");
  d.name = minimal.name;
  d.task = minimal.task;
  d.train.steps = minimal.train.steps;
  EXPECT_EQ(d, minimal);
  EXPECT_EQ(parse_spec(resolved_yaml(minimal), "r.yaml"), minimal);
}

TEST(SpecSchema, TheDocumentedDefaultsAreTheOnesRead) {
  // Setting a key to the default its documentation shows leaves a minimal spec unchanged.
  const ExperimentSpec minimal = parse_spec(kMinimal, "t.yaml");
  int checked = 0;
  for (const KeyDoc& d : key_docs()) {
    if (d.default_value.empty() || d.default_value == "absent" || d.default_value.starts_with("`model.")) continue;
    if (d.type == "map" || d.path.starts_with("train.early_stopping.")) continue;  // would create the section
    std::string value = d.default_value;
    std::erase(value, '`');
    EXPECT_EQ(parse_spec(kMinimal, "t.yaml", {d.path + "=" + value}), minimal) << d.path << " documented " << d.default_value;
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(SpecSchema, TheReferenceDocsHoldTheGeneratedKeyTables) {
  std::ifstream in(std::filesystem::path(ABLATE_DOCS_DIR) / "spec-reference.md");
  ASSERT_TRUE(in) << "cannot read docs/spec-reference.md";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string begin = "<!-- BEGIN key tables: generated by `ablate keys --markdown` -->\n";
  const std::string end = "<!-- END key tables -->";
  const auto b = doc.find(begin), e = doc.find(end);
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e) << "docs/spec-reference.md lacks the markers";
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), key_tables_markdown())
      << "docs/spec-reference.md is out of date: replace the text between the markers with `ablate keys --markdown`";
}

TEST(SpecLoad, EvalLengthsAreDistinctPositiveIntegers) {
  const ExperimentSpec s = parse_spec(std::string(kMinimal) + "eval: {lengths: [16, 64, 32]}\n", "t.yaml");
  EXPECT_EQ(s.eval.lengths, (std::vector<std::int64_t>{16, 64, 32}));
  EXPECT_EQ(parse_spec(resolved_yaml(s), "r.yaml").eval.lengths, s.eval.lengths);
  EXPECT_TRUE(parse_spec(kMinimal, "t.yaml").eval.lengths.empty());
  const std::string zero = parse_error(std::string(kMinimal) + "eval: {lengths: [8, 0]}\n");
  EXPECT_TRUE(contains(zero, "eval.lengths[1]: '0' is not a length; expected an integer >= 1")) << zero;
  const std::string twice = parse_error(std::string(kMinimal) + "eval: {lengths: [8, 16, 8]}\n");
  EXPECT_TRUE(contains(twice, "eval.lengths: lists a length twice; expected distinct lengths")) << twice;
  const std::string scalar = parse_error(std::string(kMinimal) + "eval: {lengths: 8}\n");
  EXPECT_TRUE(contains(scalar, "is not a list; expected a list of integers >= 1")) << scalar;
}

}  // namespace
}  // namespace ablate::spec
