// The typed experiment spec: what a YAML spec file says, after `extends:` and `--set`, read once
// into structs with every default filled in (docs/spec-reference.md documents each key).
// Plugin references keep their option text; validate_plugins() (plugin_validation.hpp) checks them.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/spec_tree.hpp"

namespace ablate::spec {

enum class Arch { encoder, decoder, encoder_decoder };
enum class Pooling { mean, first };
enum class Precision { f32, bf16 };
enum class OptimizerName { adam, adamw };
enum class MetricMode { max, min };
enum class Metric { loss, perplexity, token_accuracy, exact_match };

const char* to_string(Arch v);
const char* to_string(Pooling v);
const char* to_string(Precision v);
const char* to_string(OptimizerName v);
const char* to_string(MetricMode v);
const char* to_string(Metric v);

// A component chosen by name, with its options as scalar text (typed by the plugin's declarations
// in validate_plugins, which also adds the declared defaults).
struct PluginRef {
  std::string name;
  std::map<std::string, std::string> options;
  bool operator==(const PluginRef&) const = default;
};

struct ModelSpec {
  Arch arch = Arch::encoder_decoder;
  std::int64_t d_model = 512;
  std::int64_t heads = 8;
  std::int64_t layers = 6;
  std::int64_t encoder_layers = 6;  // default: layers
  std::int64_t decoder_layers = 6;  // default: layers
  std::int64_t d_ff = 2048;
  double dropout = 0.1;            // residual branches
  double attention_dropout = 0.0;
  double embedding_dropout = 0.1;  // default: dropout
  PluginRef block{"post_norm", {}};
  PluginRef positional_encoding{"sinusoidal", {}};
  PluginRef ffn{"relu", {}};
  bool qkv_bias = true;
  bool out_bias = true;
  bool scale_embedding = true;  // embeddings * sqrt(d_model)
  bool embedding_norm = false;  // LayerNorm over (embedding + position), before the embedding dropout (BERT)
  double embedding_norm_eps = 1e-12;
  bool causal = true;           // decoder self-attention sees only earlier positions (false: the future leaks)
  bool final_norm = true;       // a norm after the stack (pre-norm blocks)
  bool tie_embeddings = true;   // decoder embedding shared with the output projection
  double norm_eps = 1e-5;
  Pooling pooling = Pooling::mean;  // encoder-only classification
  bool operator==(const ModelSpec&) const = default;
};

struct OptimizerSpec {
  OptimizerName name = OptimizerName::adam;
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.98};
  double eps = 1e-9;
  double weight_decay = 0.0;
  bool operator==(const OptimizerSpec&) const = default;
};

struct EarlyStoppingSpec {
  std::string metric;
  MetricMode mode = MetricMode::max;
  std::optional<double> target;
  std::int64_t patience = 0;  // 0: off
  bool operator==(const EarlyStoppingSpec&) const = default;
};

struct TrainSpec {
  std::int64_t steps = 0;  // required
  std::int64_t batch_size = 64;
  OptimizerSpec optimizer;
  PluginRef schedule{"constant", {}};
  double clip_grad_norm = 0.0;  // 0: off
  double label_smoothing = 0.0;
  std::int64_t seed = 1;
  bool deterministic = true;
  std::optional<EarlyStoppingSpec> early_stopping;
  std::optional<double> loss_threshold;  // stop when the train loss is below it
  bool operator==(const TrainSpec&) const = default;
};

struct AttentionLogSpec {
  std::int64_t every = 0;  // 0: off
  std::int64_t probe_examples = 4;
  bool operator==(const AttentionLogSpec&) const = default;
};

struct LogSpec {
  std::int64_t every = 50;
  AttentionLogSpec attention;
  bool operator==(const LogSpec&) const = default;
};

// Sampled continuations a language model with text records at each evaluation (eval.generate).
struct GenerateSpec {
  std::int64_t prompt_tokens = 16;  // the prompt: the first tokens of an eval example
  std::int64_t max_tokens = 48;     // new tokens per continuation; 0: none recorded
  double temperature = 0.8;         // 0: greedy
  std::int64_t top_k = 0;           // 0: sample from every token
  bool operator==(const GenerateSpec&) const = default;
};

