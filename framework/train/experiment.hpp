// An experiment made concrete: from a validated spec and the plugin registry, the backend, the
// task, the learning-rate schedule, the model (built from block / positional_encoding / ffn
// plugins) with its parameters, and the optimizer. What the runner trains and the tests poke at.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/optimizer.hpp"
#include "ablate/parameters.hpp"
#include "ablate/schedule.hpp"
#include "ablate/task.hpp"
#include "model/transformer.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"
#include "train/code_identity.hpp"
#include "train/hosted_backend.hpp"
#include "train/parameter_matching.hpp"
#include "train/tokenizer_store.hpp"

namespace ablate::train {

// The spec's model section (and the task's vocabulary) as the model layer's config. Every field
// comes from the spec: the config's own initial values never reach a run.
model::ModelConfig model_config(const spec::ExperimentSpec& spec, const TaskInfo& task);

// The model's components as the spec names them, each created from `registry` when the model
// asks (`spec` and `registry` must outlive the factory's use).
model::ComponentFactory component_factory(const spec::ExperimentSpec& spec, const PluginRegistry& registry);

// The spec's train.optimizer.groups as the driver's rules (roles by name).
std::vector<OptimizerGroupRule> optimizer_group_rules(const spec::ExperimentSpec& spec);

// The metrics a task/architecture pair can report, from those the spec asks for: exact_match
// needs decoding, which a decoder-only LM does not offer; bits_per_byte needs text (`has_text`:
// Experiment::has_text()). `skipped` receives the others, with why.
std::vector<spec::Metric> applicable_metrics(const spec::ExperimentSpec& spec, const TaskInfo& task, bool has_text,
                                             std::vector<std::string>* skipped);

// Whether `task`'s tokens spell text: its first eval example reads as text (not synthetic ids).
bool task_has_text(const Task& task);

// What is wrong with train.early_stopping.metric, or nullopt: it must be one of the columns the
// run evaluates (the spec's applicable eval.metrics and, with decoding, the task's scores).
std::optional<std::string> early_stopping_problem(const spec::ExperimentSpec& spec, const TaskInfo& task, bool has_text,
                                                  const std::vector<std::string>& score_names);

// This machine's physical memory in bytes (sysconf), 0 if unknown: what validation's memory
// estimate and Experiment::decoding_limit are held to.
long double physical_memory_bytes();

struct Experiment {
  // Creates every plugin of `spec` (already checked by spec::validate_plugins) and builds the
  // model. Throws UsageError (with the spec position) when the architecture does not fit the task,
  // PluginError when a plugin cannot be created, PluginFault when one fails. The backend is wrapped
  // in a HostedBackend (faults name the plugin); with `profile` it also times every op into it.
  // `run_dir` (may be empty): the run folder whose stored tokenizers (task.tokenizer, or the
  // task's own vocabularies) the task reads text with, instead of training them (eval, export, a
  // resumed run).
  Experiment(const spec::ExperimentSpec& spec, const PluginRegistry& registry, std::shared_ptr<OpProfile> profile = nullptr,
             const std::filesystem::path& run_dir = {});

  spec::ExperimentSpec spec;
  std::shared_ptr<Backend> backend;
  std::shared_ptr<Task> task;
  // The task's tokenizers (spec task.tokenizer) or its own vocabularies, to save with the run.
  std::unique_ptr<TokenizerStore> tokenizers;
  TaskInfo task_info{};
  std::shared_ptr<Schedule> schedule;
  std::unique_ptr<ParameterStore> store;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<OptimizerDriver> optimizer;  // train.optimizer's rule over the store, with its groups
  DType compute = DType::F32;
  // model.match_parameters: the FFN width the model was built with and why; empty without it.
  std::optional<ParameterMatch> parameter_match;
  // "kind/name version" of every plugin the run uses, and the code that makes the run, for the records.
  std::vector<std::string> plugin_versions;
  CodeIdentity code;

  // The task and schedule plugins, every call guarded (a throw becomes a PluginFault naming the
  // plugin): the examples `indices` of `split`, a split's size, tokens as text, scores, and the
  // learning rate of an optimizer step. The runner reaches those plugins only through these.
  // length > 0: the split's examples of that length (Task::example_at_length, eval.lengths).
  std::vector<Example> examples(Split split, const std::vector<std::int64_t>& indices, std::int64_t length = 0) const;
  // The training examples `indices` as read for batch `batch` (1-based) of the data order
  // (Task::train_example; the draw is Philox of the batch under the run's seed).
  std::vector<Example> train_examples(const std::vector<std::int64_t>& indices, std::int64_t batch) const;
  std::int64_t size(Split split, std::int64_t length = 0) const;
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const;
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const;
  // Whether the task has text (its first eval example reads as text), so encode() can be asked.
  bool has_text() const;
  std::map<std::string, double> score(const std::vector<Example>& references,
                                      const std::vector<std::vector<std::int32_t>>& predictions) const;
  std::vector<std::string> score_names() const;
  double learning_rate(std::int64_t step) const;
  // The schedule again with its horizon at `total_steps` (train.budget's steps), where an option
  // that takes train.steps (spec::inheriting_options: total_steps) has train.steps' value (inherited,
  // or set to the same); other schedules stay.
  void set_schedule_horizon(const PluginRegistry& registry, std::int64_t total_steps);
  // A host batch uploaded for the model; examples batched and uploaded; or the examples
  // `indices` of `split`.
  model::DeviceBatch batch(const HostBatch& host) const;
  model::DeviceBatch batch(const std::vector<Example>& examples) const { return batch(make_batch(examples)); }
  model::DeviceBatch batch(Split split, const std::vector<std::int64_t>& indices) const {
    return batch(examples(split, indices));
  }

  // The longest sequence a decoding (translate, generate) may ask of the model, and why: the
  // positions the positional encoding represents; where it sets no limit (sinusoidal, rotary, ...),
  // the length whose attention scores for one sequence ([heads, T, T] f32) fit in a quarter of this
  // machine's memory, so that a megabyte line is refused (exit 2) rather than run out of memory.
  struct PositionLimit {
    std::int64_t positions = 0;
    std::string why;  // "positional_encoding/learned represents 512", "attention over ... needs ..."
  };
  PositionLimit decoding_limit() const;
};

}  // namespace ablate::train
