// load_validated_spec (spec_loading.hpp), with the plugin registry seen through the spec
// layer's narrow PluginCatalog interface, and the checks that need plugins created.
#include "cli/spec_loading.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "ablate/attention.hpp"
#include "ablate/components.hpp"
#include "ablate/task.hpp"
#include "cli/cli.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_call.hpp"
#include "spec/plugin_validation.hpp"
#include "sweep/sweep_plan.hpp"
#include "spec/spec_tree.hpp"
#include "train/checkpoint.hpp"
#include "train/experiment.hpp"
#include "train/run_eval.hpp"

namespace ablate::cli {
namespace {

class RegistryCatalog final : public spec::PluginCatalog {
 public:
  explicit RegistryCatalog(const PluginRegistry& registry) : registry_(registry) {}

  std::optional<std::vector<OptionDescriptor>> options(const std::string& kind, const std::string& name) const override {
    for (const PluginDescriptor* d : registry_.list(kind))
      if (d->name == name) return d->options;
    return std::nullopt;
  }

  void check_not_refused(const std::string& kind, const std::string& name) const override {
    if (const PluginProblem* p = registry_.refused(kind, name)) throw PluginError(p->message, p->hint);
  }

  std::vector<std::string> names(const std::string& kind) const override {
    std::vector<std::string> out;
    for (const PluginDescriptor* d : registry_.list(kind)) out.push_back(d->name);
    return out;
  }

