// Building an experiment (experiment.hpp): plugins created from the spec's references, the
// spec's model section mapped to a ModelConfig, and the architecture checked against the task.
#include "train/experiment.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "ablate/error.hpp"
#include "ablate/philox.hpp"
#include "core/text.hpp"
#include "train/evaluator.hpp"
#include "train/parameter_matching.hpp"
#include "plugin_host/plugin_call.hpp"
#include "spec/plugin_validation.hpp"

namespace ablate::train {
namespace {

// A spec problem found after validation (it needs the task): "FILE:LINE:COLUMN: KEY.PATH: what".
[[noreturn]] void spec_problem(const spec::ExperimentSpec& s, const std::string& path, const std::string& what,
                               const std::string& hint) {
  throw UsageError(s.marks.of(path).str() + ": " + path + ": " + what, hint);
}

}  // namespace

model::ModelConfig model_config(const spec::ExperimentSpec& spec, const TaskInfo& task) {
  const spec::ModelSpec& m = spec.model;
  model::ModelConfig c;
  c.arch = m.arch;
  c.dims.d_model = m.d_model;
  c.dims.heads = m.heads;
  c.dims.d_ff = m.d_ff;
  c.dims.dropout = static_cast<float>(m.dropout);
  c.dims.attention_dropout = static_cast<float>(m.attention_dropout);
  c.dims.norm_eps = static_cast<float>(m.norm_eps);
  c.dims.qkv_bias = m.qkv_bias;
  c.dims.out_bias = m.out_bias;
  c.encoder_layers = m.encoder_layers;
  c.decoder_layers = m.decoder_layers;
  c.vocab_size = task.vocab_size;
  c.source_context = task.max_src_len;
  c.target_context = task.max_tgt_len + 1;  // bos
  c.embedding_dropout = static_cast<float>(m.embedding_dropout);
  c.scale_embedding = m.scale_embedding;
  c.embedding_norm = m.embedding_norm;
  c.embedding_norm_eps = static_cast<float>(m.embedding_norm_eps);
  c.fixnorm = static_cast<float>(m.fixnorm);
  c.causal = m.causal;
  c.final_norm = m.final_norm;
  c.tie_embeddings = m.tie_embeddings;
  c.share_embeddings = m.share_embeddings;
  c.pooling = m.pooling;
  c.num_classes = task.type == TaskType::Classification ? task.num_classes : 0;  // > 0: the classifier head
  return c;
}

model::ComponentFactory component_factory(const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  const spec::ModelSpec* m = &spec.model;
  const PluginRegistry* r = &registry;
  model::ComponentFactory c;
  c.block = [m, r] { return r->create<Block>(m->block.name, m->block.options); };
  c.attention = [m, r] { return r->create<Attention>(m->attention.name, m->attention.options); };
  c.positional_encoding = [m, r] {
    return r->create<PositionalEncoding>(m->positional_encoding.name, m->positional_encoding.options);
  };
  c.ffn = [m, r] { return r->create<FeedForward>(m->ffn.name, m->ffn.options); };
  return c;
}

std::vector<OptimizerGroupRule> optimizer_group_rules(const spec::ExperimentSpec& spec) {
  std::vector<OptimizerGroupRule> out;
  for (const spec::OptimizerGroupSpec& g : spec.train.optimizer.groups) {
    OptimizerGroupRule r{g.name, {}, g.match, g.lr_scale, g.weight_decay};
    for (const std::string& role : g.roles)
      for (ParameterRole known : kParameterRoles)
        if (role == parameter_role_name(known)) r.roles.push_back(known);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> early_stopping_problem(const spec::ExperimentSpec& spec, const TaskInfo& task, bool has_text,
                                                  const std::vector<std::string>& score_names) {
  if (!spec.train.early_stopping) return std::nullopt;
  const std::vector<std::string> names = evaluated_names(applicable_metrics(spec, task, has_text, nullptr), score_names);
  if (std::find(names.begin(), names.end(), spec.train.early_stopping->metric) != names.end()) return std::nullopt;
  return "'" + spec.train.early_stopping->metric + "' is not evaluated for this task and eval.metrics; expected one of " +
         join(names, ", ");
}

std::vector<spec::Metric> applicable_metrics(const spec::ExperimentSpec& spec, const TaskInfo& task, bool has_text,
                                             std::vector<std::string>* skipped) {
  std::vector<spec::Metric> out;
  for (spec::Metric m : spec.eval.metrics) {
    if (m == spec::Metric::exact_match && task.type == TaskType::LanguageModel) {
      if (skipped) skipped->push_back("exact_match (greedy decoding of a target; a language model has none)");
      continue;
    }
    if (m == spec::Metric::bits_per_byte && (!has_text || task.type == TaskType::Classification)) {
      if (skipped)
        skipped->push_back("bits_per_byte (bits per byte of the target text; task/" + spec.task.name +
                           (has_text ? "'s targets are classes)" : "'s tokens spell no text)"));
      continue;
    }
    out.push_back(m);
  }
  return out;
}

Experiment::Experiment(const spec::ExperimentSpec& s, const PluginRegistry& registry, std::shared_ptr<OpProfile> profile,
                       const std::filesystem::path& run_dir)
    : spec(s) {
  backend = registry.create<Backend>(spec.backend.name, spec.backend.options);
  backend = std::make_shared<HostedBackend>(backend, std::move(profile));  // faults name the plugin
  task = registry.create<Task>(spec.task.name, spec.task.options);
  tokenizers = prepare_task(*task, spec, registry, run_dir);
  schedule = registry.create<Schedule>(spec.train.schedule.name, spec.train.schedule.options);
  task_info = plugin_call(*task, "info", [&] { return task->info(); });
  for (const spec::PluginSlot& slot : spec::plugin_slots()) {
    const spec::PluginRef& ref = spec::plugin_at(spec, slot.path);
    if (slot.optional && ref.name.empty()) continue;
    plugin_versions.push_back(slot.kind + "/" + ref.name + " " + registry.find(slot.kind, ref.name).version);
  }
  code = code_identity(spec, registry);

  const bool lm = task_info.type == TaskType::LanguageModel;
  const bool classification = task_info.type == TaskType::Classification;
  if (classification && task_info.num_classes < 2)
    throw PluginError("task/" + spec.task.name + " is a classification task with " + std::to_string(task_info.num_classes) +
                          " classes; expected at least 2",
                      "the task plugin must report TaskInfo::num_classes >= 2");
  if (classification && spec.model.arch != spec::Arch::Encoder)
    spec_problem(spec, "model.arch",
                 std::string("'") + spec::to_string(spec.model.arch) + "' does not fit task '" + spec.task.name +
                     "', a classification task (source -> one of " + std::to_string(task_info.num_classes) +
                     " classes, by a classifier over the pooled encoder states); expected encoder",
                 "set model.arch: encoder (and model.pooling: mean|first)");
  if (lm && spec.model.arch != spec::Arch::Decoder)
    spec_problem(spec, "model.arch",
                 std::string("'") + spec::to_string(spec.model.arch) + "' does not fit task '" + spec.task.name +
                     "', a language model (next-token prediction with no source); expected decoder",
                 "set model.arch: decoder");
  if (!lm && !classification && spec.model.arch == spec::Arch::Decoder)
    spec_problem(spec, "model.arch",
                 "'decoder' does not fit task '" + spec.task.name +
                     "', a sequence-to-sequence task (source -> target); expected encoder_decoder (or encoder for "
                     "length-preserving tasks)",
                 "set model.arch: encoder_decoder");
  if (auto problem = early_stopping_problem(spec, task_info, has_text(), score_names()))
    spec_problem(spec, "train.early_stopping.metric", *problem, "early stopping watches one of the evaluated metrics");

  if (spec.precision == spec::Precision::bf16) {
    if (!backend->caps().bf16)
      spec_problem(spec, "precision", "backend '" + spec.backend.name + "' has no bf16 support; expected f32",
                   "set precision: f32 or choose a backend with bf16");
    compute = DType::BF16;
  }
  model::ModelConfig config = model_config(spec, task_info);
  if (!spec.model.match_parameters.empty()) {  // the FFN width that matches the reference's size
    parameter_match = match_parameters(spec, registry, task_info);
    config.dims.d_ff = parameter_match->d_ff;
  }
  store = std::make_unique<ParameterStore>(*backend, compute);
  model = std::make_unique<model::Transformer>(config, component_factory(spec, registry), *store,
                                               static_cast<std::uint64_t>(spec.train.seed));

  const spec::OptimizerSpec& o = spec.train.optimizer;
  optimizer = std::make_unique<OptimizerDriver>(*backend, registry.create<Optimizer>(o.plugin.name, o.plugin.options),
                                                o.weight_decay, optimizer_group_rules(spec));
}

std::vector<Example> Experiment::examples(Split split, const std::vector<std::int64_t>& indices, std::int64_t length) const {
  std::vector<Example> out;
  out.reserve(indices.size());
  plugin_call(*task, length > 0 ? "example_at_length" : "example", [&] {
    for (std::int64_t i : indices)
      out.push_back(length > 0 ? task->example_at_length(split, i, length) : task->example(split, i));
  });
  return out;
}

std::vector<Example> Experiment::train_examples(const std::vector<std::int64_t>& indices, std::int64_t batch) const {
  const auto seed = static_cast<std::uint64_t>(spec.train.seed), n = static_cast<std::uint64_t>(batch);
  constexpr std::uint32_t kDraw = 0x64726177;  // "draw": apart from every other Philox stream of the run
  const Philox4 r = philox4x32_10(static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32), kDraw, 0,
                                  static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  const std::uint64_t draw = static_cast<std::uint64_t>(r.v[0]) << 32 | r.v[1];
  std::vector<Example> out;
  out.reserve(indices.size());
  plugin_call(*task, "train_example", [&] {
    for (std::int64_t i : indices) out.push_back(task->train_example(i, draw));
  });
  return out;
}

std::int64_t Experiment::size(Split split, std::int64_t length) const {
  return plugin_call(*task, length > 0 ? "size_at_length" : "size",
                     [&] { return length > 0 ? task->size_at_length(split, length) : task->size(split); });
}

std::string Experiment::text(const std::vector<std::int32_t>& tokens, bool target) const {
  return plugin_call(*task, "text", [&] { return task->text(tokens, target); });
}

std::vector<std::int32_t> Experiment::encode(const std::string& text, bool target, std::int64_t* unknown) const {
  return plugin_call(*task, "encode", [&] { return task->encode(text, target, unknown); });
}

long double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<long double>(pages) * static_cast<long double>(page) : 0.0L;
}

Experiment::PositionLimit Experiment::decoding_limit() const {
  if (const std::int64_t n = model->max_positions(); n > 0)
    return {n, "positional_encoding/" + spec.model.positional_encoding.name + " represents " + std::to_string(n)};
  const auto memory = static_cast<double>(physical_memory_bytes());
  const double heads = static_cast<double>(std::max<std::int64_t>(spec.model.heads, 1));
  const auto n = static_cast<std::int64_t>(std::sqrt(std::max(memory, 0.0) / 4.0 / (4.0 * heads)));
  return {std::max<std::int64_t>(n, 1), "positional_encoding/" + spec.model.positional_encoding.name +
                                            " sets no limit, and attention over more than " + std::to_string(n) +
                                            " positions needs more than a quarter of this machine's memory"};
}

bool task_has_text(const Task& task) {  // each plugin call named as Experiment's wrappers name it
  if (plugin_call(task, "size", [&] { return task.size(Split::Eval); }) <= 0) return false;
  const Example first = plugin_call(task, "example", [&] { return task.example(Split::Eval, 0); });
  return !plugin_call(task, "text", [&] { return task.text(first.tgt, true); }).empty();
}

bool Experiment::has_text() const { return task_has_text(*task); }

std::map<std::string, double> Experiment::score(const std::vector<Example>& references,
                                                const std::vector<std::vector<std::int32_t>>& predictions) const {
  return plugin_call(*task, "score", [&] { return task->score(references, predictions); });
}

std::vector<std::string> Experiment::score_names() const {
  return plugin_call(*task, "score_names", [&] { return task->score_names(); });
}

double Experiment::learning_rate(std::int64_t step) const {
  return plugin_call(*schedule, "learning_rate", [&] { return schedule->learning_rate(step); });
}

void Experiment::set_schedule_horizon(const PluginRegistry& registry, std::int64_t total_steps) {
  spec::PluginRef ref = spec.train.schedule;
  const std::string slot = "train.schedule.";
  bool moved = false;
  for (const std::string& path : spec::inheriting_options("train.steps")) {  // the one table of inherited options
    if (!path.starts_with(slot)) continue;
    const auto it = ref.options.find(path.substr(slot.size()));
    if (it == ref.options.end() || it->second != std::to_string(spec.train.steps)) continue;
    it->second = std::to_string(total_steps);
    moved = true;
  }
  if (!moved) return;
  try {
    schedule = registry.create<Schedule>(ref.name, ref.options);
  } catch (const Error& e) {
    throw UsageError("train.budget gives " + std::to_string(total_steps) + " steps, and schedule plugin '" + ref.name +
                         "' refuses that horizon: " + e.what(),
                     "raise the budget, or shorten the schedule's warm-up");
  }
}

model::DeviceBatch Experiment::batch(const HostBatch& host) const {
  return model::upload_batch(*backend, host, model->config(), compute);
}

}  // namespace ablate::train
