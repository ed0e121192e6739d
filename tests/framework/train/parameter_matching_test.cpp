// Tests for model.match_parameters (framework/train/parameter_matching): the FFN width chosen
// against a hand count, the chosen width the closest of its neighbours, the model built with it
// (and recorded), the spec key's round trip and refusals, and old specs' identities unchanged.
#include "train/parameter_matching.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "framework/test_dirs.hpp"
#include "train/compute.hpp"
#include "train/experiment.hpp"
#include "validation/validation.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;

// The copy task's encoder-decoder, D 64, H 4, two layers per stack (six attention modules: two
// encoder self, two decoder self, two cross; four ReLU FFNs), on the reference backend.
const char* kSpec =
    "name: match\n"
    "task: {plugin: copy, vocab_size: 32, max_len: 8}\n"
    "model: {d_model: 64, heads: 4, layers: 2, d_ff: 256, dropout: 0.0}\n"
    "backend: reference\n"
    "train: {steps: 2, batch_size: 4}\n";

class ParameterMatching : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("parameter_matching");
    std::ofstream(dir_ / "spec.yaml") << kSpec;
  }
  void TearDown() override { fs::remove_all(dir_); }
  validation::LoadedSpec load(const std::vector<std::string>& overrides) {
    std::ostringstream err;
    return validation::load_validated_spec((dir_ / "spec.yaml").string(), {overrides, {}}, err);
  }
  fs::path dir_;
};

// One k/v head instead of four saves, per attention module, k and v's 64 x 48 weights and 48 biases:
// 2 (64 48 + 48) = 6,240, six modules 37,440. A ReLU FFN has 2 64 F + F + 64 weights, four FFNs
// 516 per unit of F: 37,440 / 516 = 72.56 more, so F 328 (289 short) or 329 (228 over): 329.
TEST_F(ParameterMatching, GroupedKeysGetTheFfnWidthThatRestoresTheReferenceCount) {
  const validation::LoadedSpec loaded =
      load({"model.attention={plugin: mha, kv_heads: 1}", "model.match_parameters={attention: mha}"});
  Experiment ex(loaded.spec, *loaded.registry);
  ASSERT_TRUE(ex.parameter_match.has_value());
  const ParameterMatch& m = *ex.parameter_match;
  EXPECT_EQ(m.d_ff, 329);
  EXPECT_EQ(m.parameters - m.reference, 228);
  EXPECT_EQ(count_parameters(*ex.store).of("non_embedding"), m.parameters);  // the model is built with it
  const validation::LoadedSpec plain = load({});
  Experiment reference(plain.spec, *plain.registry);
  EXPECT_EQ(count_parameters(*reference.store).of("non_embedding"), m.reference);
  // The closest: neither neighbour is nearer the reference.
  for (const std::int64_t f : {m.d_ff - 1, m.d_ff + 1})
    EXPECT_GT(std::llabs(non_embedding_parameters(loaded.spec, f, *loaded.registry, ex.task_info) - m.reference),
              std::llabs(m.parameters - m.reference))
        << f;
  EXPECT_EQ(m.text, "model.match_parameters {attention: mha}: FFN width 256 -> 329, non-embedding parameters " +
                        std::string("233,700 (reference 233,472, 0.10% apart)"));
}

// A gated FFN already holds a d_ff FFN's weights (hidden floor(2 d_ff / 3)); matched to ReLU it
// moves at most a little, and the reference itself stays where it is.
TEST_F(ParameterMatching, AReferenceEqualToTheModelKeepsTheWidth) {
  const validation::LoadedSpec same = load({"model.match_parameters={ffn: relu}"});
  Experiment ex(same.spec, *same.registry);
  EXPECT_EQ(ex.parameter_match->d_ff, 256);
  EXPECT_EQ(ex.parameter_match->parameters, ex.parameter_match->reference);
  const validation::LoadedSpec gated = load({"model.ffn=swiglu", "model.match_parameters={ffn: relu}"});
  Experiment g(gated.spec, *gated.registry);
  EXPECT_NEAR(static_cast<double>(g.parameter_match->d_ff), 256.0, 2.0);
  EXPECT_LE(std::llabs(g.parameter_match->parameters - g.parameter_match->reference), 3 * 64 * 2);
}

TEST_F(ParameterMatching, TheKeyRoundTripsAndIsLeftOutOfSpecsWithoutIt) {
  const spec::ExperimentSpec with = load({"model.match_parameters={attention: {plugin: mha, kv_heads: 4}}"}).spec;
  ASSERT_EQ(with.model.match_parameters.size(), 1u);
  EXPECT_EQ(with.model.match_parameters[0].first, "attention");
  const std::string yaml = spec::resolved_yaml(with);
  EXPECT_NE(yaml.find("match_parameters: {attention: {plugin: mha, kv_heads: 4}}"), std::string::npos) << yaml;
  EXPECT_EQ(spec::parse_spec(yaml, "resolved").model, with.model);
  // Without the key the resolved YAML (and so every older run's identity) has no trace of it.
  EXPECT_EQ(spec::resolved_yaml(load({}).spec).find("match_parameters"), std::string::npos);
}

TEST_F(ParameterMatching, RefusalsNameTheKeyAndWhatWasExpected) {
  const auto refused = [&](const std::string& value, const std::string& needle) {
    try {
      load({"model.match_parameters=" + value});
      ADD_FAILURE() << value << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("{d_ff: 128}", "model.match_parameters.d_ff: 'd_ff' cannot be set for the reference");
  refused("{atention: mha}", "'atention' is not a model key; expected a map of model keys");
  refused("{atention: mha}", "did you mean 'attention'?");
  refused("relu", "model.match_parameters: 'relu' is not a map of model keys");
  refused("{heads: 3}", "model.match_parameters: {heads: 3} does not make a valid model");
  refused("{ffn: nonesuch}", "{ffn: nonesuch} does not make a valid model");
  // An FFN whose width ignores d_ff cannot be matched: refused by validation's dry build of the
  // model, before a run would build it.
  try {
    load({"model.ffn={plugin: swiglu, hidden: 100}", "model.match_parameters={ffn: relu}"});
    ADD_FAILURE() << "a fixed hidden width was matched";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("model: the model cannot be built with these settings"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the FFN width does not change this model's parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ablate::train
