// The spec's schema: one table that describes every key once (path, type, range, default,
// meaning) and binds it to ExperimentSpec, with the plugin slots, the enum names and the key paths
// that --set and sweeps may name. spec_reader, spec_writer and spec_docs.cpp all work from it.
#include "spec/spec_schema.hpp"

#include <algorithm>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::spec {
using namespace detail;

const char* to_string(ProbeKind v) { return v == ProbeKind::eval ? "eval" : "repeated"; }
const char* to_string(Precision v) { return v == Precision::f32 ? "f32" : "bf16"; }
const char* to_string(MetricMode v) { return v == MetricMode::max ? "max" : "min"; }
const char* to_string(Metric v) {
  switch (v) {
    case Metric::loss: return "loss";
    case Metric::perplexity: return "perplexity";
    case Metric::token_accuracy: return "token_accuracy";
    case Metric::exact_match: return "exact_match";
    case Metric::bits_per_byte: return "bits_per_byte";
  }
  return "?";
}

const std::vector<PluginSlot>& plugin_slots() {
  static const std::vector<PluginSlot> slots = {{"task", "task"},
                                                {"task.tokenizer", "tokenizer", true},
                                                {"model.block", "block"},
                                                {"model.attention", "attention"},
                                                {"model.positional_encoding", "positional_encoding"},
                                                {"model.ffn", "ffn"},
                                                {"backend", "backend"},
                                                {"train.optimizer", "optimizer"},
                                                {"train.schedule", "schedule"}};
  return slots;
}

const PluginRef& plugin_at(const ExperimentSpec& spec, const std::string& path) {
  return plugin_at(const_cast<ExperimentSpec&>(spec), path);  // one table of slots; this one reads only
}

PluginRef& plugin_at(ExperimentSpec& spec, const std::string& path) {
  if (path == "task") return spec.task;
  if (path == "task.tokenizer") return spec.task_tokenizer;
  if (path == "model.block") return spec.model.block;
  if (path == "model.attention") return spec.model.attention;
  if (path == "model.positional_encoding") return spec.model.positional_encoding;
  if (path == "model.ffn") return spec.model.ffn;
  if (path == "backend") return spec.backend;
  if (path == "train.optimizer") return spec.train.optimizer.plugin;
  if (path == "train.schedule") return spec.train.schedule;
  throw Error("no plugin reference at spec path '" + path + "'");
}

namespace detail {

std::string range_text(const char* what, const Range& r) {
  if (r.lo && r.hi)
    return std::string(what) + " in " + (r.lo_inclusive ? "[" : "(") + number_text(*r.lo) + ", " + number_text(*r.hi) + ")";
  if (r.lo) return std::string(what) + (r.lo_inclusive ? " >= " : " > ") + number_text(*r.lo);
  return what;
}

const Choices<Metric> kMetric = {{"loss", Metric::loss},
                                 {"perplexity", Metric::perplexity},
                                 {"token_accuracy", Metric::token_accuracy},
                                 {"exact_match", Metric::exact_match},
                                 {"bits_per_byte", Metric::bits_per_byte}};

}  // namespace detail

namespace {

const Choices<Arch> kArch = {{"encoder", Arch::Encoder}, {"decoder", Arch::Decoder}, {"encoder_decoder", Arch::EncoderDecoder}};
const Choices<Pooling> kPooling = {{"mean", Pooling::Mean}, {"first", Pooling::First}};
const Choices<ProbeKind> kProbeKind = {{"eval", ProbeKind::eval}, {"repeated", ProbeKind::repeated}};
const Choices<Precision> kPrecision = {{"f32", Precision::f32}, {"bf16", Precision::bf16}};
const Choices<MetricMode> kMode = {{"max", MetricMode::max}, {"min", MetricMode::min}};

YAML::Node plugin_node(const PluginRef& p) {
  YAML::Node n(YAML::NodeType::Map);
  n["plugin"] = p.name;
  for (const auto& [k, v] : p.options) n[k] = v;
  return flow_node(n);
}

YAML::Node optional_node(const std::optional<double>& v) {
  return v ? YAML::Node(text_of(*v)) : YAML::Node(YAML::NodeType::Null);
}

YAML::Node axes_node(const Axes& axes) {
  YAML::Node n(YAML::NodeType::Map);
  for (const auto& [axis, values] : axes) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& v : values) list.push_back(YAML::Load(v));
    n[axis] = flow_node(list);
  }
  return axes.empty() ? flow_node(n) : n;
}