 private:
  const PluginRegistry& registry_;
};

// Roughly what training `spec` on `task` needs, in bytes: f32 weights, gradients and two Adam
// moments per parameter (16 bytes), and what one step keeps for backward: per token and layer
// ~(14 D + 3 F) floats and the attention probabilities, plus the logits and their gradient.
// In long double: absurd sizes must not overflow on the way to being refused.
struct MemoryEstimate {
  long double parameters = 0, parameter_bytes = 0, activation_bytes = 0;
  long double data_bytes = 0;  // the train split's order: one index (8 bytes) per example, per epoch
  long double total() const { return parameter_bytes + activation_bytes + data_bytes; }
};
MemoryEstimate estimate_memory(const spec::ExperimentSpec& spec, const TaskInfo& task, std::int64_t train_examples) {
  const spec::ModelSpec& m = spec.model;
  const long double D = static_cast<long double>(m.d_model), F = static_cast<long double>(m.d_ff);
  const long double V = static_cast<long double>(task.vocab_size), H = static_cast<long double>(m.heads);
  const bool enc = m.arch != spec::Arch::Decoder, dec = m.arch != spec::Arch::Encoder;
  const long double layer = 4 * D * D + 2 * D * F + 10 * D + F;  // attention, FFN, norms, biases
  MemoryEstimate e;
  const long double cross = enc && dec ? 4 * D * D : 0;  // the decoder's cross-attention (encoder-decoder only)
  e.parameters = (enc ? m.encoder_layers * layer + V * D : 0) + (dec ? m.decoder_layers * (layer + cross) + V * D : 0) +
                 (m.tie_embeddings ? 0 : V * D);
  e.parameter_bytes = 16 * e.parameters;
  const long double B = static_cast<long double>(spec.train.batch_size);
  const long double S = static_cast<long double>(task.max_src_len), T = static_cast<long double>(task.max_tgt_len + 1);
  const long double per_layer = 4 * ((14 * D + 3 * F) + H * std::max(S, T));
  e.activation_bytes = B * ((enc ? S * m.encoder_layers * per_layer : 0) + (dec ? T * m.decoder_layers * per_layer : 0) +
                            (dec ? T : 1) * 8 * std::max(V, static_cast<long double>(task.num_classes)));
  e.data_bytes = 8 * static_cast<long double>(std::max<std::int64_t>(train_examples, 0));
  return e;
}

std::string gib(long double bytes) {
  std::ostringstream s;
  s << std::setprecision(3) << bytes / (1024.0L * 1024 * 1024) << " GiB";
  return s.str();
}

// The spec's task, model and schedule plugins created once (cheap for the built-in ones: the
// task reads its data, nothing touches a backend), so that what their constructors refuse is a
// spec error naming the keys before any run starts; then what needs the task's sizes: positions
// beyond what a positional encoding holds, and a model too large for this machine's memory.
void check_components(spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  spec::SpecErrors errors;
  std::shared_ptr<PositionalEncoding> positions;
  std::shared_ptr<Attention> attention;
  std::shared_ptr<Task> task;
  for (const char* path :
       {"task", "model.block", "model.attention", "model.positional_encoding", "model.ffn", "train.schedule"}) {
    const spec::PluginSlot& slot = *std::find_if(spec::plugin_slots().begin(), spec::plugin_slots().end(),
                                                 [&](const spec::PluginSlot& s) { return s.path == path; });
    const spec::PluginRef& ref = spec::plugin_at(spec, slot.path);
    try {
      std::shared_ptr<Component> c = registry.create(slot.kind, ref.name, ref.options);
      if (slot.kind == PositionalEncoding::kKind) positions = std::dynamic_pointer_cast<PositionalEncoding>(c);
      if (slot.kind == Attention::kKind) attention = std::dynamic_pointer_cast<Attention>(c);
      if (slot.kind == Task::kKind) task = std::dynamic_pointer_cast<Task>(c);
    } catch (const PluginFault& f) {
      if (!f.reported()) throw;            // not a refusal of its options but a defect: a plugin error (exit 3)
      std::vector<std::string> inherited;  // options the message names that the spec took from other keys
      for (const auto& [option, value] : ref.options)
        if (auto key = spec::inherited_from(slot.path, option);
            key && !spec.marks.keys.count(slot.path + "." + option) && f.detail().find(option) != std::string::npos)
          inherited.push_back(option + " " + value + " is " + *key);
      errors.add(spec.marks.of(slot.path), slot.path,
                 slot.kind + " plugin '" + ref.name + "' refuses its options: " + f.detail() +
                     (inherited.empty() ? "" : " (" + join(inherited, ", ") + ")") + (f.hint().empty() ? "" : "; " + f.hint()));
    }
  }
  if (task) {
    const TaskInfo info = plugin_call(*task, "info", [&] { return task->info(); });
    const std::vector<std::string> scores = plugin_call(*task, "score_names", [&] { return task->score_names(); });
    if (auto problem = train::early_stopping_problem(spec, info, scores))
      errors.add(spec.marks.of("train.early_stopping.metric"), "train.early_stopping.metric", *problem);
    for (std::int64_t length : spec.eval.lengths)
      if (plugin_call(*task, "size_at_length", [&] { return task->size_at_length(Split::Eval, length); }) <= 0) {
        errors.add(spec.marks.of("eval.lengths"), "eval.lengths",
                   "task plugin '" + spec.task.name + "' makes no eval examples of length " + std::to_string(length) +
                       "; expected a task that makes examples of other lengths (copy, reverse, sort, language_model "
                       "without `file`), or no eval.lengths");
        break;
      }
    if (attention) {  // the model's sizes the attention cannot be built with
      try {
        const ModelDims dims = train::model_config(spec, info).dims;
        plugin_call(*attention, "check", [&] { attention->check(dims); });
      } catch (const PluginFault& f) {
        if (!f.reported()) throw;
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
    const MemoryEstimate e = estimate_memory(spec, info, train_examples);
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
  errors.throw_if_any("`ablate plugins` lists every plugin's options and what they mean");
}

}  // namespace

sweep::SweepPlan plan_validated_sweep(const std::string& file, const SpecOptions& options, const LoadedSpec& base,
                                      const std::filesystem::path& dir) {
  return sweep::plan_sweep(file, options.overrides, options.plugin_paths, base.spec, dir,
                           [&](const std::vector<std::string>& point) { return load_spec_against(file, point, *base.registry); });
}

namespace {
LoadedSpec validated(spec::ExperimentSpec spec, const std::vector<std::string>& plugin_paths, std::ostream& err) {
  LoadedSpec loaded{std::move(spec), std::make_unique<PluginRegistry>()};
  std::vector<std::filesystem::path> extra(loaded.spec.plugin_paths.begin(), loaded.spec.plugin_paths.end());
  extra.insert(extra.end(), plugin_paths.begin(), plugin_paths.end());
  loaded.registry->scan(plugin_search_path(extra));
  for (const PluginProblem& p : loaded.registry->problems()) {
    err << "ablate: plugin warning: " << p.message << "\n";
    if (!p.hint.empty()) err << "  hint: " << p.hint << "\n";
  }
  spec::validate_plugins(loaded.spec, RegistryCatalog(*loaded.registry));
  check_components(loaded.spec, *loaded.registry);
  return loaded;
}
}  // namespace

LoadedSpec load_validated_spec(const std::string& file, const SpecOptions& options, std::ostream& err) {
  return validated(spec::load_spec(file, options.overrides), options.plugin_paths, err);
}

LoadedSpec load_run_spec(const std::filesystem::path& run_dir, const SpecOptions& options, std::ostream& err) {
  const std::vector<std::string>& allowed = spec::execution_keys();
  for (const std::string& o : options.overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      throw UsageError("--set " + o + ": only execution keys (" + join(allowed, ", ") +
                           ") may change: the weights belong to the run's own spec",
                       "to use another configuration, train it");
  }
  const std::filesystem::path checkpoint = train::run_checkpoint(run_dir);
  return validated(spec::parse_spec(train::read_checkpoint(checkpoint).spec_yaml, checkpoint.string(), options.overrides),
                   options.plugin_paths, err);
}

void add_spec_options(boost::program_options::options_description& options, const char* set_help) {
  namespace po = boost::program_options;
  if (set_help) options.add_options()("set,s", po::value<std::vector<std::string>>()->composing(), set_help);
  options.add_options()("plugin-path,p", po::value<std::vector<std::string>>()->composing(),
                        "extra plugin directory or file, searched last (repeatable)");
}

SpecOptions spec_options(const boost::program_options::variables_map& vm) {
  return {repeated(vm, "set"), repeated(vm, "plugin-path")};
}

void add_run_argument(boost::program_options::options_description& options,
                      boost::program_options::positional_options_description& positional) {
  options.add_options()("run", boost::program_options::value<std::string>(), "the run directory (positional)");
  positional.add("run", 1);
}

std::filesystem::path run_argument(const boost::program_options::variables_map& vm, const char* command, const char* usage) {
  if (!vm.count("run")) throw UsageError(std::string("ablate ") + command + ": no run directory given", usage);
  return vm["run"].as<std::string>();
}

spec::ExperimentSpec load_spec_against(const std::string& file, const std::vector<std::string>& overrides,
                                       const PluginRegistry& registry) {
  spec::ExperimentSpec s = spec::load_sweep_point(file, overrides);
  spec::validate_plugins(s, RegistryCatalog(registry));
  check_components(s, registry);
  return s;
}

}  // namespace ablate::cli
