// check_components (validation.hpp): what a spec's plugins refuse when they are created, and
// what needs the task's sizes (positions, attention sizes, eval lengths, early stopping, memory).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

#include "ablate/attention.hpp"
#include "ablate/components.hpp"
#include "ablate/task.hpp"
#include "core/text.hpp"
#include "model/transformer.hpp"
#include "plugin_host/plugin_call.hpp"
#include "spec/plugin_validation.hpp"
#include "spec/spec_tree.hpp"
#include "train/data_order.hpp"
#include "train/experiment.hpp"
#include "train/parameter_matching.hpp"
#include "train/shape_backend.hpp"
#include "validation/validation.hpp"

namespace ablate::validation {
namespace {

// Roughly what training `spec` on `task` needs, in bytes: f32 weights, gradients and two Adam
// moments per parameter (16 bytes; Adam's state, the most a built-in optimizer keeps), and what
// one step keeps for backward: per token and layer ~(14 D + 3 F) floats and the attention
// probabilities, plus the logits and their gradient.
// In long double: absurd sizes must not overflow on the way to being refused.
struct MemoryEstimate {
  long double parameters = 0, parameter_bytes = 0, activation_bytes = 0;
  long double data_bytes = 0;  // the train split's order: one index (8 bytes) per example, unless permuted without a table
  long double total() const { return parameter_bytes + activation_bytes + data_bytes; }
};
// The model built as a run builds it, its plugins' build code included, on a backend that
// allocates nothing (train/shape_backend.hpp): what a component refuses at build (a relative-bias
// table of 0 buckets, a gated FFN of hidden -1) is refused here, before anything runs, with the
// run's own error (a PluginFault: exit 3, as the run would), and the parameters are counted (a
// gated FFN's own width, a bias table's size), not estimated. The count, or nothing when the
// host refused the model (model.match_parameters: the problem is added to `errors`).
std::optional<std::int64_t> dry_build(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const TaskInfo& task,
                                      spec::SpecErrors& errors) {
  try {
    model::ModelConfig config = train::model_config(spec, task);
    if (!spec.model.match_parameters.empty()) config.dims.d_ff = train::match_parameters(spec, registry, task).d_ff;
    train::ShapeBackend shapes;
    ParameterStore store(shapes, DType::F32);
    const model::Transformer model(config, train::component_factory(spec, registry), store,
                                   static_cast<std::uint64_t>(spec.train.seed));
    return store.numel();
  } catch (const PluginError&) {
    throw;  // a component's own refusal or fault, as the run reports it
  } catch (const Error& e) {
    errors.add(spec.marks.of("model"), "model",
               std::string("the model cannot be built with these settings: ") + e.what() +
                   (e.hint().empty() ? std::string() : " (" + e.hint() + ")"));
    return std::nullopt;
  }
}

MemoryEstimate estimate_memory(const spec::ExperimentSpec& spec, const TaskInfo& task, std::int64_t train_examples) {
  const spec::ModelSpec& m = spec.model;
  const long double D = static_cast<long double>(m.d_model), F = static_cast<long double>(m.d_ff);
  const long double V = static_cast<long double>(task.vocab_size), H = static_cast<long double>(m.heads);
  const bool enc = m.arch != spec::Arch::Decoder, dec = m.arch != spec::Arch::Encoder;
  const long double layer = 4 * D * D + 2 * D * F + 10 * D + F;  // attention, FFN, norms, biases
  MemoryEstimate e;
  const long double cross = enc && dec ? 4 * D * D : 0;  // the decoder's cross-attention (encoder-decoder only)
  e.parameters = (enc ? m.encoder_layers * layer + V * D : 0) + (dec ? m.decoder_layers * (layer + cross) + V * D : 0) +
                 (m.tie_embeddings ? 0 : V * D) -
                 (m.share_embeddings ? V * D : 0);  // the spec allows it in an encoder-decoder only
  e.parameter_bytes = 16 * e.parameters;
  const long double S = static_cast<long double>(task.max_src_len), T = static_cast<long double>(task.max_tgt_len + 1);
  // Rows of a batch: batch_size, or as many as batch_tokens holds at the longest length (rows x
  // length, what the activations scale with, is then at most batch_tokens at any length).
  const long double B = spec.train.batch_tokens > 0
                            ? std::max(1.0L, static_cast<long double>(spec.train.batch_tokens) / std::max(S, T))
                            : static_cast<long double>(spec.train.batch_size);
  const long double per_layer = 4 * ((14 * D + 3 * F) + H * std::max(S, T));
  e.activation_bytes = B * ((enc ? S * m.encoder_layers * per_layer : 0) + (dec ? T * m.decoder_layers * per_layer : 0) +
                            (dec ? T : 1) * 8 * std::max(V, static_cast<long double>(task.num_classes)));
  const bool table = spec.train.batch_tokens > 0 || train_examples <= train::DataOrder::kShuffledExamples;
  e.data_bytes = table ? 8 * static_cast<long double>(std::max<std::int64_t>(train_examples, 0)) : 0;
  return e;
}

std::string gib(long double bytes) {
  std::ostringstream s;
  s << std::setprecision(3) << bytes / (1024.0L * 1024 * 1024) << " GiB";
  return s.str();
}

}  // namespace

void check_components(spec::ExperimentSpec& spec, const PluginRegistry& registry, const std::filesystem::path& run_dir) {
  spec::SpecErrors errors;
  bool plugin_refused = false;  // a plugin refused its options or the model's sizes (the hint names `ablate plugins`)
  if (const std::optional<spec::BudgetSpec>& budget = spec.train.budget) {  // exactly one amount, >= 1
    const int given = budget->tokens.has_value() + budget->flops.has_value();
    if (given != 1)
      errors.add(spec.marks.of(budget->flops ? "train.budget.flops" : "train.budget"), "train.budget",
                 given == 0 ? "an empty budget; expected `tokens: N` or `flops: F`"
                            : "both tokens and flops; expected exactly one (they would stop the run at different steps)");
    for (const auto& [name, amount] : {std::pair{"tokens", budget->tokens}, std::pair{"flops", budget->flops}})
      if (amount && !(*amount >= 1.0 && std::isfinite(*amount)))
        errors.add(spec.marks.of(std::string("train.budget.") + name), std::string("train.budget.") + name,
                   number_text(*amount) + "; expected a number >= 1");
  }
  if (!spec.model.match_parameters.empty()) {  // the reference model is a spec too (matched at run time)
    try {
      train::reference_spec(spec, registry);
    } catch (const UsageError& e) {
      errors.add(spec.marks.of("model.match_parameters"), "model.match_parameters", e.what());
    }
  }
  std::shared_ptr<PositionalEncoding> positions;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<Task> task;
  std::unique_ptr<train::TokenizerStore> tokenizers;  // the task's, while it is checked
  bool tokenizer_refused = false;                     // then the task is not prepared with it
  for (const char* path : {"task.tokenizer", "task", "model.block", "model.attention", "model.positional_encoding", "model.ffn",
                           "train.optimizer", "train.schedule"}) {
    const spec::PluginSlot& slot = *std::find_if(spec::plugin_slots().begin(), spec::plugin_slots().end(),
                                                 [&](const spec::PluginSlot& s) { return s.path == path; });
    const spec::PluginRef& ref = spec::plugin_at(spec, slot.path);
    if (slot.optional && ref.name.empty()) continue;
    if (slot.kind == Task::kKind && tokenizer_refused) continue;
    try {
      std::shared_ptr<Component> c = registry.create(slot.kind, ref.name, ref.options);
      if (slot.kind == PositionalEncoding::kKind) positions = std::dynamic_pointer_cast<PositionalEncoding>(c);
      if (slot.kind == Attention::kKind) attention = std::dynamic_pointer_cast<Attention>(c);
      if (slot.kind == Task::kKind) {
        auto made = std::dynamic_pointer_cast<Task>(c);
        if (!made) continue;
        tokenizers = train::prepare_task(*made, spec, registry, run_dir);
        task = made;  // only a task that read its data is asked more
      }
    } catch (const PluginFault& f) {
      if (!f.reported()) throw;  // not a refusal of its options but a defect: a plugin error (exit 3)
      tokenizer_refused = tokenizer_refused || slot.kind == Tokenizer::kKind;
      std::vector<std::string> inherited;  // options the message names that the spec took from other keys
      for (const auto& [option, value] : ref.options)
        if (auto key = spec::inherited_from(slot.path, option);
            key && !spec.marks.keys.count(slot.path + "." + option) && f.detail().find(option) != std::string::npos)
          inherited.push_back(option + " " + value + " is " + *key);
      plugin_refused = true;
      errors.add(spec.marks.of(slot.path), slot.path,
                 slot.kind + " plugin '" + ref.name + "' refuses its options: " + f.detail() +
                     (inherited.empty() ? "" : " (" + join(inherited, ", ") + ")") + (f.hint().empty() ? "" : "; " + f.hint()));
    }
  }
  if (task) {
    const TaskInfo info = plugin_call(*task, "info", [&] { return task->info(); });
    const std::vector<std::string> scores = plugin_call(*task, "score_names", [&] { return task->score_names(); });
    const std::int64_t longest = train::row_tokens(info.max_src_len, info.max_tgt_len);
    if (spec.train.batch_tokens > 0 && spec.train.batch_tokens < longest)
      errors.add(spec.marks.of("train.batch_tokens"), "train.batch_tokens",
                 std::to_string(spec.train.batch_tokens) + " tokens cannot hold the task's longest example (" +
                     std::to_string(longest) + " tokens: its longer side with bos/eos); expected at least " +
                     std::to_string(longest) + ", or 0 for batches of batch_size examples");
    if (spec.model.share_embeddings && !info.shared_vocabulary)  // the spec reader refused it outside an encoder-decoder
      errors.add(spec.marks.of("model.share_embeddings"), "model.share_embeddings",
                 "true, but task plugin '" + spec.task.name +
                     "' gives its source and target ids from two vocabularies (an id would embed two different "
                     "tokens); expected one vocabulary (translation: joint_vocabulary: true), or false");
    if (auto problem = train::early_stopping_problem(spec, info, train::task_has_text(*task), scores))
      errors.add(spec.marks.of("train.early_stopping.metric"), "train.early_stopping.metric", *problem);
    for (std::int64_t length : spec.eval.lengths)
      if (plugin_call(*task, "size_at_length", [&] { return task->size_at_length(Split::Eval, length); }) <= 0) {
        errors.add(spec.marks.of("eval.lengths"), "eval.lengths",
                   "task plugin '" + spec.task.name + "' makes no eval examples of length " + std::to_string(length) +
                       "; expected a task that makes examples of other lengths (copy, reverse, sort, language_model: "
                       "synthetic, or over a `file` with split: contiguous), or no eval.lengths");
        break;
      }
    if (attention) {  // the model's sizes the attention cannot be built with
      try {
        const ModelDims dims = train::model_config(spec, info).dims;
        plugin_call(*attention, "check", [&] { attention->check(dims); });
      } catch (const PluginFault& f) {
        if (!f.reported()) throw;
        plugin_refused = true;
        errors.add(spec.marks.of("model.attention"), "model.attention",
                   "attention plugin '" + spec.model.attention.name + "' refuses the model's sizes: " + f.detail() +
                       (f.hint().empty() ? "" : "; " + f.hint()));
      }
    }
    const std::int64_t limit = positions ? model::position_capabilities(*positions).max_positions : 0;
    const bool source = spec.model.arch != spec::Arch::Decoder, target = spec.model.arch != spec::Arch::Encoder;
    const std::int64_t need = std::max(source ? info.max_src_len : 0, target ? info.max_tgt_len + 1 : 0);
    if (limit > 0 && need > limit)
      errors.add(spec.marks.of("model.positional_encoding"), "model.positional_encoding",
                 "positional_encoding plugin '" + spec.model.positional_encoding.name + "' represents " + std::to_string(limit) +
                     " positions, but the task (task: " + spec.task.name + ") has sequences of " + std::to_string(need) + " (" +
                     (source ? std::to_string(info.max_src_len) + " source tokens" : "") + (source && target ? ", " : "") +
                     (target ? std::to_string(info.max_tgt_len) + " target tokens + bos" : "") +
                     "); expected a limit of at least " + std::to_string(need));
    const long double memory = train::physical_memory_bytes();
    const std::int64_t train_examples = plugin_call(*task, "size", [&] { return task->size(Split::Train); });
    MemoryEstimate e = estimate_memory(spec, info, train_examples);
    if (errors.empty() && e.parameters < 1e15L) {  // no problem yet, counts that cannot overflow: built dry
      if (const std::optional<std::int64_t> counted = dry_build(spec, registry, info, errors)) {
        e.parameters = static_cast<long double>(*counted);
        e.parameter_bytes = 16 * e.parameters;
      }
    }
    if (memory > 0 && e.total() > memory) {
      std::ostringstream params;
      params << std::setprecision(3) << e.parameters;
      errors.add(spec.marks.of("model.d_model"), "model",
                 "training this model needs about " + gib(e.total()) + " (" + params.str() +
                     " parameters: " + gib(e.parameter_bytes) + " of weights, gradients and Adam moments; " +
                     gib(e.activation_bytes) + " of activations per batch; " + gib(e.data_bytes) + " for the order of " +
                     std::to_string(train_examples) + " train examples), but this machine has " + gib(memory) +
                     " of memory; expected a smaller model.d_model, model.d_ff, model.layers, train.batch_size or task "
                     "(task.train_examples)");
    }
  }
  // The hint for what was found: a plugin's options, or the spec's keys.
  errors.throw_if_any(plugin_refused ? "`ablate plugins` lists every plugin's options and what they mean"
                                     : "see docs/spec-reference.md for every key, its type and default");
}

}  // namespace ablate::validation