SpecKey new_key(std::string path, std::string type, KeyKind kind = KeyKind::value) {
  SpecKey k;
  k.path = std::move(path);
  k.type = std::move(type);
  k.kind = kind;
  return k;
}

// The key table, one key per statement as it reads best: clang-format leaves it as written.
// clang-format off
// KEY(model.d_model): the path and the member it binds, spelled once.
#define FIELD(member) [](ExperimentSpec& s) -> auto& { return s.member; }
#define KEY(member) #member, FIELD(member)

// Bindings read through a mutable accessor; writing only reads through it.
template <class F>
auto& value_of(F field, const ExperimentSpec& s) {
  return field(const_cast<ExperimentSpec&>(s));
}

template <class F>
SpecKey integer(std::string path, F field, std::int64_t min) {
  SpecKey k = new_key(std::move(path), min == 1 ? "int > 0" : "int >= " + std::to_string(min));
  k.read = [field, min](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_int(parent, key.leaf(), key.path, field(s), min, key.is_required);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(std::to_string(value_of(field, s))); };
  return k;
}

template <class F>
SpecKey number(std::string path, F field, Range range) {
  SpecKey k = new_key(std::move(path), range_text("float", range));
  k.read = [field, range](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_float(parent, key.leaf(), key.path, field(s), range);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(text_of(value_of(field, s))); };
  return k;
}

template <class F>
SpecKey optional_number(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "float or absent");
  k.shown_default = "absent";
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_optional_float(parent, key.leaf(), key.path, field(s));
  };
  k.write = [field](const ExperimentSpec& s) { return optional_node(value_of(field, s)); };
  return k;
}

template <class F>
SpecKey boolean(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "bool");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_bool(parent, key.leaf(), key.path, field(s));
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(value_of(field, s)); };
  return k;
}

template <class F>
SpecKey string_key(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "string");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_string(parent, key.leaf(), key.path, field(s), key.is_required);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(value_of(field, s)); };
  return k;
}

template <class E, class F>
SpecKey choice(std::string path, F field, const Choices<E>& choices) {
  std::vector<std::string> names;
  for (const auto& [n, v] : choices) names.push_back(std::string("`") + n + "`");
  SpecKey k = new_key(std::move(path), join(names, " \\| "));
  k.read = [field, &choices](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_enum(parent, key.leaf(), key.path, field(s), choices);
  };
  k.write = [field](const ExperimentSpec& s) { return YAML::Node(to_string(value_of(field, s))); };
  return k;
}

// A plugin reference; one nested in its map (task.tokenizer, a slot whose path is a child of this
// key's) is read and written with it, and written only when it names a plugin.
template <class F>
SpecKey plugin(std::string path, F field) {
  SpecKey k = new_key(std::move(path), "plugin");
  k.read = [field](Reader& r, const SpecTree* parent, const SpecKey& key, ExperimentSpec& s) {
    r.read_plugin(parent, key.leaf(), key.path, field(s), key.is_required);
    const SpecTree* own = parent ? parent->find(key.leaf()) : nullptr;
    for (const PluginSlot& slot : plugin_slots())
      if (is_child(slot.path, key.path))
        r.read_plugin(own && own->is_map() ? own : nullptr, slot.path.substr(key.path.size() + 1), slot.path,
                      plugin_at(s, slot.path), false);
  };
  k.write = [field, at = k.path](const ExperimentSpec& s) {
    YAML::Node n = plugin_node(value_of(field, s));
    for (const PluginSlot& slot : plugin_slots())
      if (is_child(slot.path, at) && !plugin_at(s, slot.path).name.empty())
        n[slot.path.substr(at.size() + 1)] = plugin_node(plugin_at(s, slot.path));
    return n;
  };
  return k;
}

