// The typed experiment spec: what a YAML spec file says, after `extends:` and `--set`, read once
// into structs with every default filled in. Each key is described once, in the schema table of
// spec_schema.cpp (type, range, default, meaning): the structs below carry no defaults of their
// own (default_spec() is the table's). Plugin references keep their option text;
// validate_plugins() (plugin_validation.hpp) checks them.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/architecture.hpp"
#include "spec/spec_tree.hpp"

namespace ablate::spec {

using ablate::Arch;  // one enum each with the model's (core/architecture.hpp)
using ablate::Pooling;
using ablate::to_string;
enum class Precision { f32, bf16 };
enum class MetricMode { max, min };
enum class Metric { loss, perplexity, token_accuracy, exact_match, bits_per_byte };
enum class ProbeKind { eval, repeated };  // log.attention.probe

const char* to_string(Precision v);
const char* to_string(MetricMode v);
const char* to_string(Metric v);
const char* to_string(ProbeKind v);

// A component chosen by name, with its options as scalar text (typed by the plugin's declarations
// in validate_plugins, which also adds the declared defaults).
struct PluginRef {
  std::string name;
  std::map<std::string, std::string> options;
  bool operator==(const PluginRef&) const = default;
};

struct ModelSpec {
  Arch arch{};
  std::int64_t d_model{};
  std::int64_t heads{};
  std::int64_t layers{};
  std::int64_t encoder_layers{};  // default: layers
  std::int64_t decoder_layers{};  // default: layers
  std::int64_t d_ff{};
  // model.match_parameters: the reference model as model keys with their values (flow YAML); the
  // model's FFN width is chosen so its non-embedding parameters are the reference's at d_ff
  // (train/parameter_matching.hpp). Empty: off, the FFN width is d_ff.
  std::vector<std::pair<std::string, std::string>> match_parameters;
  double dropout{};  // residual branches
  double attention_dropout{};
  double embedding_dropout{};  // default: dropout
  PluginRef block{};
  PluginRef attention{};
  PluginRef positional_encoding{};
  PluginRef ffn{};
  bool qkv_bias{};
  bool out_bias{};
  bool scale_embedding{};  // embeddings * sqrt(d_model)
  bool embedding_norm{};   // LayerNorm over (embedding + position), before the embedding dropout (BERT)
  double embedding_norm_eps{};
  double fixnorm{};         // > 0: word embeddings (tables, vocabulary projection rows) at this L2 length (FixNorm)
  bool causal{};            // decoder self-attention sees only earlier positions (false: the future leaks)
  bool final_norm{};        // a norm after the stack (pre-norm blocks)
  bool tie_embeddings{};    // decoder embedding shared with the output projection
  bool share_embeddings{};  // encoder-decoder: one embedding table for source and target
  double norm_eps{};
  Pooling pooling{};  // encoder-only classification
  bool operator==(const ModelSpec&) const = default;
};

// One rule of train.optimizer.groups (ablate::OptimizerGroupRule once resolved).
struct OptimizerGroupSpec {
  std::string name;
  std::vector<std::string> roles;  // parameter roles (matrix, vector, embedding, norm, output); empty: any
  std::string match;               // glob on the dotted parameter name; "": any
  std::optional<double> lr_scale, weight_decay;
  bool operator==(const OptimizerGroupSpec&) const = default;
};

struct OptimizerSpec {
  PluginRef plugin{};  // the update rule and its options (train.optimizer: {plugin: NAME, ...})
  double lr{};
  double weight_decay{};
  std::vector<OptimizerGroupSpec> groups;
  bool operator==(const OptimizerSpec&) const = default;
};

struct EarlyStoppingSpec {
  std::string metric;
  MetricMode mode{};
  std::optional<double> target;
  std::int64_t patience{};  // 0: off
  bool operator==(const EarlyStoppingSpec&) const = default;
};

// train.budget: train for the steps that spend this many target tokens or training FLOPs at step
// 1's cost (docs/training.md, "Compute"); exactly one is set.
struct BudgetSpec {
  std::optional<double> tokens, flops;
  bool operator==(const BudgetSpec&) const = default;
};

// train.branch_from: start from the training state another run kept at one of its
// train.branch_points (docs/training.md, "Branches").
struct BranchSpec {
  std::string run;  // the run's directory
  std::int64_t step{};
  bool operator==(const BranchSpec&) const = default;
};

struct TrainSpec {
  std::int64_t steps{};  // required; with a budget, the most steps the budget may take
  std::int64_t batch_size{};
  std::int64_t accumulate{};    // micro-batches of batch_size per optimizer step (gradient accumulation)
  std::int64_t batch_tokens{};  // 0: batches of batch_size examples; else length-bucketed batches of about this many tokens
  OptimizerSpec optimizer;
  PluginRef schedule{};
  double clip_grad_norm{};  // 0: off
  double label_smoothing{};
  std::int64_t seed{};
  bool deterministic{};
  std::optional<EarlyStoppingSpec> early_stopping;
  std::optional<double> loss_threshold;     // stop when the train loss is below it
  std::optional<BudgetSpec> budget;         // absent: train.steps steps
  std::int64_t keep_checkpoints{};          // also keep the weights of the last N evaluations (checkpoint averaging); 0: none
  double ema{};                             // decay of an exponential moving average of the weights; 0: none
  std::vector<std::int64_t> branch_points;  // steps whose whole training state is kept for branches (ascending)
  std::optional<BranchSpec> branch_from;    // absent: start from the initial weights
  bool operator==(const TrainSpec&) const = default;
};

struct AttentionLogSpec {
  std::int64_t every{};  // 0: off
  std::int64_t probe_examples{};
  ProbeKind probe{};
  bool operator==(const AttentionLogSpec&) const = default;
};

struct LogSpec {
  std::int64_t every{};
  bool stats = true;  // per-layer statistics at each log row
  AttentionLogSpec attention;
  bool tensorboard = false;  // a TensorBoard event file beside run.h5 (results/tensorboard.hpp)
  bool operator==(const LogSpec&) const = default;
};

// Sampled continuations a language model with text records at each evaluation (eval.generate).
struct GenerateSpec {
  std::int64_t prompt_tokens{};  // the prompt: the first tokens of an eval example
  std::int64_t max_tokens{};     // new tokens per continuation; 0: none recorded
  double temperature{};          // 0: greedy
  std::int64_t top_k{};          // 0: sample from every token
  bool operator==(const GenerateSpec&) const = default;
};

struct EvalSpec {
  std::int64_t every{};
  std::vector<Metric> metrics{};
  std::int64_t batches{};
  std::vector<std::int64_t> lengths{};  // evaluation at other lengths too (METRIC_at_LENGTH columns)
  GenerateSpec generate;
  bool operator==(const EvalSpec&) const = default;
};

// Sweep axes, validated but not expanded. Values are kept as flow YAML text, exactly what a
// `--set KEY.PATH=VALUE` would take ("pre_norm", "[0.9, 0.999]", "{plugin: noam, warmup: 400}").
// sweep.tune: nuisance settings tuned per arm on seeds of their own before the arms are compared
// on the sweep's seeds (docs/sweeps.md, "Tuning each arm").
struct TuneSpec {
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // every combination is tried per arm
  std::vector<std::int64_t> seeds;                                     // tuning seeds, disjoint from SweepSpec::seeds
  std::string metric = "loss";                                         // the eval metric a setting is selected by
  std::string summary = "final";                                       // how a run reduces to one value (--summary forms)
  // Successive halving: at rungs first_rung, first_rung * eta, ... (steps < train.steps) each arm
  // keeps its best ceil(n / eta) settings; eta 0 = none (every setting trains to the end).
  std::int64_t eta = 0, first_rung = 0;
  bool empty() const { return grid.empty(); }
  bool operator==(const TuneSpec&) const = default;
};

struct SweepSpec {
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // every combination
  std::vector<std::pair<std::string, std::vector<std::string>>> zip;   // in lockstep (equal lengths)
  std::vector<std::int64_t> seeds;
  std::vector<std::vector<std::pair<std::string, std::string>>> runs;  // explicit extra runs
  TuneSpec tune;
  bool empty() const { return grid.empty() && zip.empty() && seeds.empty() && runs.empty() && tune.empty(); }
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
  PluginRef task_tokenizer;               // task.tokenizer; an empty name: none (the task's own tokens)
  ModelSpec model;
  PluginRef backend;
  Precision precision{};
  TrainSpec train;
  LogSpec log;
  EvalSpec eval;
  SweepSpec sweep;
  SpecMarks marks;
  bool operator==(const ExperimentSpec&) const = default;
};

// The plugin references of a spec: (key path, plugin kind, reference), in schema order.
struct PluginSlot {
  std::string path;       // "model.block"
  std::string kind;       // "block"
  bool optional = false;  // may name no plugin (an empty name): task.tokenizer
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

// A resolved spec that an older Ablate wrote into a run (its checkpoint), in today's keys, so its
// run can still be evaluated: train.optimizer's `name: NAME` becomes `plugin: NAME` and
// `betas: [b1, b2]` the options `beta1`, `beta2` (plugin API 20). Other text is returned as it is.
std::string upgraded_run_yaml(const std::string& yaml);

// The spec from an already merged tree (what load_spec does after extends and overrides).
ExperimentSpec spec_from_tree(const SpecTree& tree);

// The spec with every key at its default (required keys empty): the schema's defaults, the start
// of every spec read.
const ExperimentSpec& default_spec();

// Every value, defaults included, as YAML that loads back into an equal spec.
std::string resolved_yaml(const ExperimentSpec& spec);

// Keys that change how fast a run goes, not what it computes (backend.threads): they are no part
// of a run's identity (its id, the resume check), and `ablate compare` does not split arms by them.
const std::vector<std::string>& execution_keys();

// Keys that choose what a run keeps on disk beside its record (kept checkpoints, the weight
// average, branch points), not what it computes: no part of its identity either, and `ablate
// compare` does not split arms by them.
const std::vector<std::string>& kept_files_keys();

// The identity of one run: resolved_yaml without the sweep section, the execution keys and the
// kept-files keys.
std::string identity_yaml(ExperimentSpec spec);

// One key as documented (docs/spec-reference.md, `ablate keys`), from the schema table.
struct KeyDoc {
  std::string path;           // "model.d_model"
  std::string type;           // Markdown: "int > 0", "`adam` \| `adamw`", "plugin", "map"
  std::string default_value;  // "512", "`post_norm`", "`model.layers`" (that key's value), "absent"; "" none
  bool required = false;
  std::string meaning;
};
// Every key, sections included, in schema order.
std::vector<KeyDoc> key_docs();
// The key tables of docs/spec-reference.md: "### Top level" and one table per section.
std::string key_tables_markdown();

}  // namespace ablate::spec