struct EvalSpec {
  std::int64_t every = 500;
  std::vector<Metric> metrics{Metric::loss, Metric::perplexity, Metric::token_accuracy, Metric::exact_match};
  std::int64_t batches = 8;
  GenerateSpec generate;
  bool operator==(const EvalSpec&) const = default;
};

// Sweep axes, validated but not expanded. Values are kept as flow YAML text, exactly what a
// `--set KEY.PATH=VALUE` would take ("pre_norm", "[0.9, 0.999]", "{plugin: noam, warmup: 400}").
struct SweepSpec {
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // every combination
  std::vector<std::pair<std::string, std::vector<std::string>>> zip;   // in lockstep (equal lengths)
  std::vector<std::int64_t> seeds;
  std::vector<std::vector<std::pair<std::string, std::string>>> runs;  // explicit extra runs
  bool empty() const { return grid.empty() && zip.empty() && seeds.empty() && runs.empty(); }
  bool operator==(const SweepSpec&) const = default;
};

// Where each value of a spec was written, by key path ("model.block", "task.vocab_size",
// "train.steps"); the name of a plugin reference is at its own path. Provenance, not content:
// it takes no part in comparing specs.
struct SpecMarks {
  std::map<std::string, SourceMark> at;    // where each value starts
  std::map<std::string, SourceMark> keys;  // where each section's and plugin option's key was written
  // The mark of `path`, else of its closest written parent, else `fallback`.
  SourceMark of(const std::string& path) const;
  SourceMark fallback;
  bool operator==(const SpecMarks&) const { return true; }
};

struct ExperimentSpec {
  std::string name;
  std::string description;
  std::vector<std::string> plugin_paths;  // absolute (relative paths resolve against their file)
  PluginRef task;                         // required
  ModelSpec model;
  PluginRef backend{"onednn", {}};
  Precision precision = Precision::f32;
  TrainSpec train;
  LogSpec log;
  EvalSpec eval;
  SweepSpec sweep;
  SpecMarks marks;
  bool operator==(const ExperimentSpec&) const = default;
};

// The plugin references of a spec: (key path, plugin kind, reference), in schema order.
struct PluginSlot {
  std::string path;  // "model.block"
  std::string kind;  // "block"
};
const std::vector<PluginSlot>& plugin_slots();
PluginRef& plugin_at(ExperimentSpec& spec, const std::string& path);
const PluginRef& plugin_at(const ExperimentSpec& spec, const std::string& path);

// True if `path` ("model.d_model", "train.schedule.warmup") may be set by --set or swept:
// a key of the schema, or an option below a plugin reference.
bool is_spec_path(const std::string& path);
// Every key path of the schema (for suggestions and documentation).
const std::vector<std::string>& spec_paths();

// Reads `file` (following `extends:`), applies `overrides` ("KEY.PATH=VALUE", in order), and
// validates. Every problem found is reported in one UsageError, one line per problem:
// "FILE:LINE:COLUMN: KEY.PATH: what is wrong; expected ...".
ExperimentSpec load_spec(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});
// The same for one point of the spec's sweep: its `sweep:` is not read (the points of a large
// sweep load in linear time).
ExperimentSpec load_sweep_point(const std::filesystem::path& file, const std::vector<std::string>& overrides);

// The same from YAML text; `origin` names it in messages. `extends:` needs a file (load_spec)
// and is an error here.
ExperimentSpec parse_spec(const std::string& yaml, const std::string& origin = "<spec>",
                          const std::vector<std::string>& overrides = {});

// The spec from an already merged tree (what load_spec does after extends and overrides).
ExperimentSpec spec_from_tree(const SpecTree& tree);

// Every value, defaults included, as YAML that loads back into an equal spec.
std::string resolved_yaml(const ExperimentSpec& spec);

// Keys that change how fast a run goes, not what it computes (backend.threads): they are no part
// of a run's identity (its id, the resume check), and `ablate compare` does not split arms by them.
const std::vector<std::string>& execution_keys();

// The identity of one run: resolved_yaml without the sweep section and the execution keys.
std::string identity_yaml(ExperimentSpec spec);

}  // namespace ablate::spec