// A plugin reference nested in another's map (task.tokenizer): documented here, read and written
// by the enclosing plugin key.
SpecKey nested_plugin(std::string path) {
  SpecKey k = new_key(std::move(path), "plugin");
  k.read = [](Reader&, const SpecTree*, const SpecKey&, ExperimentSpec&) {};
  k.write = [](const ExperimentSpec&) { return YAML::Node(YAML::NodeType::Null); };
  return k;
}

SpecKey section(std::string path) { return new_key(std::move(path), "map", KeyKind::section); }

// A key whose reading and writing are its own (lists, pairs, the sweep).
SpecKey custom(std::string path, std::string type, ReadValue read, WriteValue write) {
  SpecKey k = new_key(std::move(path), std::move(type));
  k.read = std::move(read);
  k.write = std::move(write);
  return k;
}

}  // namespace

namespace detail {

// Every key of a spec, in the order of the resolved YAML. Defaults follow "Attention Is All You
// Need" (the base model).
const std::vector<SpecKey>& schema() {
  static const std::vector<SpecKey> keys = [] {
    std::vector<SpecKey> k;
    k.push_back(new_key("extends", "path", KeyKind::directive).doc("base spec, relative to this file (see above)"));
    k.push_back(custom("name", "string of `[A-Za-z0-9_.-]`", read_name,
                       [](const ExperimentSpec& s) { return YAML::Node(s.name); })
                    .required().doc("names the experiment and its results folder"));
    k.push_back(string_key(KEY(description)).def("\"\"").doc("free text"));
    k.push_back(custom("plugin_paths", "list of paths", read_plugin_paths, write_plugin_paths)
                    .def("[]").doc("extra plugin directories, relative to this file"));
    k.push_back(plugin(KEY(task)).required().doc("the task plugin and its options, e.g. `{plugin: copy, vocab_size: 32}`"));
    k.push_back(nested_plugin("task.tokenizer").shown("absent").doc(
        "how a text task (translation, language_model over a file, classification) splits text into tokens: "
        "`char`, `word` or `sentencepiece` (BPE / unigram, trained on the train split; docs/data.md), e.g. "
        "`{plugin: sentencepiece, vocab_size: 8000}`; absent: the task's own `tokens` options"));
    k.push_back(section("model").doc("the network: sizes, dropouts, components"));
    k.push_back(choice(KEY(model.arch), kArch).def("encoder_decoder").doc(
        "which stacks: `encoder_decoder` for seq2seq tasks, `decoder` for a language model, `encoder` tags each "
        "source position (length-preserving tasks) or classifies (required by a classification task such as "
        "`classification`); a mismatch with the task is an error at run time (docs/training.md)"));
    k.push_back(integer(KEY(model.d_model), 1).def("512").doc("model width D"));
    k.push_back(integer(KEY(model.heads), 1).def("8").typed("int > 0, divides `d_model`").doc("attention heads H (Dh = D / H)"));
    k.push_back(integer(KEY(model.layers), 1).def("6").doc("layers per stack"));
    k.push_back(integer(KEY(model.encoder_layers), 1).def_from("model.layers").doc("encoder layers"));
    k.push_back(integer(KEY(model.decoder_layers), 1).def_from("model.layers").doc("decoder layers"));
    k.push_back(integer(KEY(model.d_ff), 1).def("2048").doc("feed-forward width F"));
    {
      SpecKey m = custom("model.match_parameters", "map or absent", read_match_parameters, write_match_parameters)
                      .shown("absent")
                      .doc("match parameter counts: the reference model as model keys and values (e.g. `{ffn: relu}` "
                           "or `{attention: mha}`); the FFN width F handed to the FFN plugin is then chosen so this "
                           "model's non-embedding parameters are closest to the reference's at `d_ff` (the knob "
                           "turned: the FFN width; recorded in run.h5; docs/training.md, \"Compute\")");
      m.omit_when_absent = true;
      m.present = [](const ExperimentSpec& s) { return !s.model.match_parameters.empty(); };
      k.push_back(std::move(m));
    }
    k.push_back(number(KEY(model.dropout), kUnit).def("0.1").doc("on residual branches"));
    k.push_back(number(KEY(model.attention_dropout), kUnit).def("0.0").doc("on attention probabilities"));
    k.push_back(number(KEY(model.embedding_dropout), kUnit).def_from("model.dropout").doc("on embeddings + positions"));
    k.push_back(plugin(KEY(model.block)).def("post_norm").doc("residual/norm arrangement (`post_norm`, `pre_norm`, `sandwich_norm`, `parallel`, `rezero`; option `norm`: `layer_norm`, `rms_norm`, `scale_norm`)"));
    k.push_back(plugin(KEY(model.attention)).def("mha").doc(
        "the attention sublayer, self and cross (`mha`: multi-head attention); docs/architecture.md"));
    k.push_back(plugin(KEY(model.positional_encoding)).def("sinusoidal").doc(
        "where positions enter: added to the embeddings (`sinusoidal`, `learned`), nowhere (`none`, NoPE) or inside attention (q/k rotated: `rotary`; logits biased: `alibi`, `t5_relative_bias`)"));
    k.push_back(plugin(KEY(model.ffn)).def("relu").doc("feed-forward (`relu`, `gelu`, `relu_squared`, `swiglu`, `geglu`; the gated ones default to hidden floor(2 d_ff / 3), the weights of a d_ff FFN)"));
    k.push_back(boolean(KEY(model.qkv_bias)).def("true").doc("biases in the q/k/v projections"));
    k.push_back(boolean(KEY(model.out_bias)).def("true").doc("bias in the attention output projection"));
    k.push_back(boolean(KEY(model.scale_embedding)).def("true").doc("multiply embeddings by sqrt(d_model)"));
    k.push_back(boolean(KEY(model.embedding_norm)).def("false").doc(
        "LayerNorm over embeddings + positions, before the embedding dropout (BERT)"));
    k.push_back(number(KEY(model.embedding_norm_eps), kPositive).def("1e-12").doc("epsilon of that norm (BERT's value)"));
    k.push_back(number(KEY(model.fixnorm), kNonNegative).def("0.0").doc(
        "FixNorm (Nguyen & Chiang 2018; Nguyen & Salazar 2019): every word embedding, in the embedding tables and the "
        "vocabulary projection's rows, divided by its L2 norm and multiplied by this length before use (before "
        "`scale_embedding`); 0 = off"));
    k.push_back(boolean(KEY(model.causal)).def("true").doc(
        "causal mask on decoder self-attention; `false` lets each position see the future (a demonstration of "
        "leakage: teacher-forced loss falls, generation does not improve)"));
    k.push_back(boolean(KEY(model.final_norm)).def("true").doc("a norm after the stack (used by pre-norm blocks)"));
    k.push_back(boolean(KEY(model.tie_embeddings)).def("true").doc("decoder embedding shared with the output projection"));
    k.push_back(boolean(KEY(model.share_embeddings)).def("false").doc(
        "encoder-decoder: one embedding table for source and target (with tie_embeddings, the output projection "
        "too: Vaswani et al.'s three-way tying); needs a task whose source and target ids are one vocabulary "
        "(translation: joint_vocabulary: true; the synthetic tasks)"));
    k.push_back(number(KEY(model.norm_eps), kPositive).def("1e-5").doc("epsilon of the norms"));
    k.push_back(choice(KEY(model.pooling), kPooling).def("mean").doc(
        "what the encoder-only classifier reads (classification tasks): the mean of the states of the "
        "non-padding positions, or the first position's state"));
    k.push_back(plugin(KEY(backend)).def("onednn").doc(
        "compute backend: `reference`, `onednn` (CPU), `cudnn` (NVIDIA GPU, docs/gpu-backend.md)"));
    k.push_back(choice(KEY(precision), kPrecision).def("f32").doc(
        "compute precision; `bf16` needs a backend with bf16 (what ran is recorded in run.h5)"));
    k.push_back(section("train").doc("optimisation: steps, batch, optimizer, schedule, stopping"));
    k.push_back(integer(KEY(train.steps), 1).required().doc("optimizer steps"));
    k.push_back(integer(KEY(train.batch_size), 1).def("64").doc(
        "examples per step (per micro-batch with `accumulate`: the batch one forward pass holds)"));
    k.push_back(integer(KEY(train.accumulate), 1).def("1").doc(
        "gradient accumulation: micro-batches of `batch_size` whose gradients make one optimizer step, weighted by "
        "their target tokens, so a step sees `accumulate x batch_size` examples (the same update as that batch "
        "in one pass, up to float rounding) while memory holds one micro-batch"));
    k.push_back(integer(KEY(train.batch_tokens), 0).def("0").doc(
        "0: batches of `batch_size` examples; else batches of examples of similar length holding at most this many "
        "tokens (rows x the longest example's longer side with bos/eos, fairseq's `--max-tokens`), a micro-batch each "
        "with `accumulate`; `batch_size` then sizes the evaluation batches only"));
    k.push_back(plugin("train.optimizer", FIELD(train.optimizer.plugin)).def("adam").doc(
        "the update rule (`adam`, `adamw`, `lion`, `sgd`, `muon`, `adafactor`) and its options, e.g. `{plugin: adamw, beta2: 0.95, lr: 3e-4}`; "
        "`lr`, `weight_decay` and `groups` below sit in the same map (docs/training.md, \"Optimizers\")"));
    k.push_back(number(KEY(train.optimizer.lr), kPositive).def("1e-3").doc("base learning rate"));
    k.push_back(number(KEY(train.optimizer.weight_decay), kNonNegative).def("0.0").doc(
        "weight decay of every group that sets none (`adam`, `sgd`: an L2 term in the gradient; the others: decoupled)"));
    k.push_back(custom("train.optimizer.groups", "list of `{name, roles, match, lr_scale, weight_decay}`", read_optimizer_groups,
                       write_optimizer_groups).def("[]").doc(
        "parameter groups: a parameter joins the first group whose `roles` (of `matrix`, `vector`, `embedding`, `norm`, "
        "`output`) and `match` (a glob on its dotted name) it fits, else the group `default`; `lr_scale` multiplies the "
        "schedule's rate, `weight_decay` replaces the optimizer's. E.g. `[{name: no_decay, roles: [vector, norm, embedding], "
        "weight_decay: 0}]`"));
    k.push_back(plugin(KEY(train.schedule)).def("constant").doc(
        "learning-rate schedule (`constant`, `noam`, `cosine`, `wsd`, `inverse_sqrt`, `linear`); its options `lr`, `d_model`, `total_steps`, when "
        "not set, take `train.optimizer.lr`, `model.d_model`, `train.steps`"));
    k.push_back(number(KEY(train.clip_grad_norm), kNonNegative).def("0.0").doc("global grad-norm clip; 0 = off"));
    k.push_back(number(KEY(train.label_smoothing), kUnit).def("0.0").doc("of the cross-entropy targets"));
    k.push_back(integer(KEY(train.seed), 0).def("1").doc("initial weights, data order and dropout masks"));
    k.push_back(boolean(KEY(train.deterministic)).def("true").doc("bit-reproducible kernels and dropout masks"));
    k.push_back(integer(KEY(train.keep_checkpoints), 0).def("0").doc(
        "also keep the weights of the last N evaluations (`RUN/checkpoints/step-STEP.bin`, weights only), so "
        "`ablate eval RUN --average-last N` scores their average (Vaswani et al.'s last 5 checkpoints); not part of "
        "the run's identity; 0 = only checkpoint.bin"));
    k.push_back(number(KEY(train.ema), kUnit).def("0.0").doc(
        "keep an exponential moving average of the weights with this decay (e.g. 0.999; warmed up as "
        "min(decay, (1 + step) / (10 + step))), saved with each checkpoint as `RUN/ema-STEP.bin`, so `ablate eval RUN "
        "--ema` scores it; training is unchanged and it is not part of the run's identity; 0 = none"));
    k.push_back(custom("train.branch_points", "list of distinct int > 0", read_branch_points, write_branch_points)
                    .def("[]").doc(
                        "also keep the whole training state (weights, optimizer state, counters) after these steps, as "
                        "`RUN/branch-points/step-STEP.bin`, so other runs can start from it with `train.branch_from` "
                        "(a decay branched from a stable run: WSD-S); not part of the run's identity"));
    k.back().omit_when_absent = true;  // runs made before branches keep their resolved YAML
    k.back().present = [](const ExperimentSpec& s) { return !s.train.branch_points.empty(); };
    {
      SpecKey b = section("train.branch_from").shown("absent").doc(
          "start from the training state run `run` kept after step `step` (its `train.branch_points`) instead of "
          "the initial weights, and train on to `train.steps` with this spec's schedule. The spec must be that "
          "run's but for `train.steps` and `train.schedule`, and the schedule must give the run's learning rates up "
          "to `step` (docs/training.md, \"Branches\")");
      b.kind = KeyKind::optional_section;
      b.type = "map or absent";
      b.omit_when_absent = true;
      b.engage = [](ExperimentSpec& s) { s.train.branch_from.emplace(); };
      b.present = [](const ExperimentSpec& s) { return s.train.branch_from.has_value(); };
      k.push_back(std::move(b));
    }
    k.push_back(string_key("train.branch_from.run", FIELD(train.branch_from->run)).required().doc(
        "the directory of the run whose branch point this run starts from, or a folder of runs (a sweep's) in "
        "which exactly one run has this seed, this spec but for `train.steps` and `train.schedule`, and the point"));
    k.push_back(integer("train.branch_from.step", FIELD(train.branch_from->step), 1).required().doc(
        "the branch point: one of that run's `train.branch_points`"));
    {
      SpecKey es = section("train.early_stopping").shown("absent").doc(
          "stop when a metric reaches `target`, or after `patience` evaluations without improving");
      es.kind = KeyKind::optional_section;
      es.type = "map or absent";
      es.engage = [](ExperimentSpec& s) { s.train.early_stopping.emplace(); };
      es.present = [](const ExperimentSpec& s) { return s.train.early_stopping.has_value(); };
      k.push_back(std::move(es));
    }
    k.push_back(string_key("train.early_stopping.metric", FIELD(train.early_stopping->metric)).required().doc("one of the evaluated `eval.metrics` or task scores"));
    k.push_back(choice("train.early_stopping.mode", FIELD(train.early_stopping->mode), kMode).def("max").doc("whether larger or smaller is better"));
    k.push_back(optional_number("train.early_stopping.target", FIELD(train.early_stopping->target)).doc("stop once the metric reaches it"));
    k.push_back(integer("train.early_stopping.patience", FIELD(train.early_stopping->patience), 0).def("0").doc(
        "stop after this many evaluations without improving; 0 = off"));
    k.push_back(optional_number(KEY(train.loss_threshold)).doc(
        "stop when the train loss (mean over a `log.every` interval) is below it"));
    {
      SpecKey b = section("train.budget").shown("absent").doc(
          "train for a compute budget instead of a step count: `{tokens: N}` or `{flops: F}` (exactly one), the steps "
          "that spend it at step 1's cost (target tokens, or training FLOPs as docs/training.md \"Compute\" counts "
          "them), at most `train.steps`; a schedule's `total_steps` follows. Arms of different cost then get the same "
          "compute");
      b.kind = KeyKind::optional_section;
      b.type = "map or absent";
      b.omit_when_absent = true;
      b.engage = [](ExperimentSpec& s) { s.train.budget.emplace(); };
      b.present = [](const ExperimentSpec& s) { return s.train.budget.has_value(); };
      k.push_back(std::move(b));
    }
    k.push_back(optional_number("train.budget.tokens", FIELD(train.budget->tokens)).doc("target tokens to train on"));
    k.push_back(optional_number("train.budget.flops", FIELD(train.budget->flops)).doc("training FLOPs to spend"));
    k.push_back(section("log").doc("what `run.h5` records during training"));
    k.push_back(integer(KEY(log.every), 1).def("50").doc(
        "steps between train-metric rows and per-layer statistics (residual norm, grad norm, attention entropy) in "
        "`run.h5`; the run file is flushed at each"));
    k.push_back(boolean(KEY(log.stats)).def("true").doc(
        "record the per-layer statistics at each `log.every` row; each costs a forward pass of the probe batch with "
        "its attention probabilities read back (seconds at long sequences on a GPU); false = off"));
    k.push_back(boolean(KEY(log.tensorboard)).def("false").doc(
        "also write the run's train and eval metrics, per-layer statistics, decoded samples and resolved spec to a "
        "TensorBoard event file beside `run.h5` as they are logged (`ablate sweep` links each run into "
        "`SWEEP/tensorboard/`); not part of the run's identity (docs/results-format.md, \"TensorBoard\")"));
    k.back().omit_when_absent = true;  // runs made before it keep their resolved YAML
    k.back().present = [](const ExperimentSpec& s) { return s.log.tensorboard; };
    k.push_back(section("log.attention").doc("attention tensors of a fixed probe batch"));
    k.push_back(integer(KEY(log.attention.every), 0).def("0").doc(
        "steps between attention-tensor records of the probe batch (every layer, head and kind, and the "
        "greedy-decoding cross-attention); 0 = off"));
    k.push_back(integer(KEY(log.attention.probe_examples), 1).def("4").doc("examples in the attention probe batch"));
    k.push_back(choice(KEY(log.attention.probe), kProbeKind).def("eval").doc(
        "the probe batch: `eval`, the first eval examples; `repeated`, random content tokens whose first half is "
        "repeated as the second half (the same in every run), where induction heads show (docs/analysis.md)"));
    k.push_back(section("eval").doc("evaluation on the task's eval split"));
    k.push_back(integer(KEY(eval.every), 1).def("500").doc("steps between evaluations"));
    k.push_back(custom("eval.metrics", "list of `loss`, `perplexity`, `token_accuracy`, `exact_match`, `bits_per_byte`",
                       read_metrics, write_metrics)
                    .def("[loss, perplexity, token_accuracy, exact_match]").doc(
                        "each at most once; `exact_match` (greedy decoding) is skipped for a language model, with a "
                        "note; it also records `decoded_token_accuracy`. `bits_per_byte`: the loss summed over the scored "
                        "targets, in bits, per UTF-8 byte of the text they spell, so that models with different tokenizers "
                        "compare (docs/training.md, \"Evaluation\"); skipped, with a note, for a task without text"));
    k.push_back(integer(KEY(eval.batches), 1).def("8").doc("batches per evaluation"));
    k.push_back(custom("eval.lengths", "list of distinct int > 0", read_lengths, write_lengths)
                    .def("[]").doc(
                        "also evaluate the metrics on eval examples of exactly these lengths (content tokens: a seq2seq "
                        "task's source, a language model's text), recorded as `METRIC_at_LENGTH` columns (`loss_at_128`): "
                        "length extrapolation. The task must make such examples (the synthetic tasks do); a length past "
                        "what the positional encoding represents (`learned`'s `max_len`) is recorded as NaN, with a note. "
                        "A test split the task cuts at the length is scored once, at the end: `test_loss_at_128`"));
    k.push_back(section("eval.generate").doc("continuations a language model with text records at each evaluation"));
    k.push_back(integer(KEY(eval.generate.prompt_tokens), 0).def("16").doc(
        "a language model with text records continuations of 5 eval examples at each evaluation (`/samples`); the "
        "prompt is the example's first `prompt_tokens` tokens (fewer than the task's example length: checked at "
        "run time)"));
    k.push_back(integer(KEY(eval.generate.max_tokens), 0).def("48").doc(
        "new tokens per continuation (`eos` ends one sooner); 0 = none recorded"));
    k.push_back(number(KEY(eval.generate.temperature), kNonNegative).def("0.8").doc(
        "0 = greedy (argmax); else a draw from `softmax(logits / temperature)`, keyed by `train.seed` and the step "
        "(docs/training.md, \"Continuation\")"));
    k.push_back(integer(KEY(eval.generate.top_k), 0).def("0").doc("> 0: draw among the `k` most likely tokens only; 0 = all"));
    k.push_back(section("sweep").doc("variants × seeds, run by `ablate sweep` (docs/sweeps.md)"));
    k.push_back(custom("sweep.grid", "`{KEY.PATH: [values]}`", read_grid,
                       [](const ExperimentSpec& s) { return axes_node(s.sweep.grid); })
                    .def("{}").doc("every combination of the listed values (first key slowest)"));
    k.push_back(custom("sweep.zip", "`{KEY.PATH: [values]}`, equal lengths", read_zip,
                       [](const ExperimentSpec& s) { return axes_node(s.sweep.zip); })
                    .def("{}").doc("values taken in lockstep (one more grid axis, the fastest)"));
    k.push_back(custom("sweep.seeds", "list of int >= 0", read_seeds, write_seeds)
                    .def("[]").doc("each point once per seed (sets `train.seed`; fastest)"));
    k.push_back(custom("sweep.runs", "list of `{KEY.PATH: value}`", read_runs, write_runs)
                    .def("[]").doc("extra explicit runs after the grid, once per seed unless they set `train.seed`"));
    k.push_back(section("sweep.tune").doc(
        "nuisance settings tuned per arm on seeds of their own; the arms are then compared at their own best "
        "setting on `sweep.seeds` (docs/sweeps.md, \"Tuning each arm\")"));
    k.push_back(custom("sweep.tune.grid", "`{KEY.PATH: [values]}`", read_tune_grid,
                       [](const ExperimentSpec& s) { return axes_node(s.sweep.tune.grid); })
                    .def("{}").doc("the settings tried for every arm: every combination of the listed values"));
    k.push_back(custom("sweep.tune.seeds", "list of int >= 0", read_tune_seeds, write_tune_seeds)
                    .def("[]").doc("the tuning seeds: each arm x setting once per seed; disjoint from `sweep.seeds` (the "
                                   "confirmation seeds the comparison uses)"));
    k.push_back(string_key(KEY(sweep.tune.metric)).def("loss").doc(
        "the eval metric a setting is selected by (its direction by name, as `ablate compare`'s); not a test metric"));
    k.push_back(string_key(KEY(sweep.tune.summary)).def("final").doc(
        "how a tuning run reduces to one value, as `ablate compare --summary`: final, best, last:K, auc, steps_to:T, "
        "time_to:T; a setting's value is its mean over the tuning seeds"));
    k.push_back(integer(KEY(sweep.tune.eta), 0).def("0").doc(
        "successive halving: at each rung every arm keeps its best ceil(n / eta) settings (>= 2; 0 = none: every "
        "setting trains to train.steps)"));
    k.push_back(integer(KEY(sweep.tune.first_rung), 0).def("0").doc(
        "the first rung's step (an evaluation step, below train.steps); the next rungs at first_rung x eta, x eta^2, ..."));
    return k;
  }();
  return keys;
}
#undef KEY
#undef FIELD
// clang-format on

bool is_child(const std::string& p, const std::string& parent) {
  if (parent.empty()) return p.find('.') == std::string::npos;
  return p.size() > parent.size() + 1 && p.starts_with(parent) && p[parent.size()] == '.' &&
         p.find('.', parent.size() + 1) == std::string::npos;
}

bool is_plugin_slot(const std::string& path) {
  const auto& slots = plugin_slots();
  return std::any_of(slots.begin(), slots.end(), [&](const PluginSlot& p) { return p.path == path; });
}

bool is_key_below_plugin(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || !is_plugin_slot(path.substr(0, dot)) || is_plugin_slot(path)) return false;
  const auto& keys = schema();
  return std::any_of(keys.begin(), keys.end(), [&](const SpecKey& k) { return k.path == path; });
}

bool has_keys_below(const std::string& path) {
  if (!is_plugin_slot(path)) return false;
  const auto& keys = schema();
  return std::any_of(keys.begin(), keys.end(),
                     [&](const SpecKey& k) { return is_child(k.path, path) && is_key_below_plugin(k.path); });
}

}  // namespace detail

const std::vector<std::string>& spec_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    for (const SpecKey& k : schema())
      if (k.kind != KeyKind::directive) out.push_back(k.path);
    return out;
  }();
  return paths;
}

bool is_spec_path(const std::string& path) {
  const auto& paths = spec_paths();
  if (std::find(paths.begin(), paths.end(), path) != paths.end()) return true;
  for (const auto& slot : plugin_slots()) {
    if (path.size() > slot.path.size() + 1 && path.starts_with(slot.path) && path[slot.path.size()] == '.' &&
        path.find('.', slot.path.size() + 1) == std::string::npos)
      return true;  // an option of that plugin, checked against the plugin's declarations later
  }
  return false;
}

}  // namespace ablate::spec
