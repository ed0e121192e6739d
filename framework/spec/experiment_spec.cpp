// Reading a spec tree into the typed ExperimentSpec: the schema (one list of key paths), typed
// readers that collect every problem with its position, defaults, cross-key checks, sweep
// validation, and the resolved YAML that writes every value back.
#include "spec/experiment_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include <yaml-cpp/yaml.h>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::spec {

const char* to_string(Arch v) {
  switch (v) {
    case Arch::encoder: return "encoder";
    case Arch::decoder: return "decoder";
    case Arch::encoder_decoder: return "encoder_decoder";
  }
  return "?";
}
const char* to_string(Pooling v) { return v == Pooling::mean ? "mean" : "first"; }
const char* to_string(Precision v) { return v == Precision::f32 ? "f32" : "bf16"; }
const char* to_string(OptimizerName v) { return v == OptimizerName::adam ? "adam" : "adamw"; }
const char* to_string(MetricMode v) { return v == MetricMode::max ? "max" : "min"; }
const char* to_string(Metric v) {
  switch (v) {
    case Metric::loss: return "loss";
    case Metric::perplexity: return "perplexity";
    case Metric::token_accuracy: return "token_accuracy";
    case Metric::exact_match: return "exact_match";
  }
  return "?";
}

const std::vector<PluginSlot>& plugin_slots() {
  static const std::vector<PluginSlot> slots = {
      {"task", "task"}, {"model.block", "block"}, {"model.positional_encoding", "positional_encoding"},
      {"model.ffn", "ffn"}, {"backend", "backend"}, {"train.schedule", "schedule"}};
  return slots;
}

const PluginRef& plugin_at(const ExperimentSpec& spec, const std::string& path) {
  return plugin_at(const_cast<ExperimentSpec&>(spec), path);  // one table of slots; this one reads only
}

PluginRef& plugin_at(ExperimentSpec& spec, const std::string& path) {
  if (path == "task") return spec.task;
  if (path == "model.block") return spec.model.block;
  if (path == "model.positional_encoding") return spec.model.positional_encoding;
  if (path == "model.ffn") return spec.model.ffn;
  if (path == "backend") return spec.backend;
  if (path == "train.schedule") return spec.train.schedule;
  throw Error("no plugin reference at spec path '" + path + "'");
}

const std::vector<std::string>& spec_paths() {
  static const std::vector<std::string> paths = {
      "name", "description", "plugin_paths", "task",
      "model", "model.arch", "model.d_model", "model.heads", "model.layers", "model.encoder_layers",
      "model.decoder_layers", "model.d_ff", "model.dropout", "model.attention_dropout", "model.embedding_dropout",
      "model.block", "model.positional_encoding", "model.ffn", "model.qkv_bias", "model.out_bias",
      "model.scale_embedding", "model.embedding_norm", "model.embedding_norm_eps", "model.causal", "model.final_norm", "model.tie_embeddings", "model.norm_eps", "model.pooling",
      "backend", "precision",
      "train", "train.steps", "train.batch_size", "train.optimizer", "train.optimizer.name", "train.optimizer.lr",
      "train.optimizer.betas", "train.optimizer.eps", "train.optimizer.weight_decay", "train.schedule",
      "train.clip_grad_norm", "train.label_smoothing", "train.seed", "train.deterministic", "train.early_stopping",
      "train.early_stopping.metric", "train.early_stopping.mode", "train.early_stopping.target",
      "train.early_stopping.patience", "train.loss_threshold",
      "log", "log.every", "log.attention", "log.attention.every", "log.attention.probe_examples",
      "eval", "eval.every", "eval.metrics", "eval.batches", "eval.generate", "eval.generate.prompt_tokens",
      "eval.generate.max_tokens", "eval.generate.temperature", "eval.generate.top_k",
      "sweep", "sweep.grid", "sweep.zip", "sweep.seeds", "sweep.runs"};
  return paths;
}

namespace {

bool is_plugin_path(const std::string& path) {
  const auto& s = plugin_slots();
  return std::any_of(s.begin(), s.end(), [&](const PluginSlot& p) { return p.path == path; });
}

// The keys allowed directly below `path` ("" for the top level).
std::vector<std::string> children_of(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) out.push_back("extends");
  for (const auto& p : spec_paths()) {
    if (path.empty()) {
      if (p.find('.') == std::string::npos) out.push_back(p);
    } else if (p.size() > path.size() + 1 && p.starts_with(path) && p[path.size()] == '.' &&
               p.find('.', path.size() + 1) == std::string::npos) {
      out.push_back(p.substr(path.size() + 1));
    }
  }
  return out;
}

std::string child(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

std::string describe(const SpecTree& t) {
  switch (t.kind) {
    case SpecTree::Kind::Null: return "an empty value";
    case SpecTree::Kind::Scalar: return "'" + t.text + "'";
    case SpecTree::Kind::Sequence: return "a list";
    case SpecTree::Kind::Map: return "a map";
  }
  return "?";
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  for (const char* t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (s == t) return true;
  for (const char* f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (s == f) return false;
  return std::nullopt;
}

// A range for numbers: lo (inclusive or not), hi (exclusive), described as the brief has them.
struct Range {
  std::optional<double> lo;
  bool lo_inclusive = true;
  std::optional<double> hi;  // exclusive
  bool contains(double v) const {
    if (lo && (lo_inclusive ? v < *lo : v <= *lo)) return false;
    if (hi && v >= *hi) return false;
    return true;
  }
};
constexpr Range kPositive{0.0, false, std::nullopt};
constexpr Range kNonNegative{0.0, true, std::nullopt};
constexpr Range kUnit{0.0, true, 1.0};  // [0, 1)
constexpr Range kAny{};

std::string range_text(const char* what, const Range& r) {
  if (r.lo && r.hi) return std::string(what) + " in " + (r.lo_inclusive ? "[" : "(") + number_text(*r.lo) + ", " + number_text(*r.hi) + ")";
  if (r.lo) return std::string(what) + (r.lo_inclusive ? " >= " : " > ") + number_text(*r.lo);
  return what;
}

template <class E>
using Choices = std::vector<std::pair<const char*, E>>;

// Reads the typed spec from a tree, adding a line to `errors` for every problem and recording
// where each value was written in `marks`.
class Reader {
 public:
  Reader(SpecErrors& errors, SpecMarks& marks) : errors_(errors), marks_(marks) {}

  // The map at `key` of `parent` (nullptr when absent or empty), after checking its keys.
  const SpecTree* section(const SpecTree& parent, const std::string& key, const std::string& path) {
    const SpecTree* t = parent.find(key);
    if (!t || t->kind == SpecTree::Kind::Null) return nullptr;
    marks_.at[path] = t->mark;
    marks_.keys[path] = *parent.key_mark(key);
    if (!t->is_map()) {
      error(t->mark, path, describe(*t) + " is not a map; expected keys " + join(children_of(path), ", "));
      return nullptr;
    }
    check_keys(*t, path);
    return t;
  }

  void check_keys(const SpecTree& map, const std::string& path) {
    const std::vector<std::string> allowed = children_of(path);
    for (std::size_t i = 0; i < map.entries.size(); ++i) {
      const std::string& key = map.entries[i].first;
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string what = "unknown key; expected one of " + join(allowed, ", ");
      if (auto near = closest_match(key, allowed)) what += " (did you mean '" + *near + "'?)";
      error(map.key_marks[i], child(path, key), what);
    }
  }

  // The scalar at `key`, or nullptr (absent; or not a scalar, which is reported).
  const SpecTree* scalar(const SpecTree* parent, const std::string& key, const std::string& path, const std::string& expected,
                         bool required = false) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t) {
      if (required) error(missing_at(parent, path), path, "missing (required); expected " + expected);
      return nullptr;
    }
    marks_.at[path] = t->mark;
    if (!t->is_scalar()) {
      error(t->mark, path, describe(*t) + " is not " + article(expected) + "; expected " + expected);
      return nullptr;
    }
    return t;
  }

  // Returns false if a value was given and is wrong (reported).
  bool read_int(const SpecTree* parent, const std::string& key, const std::string& path, std::int64_t& out,
                std::int64_t min, bool required = false) {
    const std::string expected = min == 1 ? "an integer > 0" : "an integer >= " + std::to_string(min);
    const SpecTree* given = parent ? parent->find(key) : nullptr;
    const SpecTree* t = scalar(parent, key, path, expected, required);
    if (!t) return !given;
    const auto v = parse_int(t->text);
    if (!v) {
      error(t->mark, path, describe(*t) + " is not an integer; expected " + expected);
      return false;
    }
    if (*v < min) {
      error(t->mark, path, t->text + " is out of range; expected " + expected);
      return false;
    }
    out = *v;
    return true;
  }

  void read_float(const SpecTree* parent, const std::string& key, const std::string& path, double& out, const Range& r) {
    const std::string expected = range_text("a number", r);
    const SpecTree* t = scalar(parent, key, path, expected);
    if (!t) return;
    if (auto v = float_value(*t, path, r)) out = *v;
  }

  std::optional<double> float_value(const SpecTree& t, const std::string& path, const Range& r) {
    const std::string expected = range_text("a number", r);
    if (!t.is_scalar()) {
      error(t.mark, path, describe(t) + " is not a number; expected " + expected);
      return std::nullopt;
    }
    const auto v = parse_float(t.text);
    if (!v) {
      error(t.mark, path, describe(t) + " is not a number; expected " + expected);
      return std::nullopt;
    }
    if (!r.contains(*v)) {
      error(t.mark, path, t.text + " is out of range; expected " + expected);
      return std::nullopt;
    }
    return v;
  }

  // An optional number: absent or null leaves `out` empty.
  void read_optional_float(const SpecTree* parent, const std::string& key, const std::string& path,
                           std::optional<double>& out) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t || t->kind == SpecTree::Kind::Null) return;
    marks_.at[path] = t->mark;
    out = float_value(*t, path, kAny);
  }

  void read_bool(const SpecTree* parent, const std::string& key, const std::string& path, bool& out) {
    const SpecTree* t = scalar(parent, key, path, "true or false");
    if (!t) return;
    if (auto v = parse_bool(t->text)) {
      out = *v;
    } else {
      error(t->mark, path, describe(*t) + " is not a bool; expected true or false");
    }
  }

  void read_string(const SpecTree* parent, const std::string& key, const std::string& path, std::string& out,
                   bool required = false) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (t && t->kind == SpecTree::Kind::Null && !required) return;
    t = scalar(parent, key, path, "a string", required);
    if (t) out = t->text;
  }

  template <class E>
  std::optional<E> enum_value(const SpecTree& t, const std::string& path, const Choices<E>& choices) {
    std::vector<std::string> names;
    for (const auto& [n, v] : choices) {
      if (t.is_scalar() && t.text == n) return v;
      names.emplace_back(n);
    }
    std::string what = describe(t) + " is not one of " + join(names, ", ");
    if (t.is_scalar())
      if (auto near = closest_match(t.text, names)) what += " (did you mean '" + *near + "'?)";
    error(t.mark, path, what);
    return std::nullopt;
  }

  template <class E>
  void read_enum(const SpecTree* parent, const std::string& key, const std::string& path, E& out, const Choices<E>& choices) {
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t) return;
    marks_.at[path] = t->mark;
    if (auto v = enum_value(*t, path, choices)) out = *v;
  }

  // `key: NAME` or `key: {plugin: NAME, option: value, ...}`.
  void read_plugin(const SpecTree* parent, const std::string& key, const std::string& path, PluginRef& out,
                   bool required = false) {
    const std::string expected = "a plugin name, or {plugin: NAME, <options>}";
    const SpecTree* t = parent ? parent->find(key) : nullptr;
    if (!t || t->kind == SpecTree::Kind::Null) {
      if (required) error(t ? t->mark : missing_at(parent, path), path, "missing (required); expected " + expected);
      return;
    }
    marks_.at[path] = t->mark;
    if (t->is_scalar()) {
      if (t->text.empty()) return error(t->mark, path, "an empty plugin name; expected " + expected);
      out = PluginRef{t->text, {}};
      return;
    }
    if (!t->is_map()) return error(t->mark, path, describe(*t) + " is not a plugin; expected " + expected);
    const SpecTree* name = t->find("plugin");
    if (!name && (out.name.empty() || t->find("name"))) {
      std::string what = "no `plugin:` key; expected " + expected;
      if (t->find("name")) what += " (write `plugin: NAME`, not `name: NAME`)";
      return error(t->mark, path, what);
    }
    // Without `plugin:` the options are for the default plugin (`block: {norm: rms_norm}`).
    PluginRef ref{out.name, {}};
    if (name && (!name->is_scalar() || name->text.empty())) {
      error(name->mark, path + ".plugin", describe(*name) + " is not a plugin name; expected " + expected);
    } else if (name) {
      ref.name = name->text;
      marks_.at[path] = name->mark;
    }
    for (std::size_t i = 0; i < t->entries.size(); ++i) {
      const auto& [option, value] = t->entries[i];
      if (option == "plugin") continue;
      const std::string option_path = path + "." + option;
      marks_.at[option_path] = value.mark;
      marks_.keys[option_path] = t->key_marks[i];
      if (!value.is_scalar()) {
        error(value.mark, option_path, describe(value) + " is not a plugin option value; expected a bool, number or string");
        continue;
      }
      ref.options[option] = value.text;
    }
    out = std::move(ref);
  }

  void error(const SourceMark& mark, const std::string& path, const std::string& what) { errors_.add(mark, path, what); }

  // Where a missing key of `parent` is reported: the key that opened the section (`train:`).
  SourceMark missing_at(const SpecTree* parent, const std::string& path) const {
    const auto dot = path.rfind('.');
    if (dot != std::string::npos)
      if (auto it = marks_.keys.find(path.substr(0, dot)); it != marks_.keys.end()) return it->second;
    return parent ? parent->mark : marks_.fallback;
  }

  SpecMarks& marks() { return marks_; }

 private:
  static std::string article(const std::string& expected) {
    // "an integer > 0" -> "an integer"; "a number in [0, 1)" -> "a number"; "true or false" -> "a bool"
    if (expected.starts_with("an integer")) return "an integer";
    if (expected.starts_with("a number")) return "a number";
    if (expected.starts_with("a string")) return "a string";
    if (expected.starts_with("true")) return "a bool";
    return "a single value";
  }

  SpecErrors& errors_;
  SpecMarks& marks_;
};

const Choices<Arch> kArch = {{"encoder", Arch::encoder}, {"decoder", Arch::decoder}, {"encoder_decoder", Arch::encoder_decoder}};
const Choices<Pooling> kPooling = {{"mean", Pooling::mean}, {"first", Pooling::first}};
const Choices<Precision> kPrecision = {{"f32", Precision::f32}, {"bf16", Precision::bf16}};
const Choices<OptimizerName> kOptimizer = {{"adam", OptimizerName::adam}, {"adamw", OptimizerName::adamw}};
const Choices<MetricMode> kMode = {{"max", MetricMode::max}, {"min", MetricMode::min}};
const Choices<Metric> kMetric = {{"loss", Metric::loss}, {"perplexity", Metric::perplexity},
                                 {"token_accuracy", Metric::token_accuracy}, {"exact_match", Metric::exact_match}};

void read_model(Reader& r, const SpecTree* m, ModelSpec& model) {
  r.read_enum(m, "arch", "model.arch", model.arch, kArch);
  const bool d_model_ok = r.read_int(m, "d_model", "model.d_model", model.d_model, 1);
  const bool heads_ok = r.read_int(m, "heads", "model.heads", model.heads, 1);
  r.read_int(m, "layers", "model.layers", model.layers, 1);
  model.encoder_layers = model.decoder_layers = model.layers;
  r.read_int(m, "encoder_layers", "model.encoder_layers", model.encoder_layers, 1);
  r.read_int(m, "decoder_layers", "model.decoder_layers", model.decoder_layers, 1);
  r.read_int(m, "d_ff", "model.d_ff", model.d_ff, 1);
  r.read_float(m, "dropout", "model.dropout", model.dropout, kUnit);
  r.read_float(m, "attention_dropout", "model.attention_dropout", model.attention_dropout, kUnit);
  model.embedding_dropout = model.dropout;
  r.read_float(m, "embedding_dropout", "model.embedding_dropout", model.embedding_dropout, kUnit);
  r.read_plugin(m, "block", "model.block", model.block);
  r.read_plugin(m, "positional_encoding", "model.positional_encoding", model.positional_encoding);
  r.read_plugin(m, "ffn", "model.ffn", model.ffn);
  r.read_bool(m, "qkv_bias", "model.qkv_bias", model.qkv_bias);
  r.read_bool(m, "out_bias", "model.out_bias", model.out_bias);
  r.read_bool(m, "scale_embedding", "model.scale_embedding", model.scale_embedding);
  r.read_bool(m, "embedding_norm", "model.embedding_norm", model.embedding_norm);
  r.read_float(m, "embedding_norm_eps", "model.embedding_norm_eps", model.embedding_norm_eps, kPositive);
  r.read_bool(m, "causal", "model.causal", model.causal);
  r.read_bool(m, "final_norm", "model.final_norm", model.final_norm);
  r.read_bool(m, "tie_embeddings", "model.tie_embeddings", model.tie_embeddings);
  r.read_float(m, "norm_eps", "model.norm_eps", model.norm_eps, kPositive);
  r.read_enum(m, "pooling", "model.pooling", model.pooling, kPooling);
  if (!d_model_ok || !heads_ok || model.d_model % model.heads == 0) {
    // nothing to say about the pair
  } else if (m && m->find("heads")) {
    r.error(r.marks().of("model.heads"), "model.heads",
            std::to_string(model.heads) + " does not divide model.d_model " + std::to_string(model.d_model) +
                "; expected a divisor of d_model (each head gets d_model / heads dimensions)");
  } else if (model.d_model % model.heads != 0) {
    r.error(r.marks().of("model.d_model"), "model.d_model",
            std::to_string(model.d_model) + " is not divisible by model.heads " + std::to_string(model.heads) +
                "; expected a multiple of heads");
  }
}

void read_train(Reader& r, const SpecTree* t, const SourceMark& root, TrainSpec& train) {
  if (!t) {
    r.error(root, "train.steps", "missing (required); expected an integer > 0");
  } else {
    r.read_int(t, "steps", "train.steps", train.steps, 1, true);
  }
  r.read_int(t, "batch_size", "train.batch_size", train.batch_size, 1);
  if (const SpecTree* o = t ? r.section(*t, "optimizer", "train.optimizer") : nullptr) {
    r.read_enum(o, "name", "train.optimizer.name", train.optimizer.name, kOptimizer);
    r.read_float(o, "lr", "train.optimizer.lr", train.optimizer.lr, kPositive);
    if (const SpecTree* b = o->find("betas")) {
      r.marks().at["train.optimizer.betas"] = b->mark;
      if (b->kind != SpecTree::Kind::Sequence || b->items.size() != 2) {
        r.error(b->mark, "train.optimizer.betas", describe(*b) + " is not a pair; expected [beta1, beta2], each in [0, 1)");
      } else {
        for (std::size_t i = 0; i < 2; ++i)
          if (auto v = r.float_value(b->items[i], "train.optimizer.betas[" + std::to_string(i) + "]", kUnit))
            train.optimizer.betas[i] = *v;
      }
    }
    r.read_float(o, "eps", "train.optimizer.eps", train.optimizer.eps, kPositive);
    r.read_float(o, "weight_decay", "train.optimizer.weight_decay", train.optimizer.weight_decay, kNonNegative);
  }
  r.read_plugin(t, "schedule", "train.schedule", train.schedule);
  r.read_float(t, "clip_grad_norm", "train.clip_grad_norm", train.clip_grad_norm, kNonNegative);
  r.read_float(t, "label_smoothing", "train.label_smoothing", train.label_smoothing, kUnit);
  r.read_int(t, "seed", "train.seed", train.seed, 0);
  r.read_bool(t, "deterministic", "train.deterministic", train.deterministic);
  if (const SpecTree* e = t ? r.section(*t, "early_stopping", "train.early_stopping") : nullptr) {
    EarlyStoppingSpec es;
    r.read_string(e, "metric", "train.early_stopping.metric", es.metric, true);
    r.read_enum(e, "mode", "train.early_stopping.mode", es.mode, kMode);
    r.read_optional_float(e, "target", "train.early_stopping.target", es.target);
    r.read_int(e, "patience", "train.early_stopping.patience", es.patience, 0);
    train.early_stopping = es;
  }
  r.read_optional_float(t, "loss_threshold", "train.loss_threshold", train.loss_threshold);
}

void read_eval(Reader& r, const SpecTree* e, EvalSpec& eval) {
  r.read_int(e, "every", "eval.every", eval.every, 1);
  if (const SpecTree* m = e ? e->find("metrics") : nullptr) {
    r.marks().at["eval.metrics"] = m->mark;
    if (m->kind != SpecTree::Kind::Sequence) {
      r.error(m->mark, "eval.metrics", describe(*m) + " is not a list; expected a list of loss, perplexity, token_accuracy, exact_match");
    } else {
      eval.metrics.clear();
      for (std::size_t i = 0; i < m->items.size(); ++i) {
        const std::string path = "eval.metrics[" + std::to_string(i) + "]";
        if (auto v = r.enum_value(m->items[i], path, kMetric)) {
          if (std::find(eval.metrics.begin(), eval.metrics.end(), *v) != eval.metrics.end())
            r.error(m->items[i].mark, path, "'" + m->items[i].text + "' is listed twice; expected each metric once");
          else
            eval.metrics.push_back(*v);
        }
      }
      if (m->items.empty())
        r.error(m->mark, "eval.metrics", "[] is empty; expected at least one of loss, perplexity, token_accuracy, exact_match");
    }
  }
  r.read_int(e, "batches", "eval.batches", eval.batches, 1);
  if (const SpecTree* g = e ? r.section(*e, "generate", "eval.generate") : nullptr) {
    r.read_int(g, "prompt_tokens", "eval.generate.prompt_tokens", eval.generate.prompt_tokens, 0);
    r.read_int(g, "max_tokens", "eval.generate.max_tokens", eval.generate.max_tokens, 0);
    r.read_float(g, "temperature", "eval.generate.temperature", eval.generate.temperature, kNonNegative);
    r.read_int(g, "top_k", "eval.generate.top_k", eval.generate.top_k, 0);
  }
}

// A sweep axis key must name a spec value that a run can vary.
void check_axis_path(Reader& r, const SourceMark& mark, const std::string& where, const std::string& key) {
  const bool fixed = key == "name" || key == "sweep" || key.starts_with("sweep.");
  if (is_spec_path(key) && !fixed) return;
  if (fixed) return r.error(mark, where, "'" + key + "' cannot vary between the runs of one experiment; expected another key path");
  std::string what = "'" + key + "' is not a spec key path; expected a path such as model.block or train.optimizer.lr";
  if (auto near = closest_match(key, spec_paths())) what += " (did you mean '" + *near + "'?)";
  r.error(mark, where, what);
}

void read_axes(Reader& r, const SpecTree* s, const std::string& key,
               std::vector<std::pair<std::string, std::vector<std::string>>>& out) {
  const std::string path = "sweep." + key;
  const SpecTree* axes = s->find(key);
  if (!axes || axes->kind == SpecTree::Kind::Null) return;
  r.marks().at[path] = axes->mark;
  if (!axes->is_map()) return r.error(axes->mark, path, describe(*axes) + " is not a map; expected {KEY.PATH: [values]}");
  for (std::size_t i = 0; i < axes->entries.size(); ++i) {
    const auto& [axis, values] = axes->entries[i];
    const std::string where = path + "." + axis;
    check_axis_path(r, axes->key_marks[i], where, axis);
    if (values.kind != SpecTree::Kind::Sequence || values.items.empty()) {
      r.error(values.mark, where, describe(values) + " is not a list of values; expected a non-empty list, e.g. [a, b]");
      continue;
    }
    std::vector<std::string> texts;
    for (const auto& v : values.items) texts.push_back(v.flow());
    out.emplace_back(axis, std::move(texts));
  }
}

void read_sweep(Reader& r, const SpecTree* s, SweepSpec& sweep) {
  if (!s) return;
  read_axes(r, s, "grid", sweep.grid);
  read_axes(r, s, "zip", sweep.zip);
  if (!sweep.zip.empty()) {
    bool equal = true;
    std::vector<std::string> lengths;
    for (const auto& [axis, values] : sweep.zip) {
      equal = equal && values.size() == sweep.zip.front().second.size();
      lengths.push_back(axis + ": " + std::to_string(values.size()));
    }
    if (!equal)
      r.error(r.marks().of("sweep.zip"), "sweep.zip",
              "the lists have different lengths (" + join(lengths, ", ") + "); expected lists of equal length, zipped in lockstep");
  }
  for (const auto& [axis, values] : sweep.zip)
    for (const auto& [g, gv] : sweep.grid)
      if (g == axis)
        r.error(r.marks().of("sweep.zip"), "sweep.zip." + axis, "also in sweep.grid; expected each key in one of grid or zip");
  if (const SpecTree* seeds = s->find("seeds"); seeds && seeds->kind != SpecTree::Kind::Null) {
    r.marks().at["sweep.seeds"] = seeds->mark;
    if (seeds->kind != SpecTree::Kind::Sequence) {
      r.error(seeds->mark, "sweep.seeds", describe(*seeds) + " is not a list; expected a list of integers >= 0");
    } else {
      for (std::size_t i = 0; i < seeds->items.size(); ++i) {
        const SpecTree& v = seeds->items[i];
        const auto seed = v.is_scalar() ? parse_int(v.text) : std::nullopt;
        if (!seed || *seed < 0)
          r.error(v.mark, "sweep.seeds[" + std::to_string(i) + "]", describe(v) + " is not a seed; expected an integer >= 0");
        else
          sweep.seeds.push_back(*seed);
      }
    }
  }
  if (const SpecTree* runs = s->find("runs"); runs && runs->kind != SpecTree::Kind::Null) {
    r.marks().at["sweep.runs"] = runs->mark;
    if (runs->kind != SpecTree::Kind::Sequence) {
      r.error(runs->mark, "sweep.runs", describe(*runs) + " is not a list; expected a list of {KEY.PATH: value}");
    } else {
      for (std::size_t i = 0; i < runs->items.size(); ++i) {
        const SpecTree& run = runs->items[i];
        const std::string where = "sweep.runs[" + std::to_string(i) + "]";
        if (!run.is_map() || run.entries.empty()) {
          r.error(run.mark, where, describe(run) + " is not a run; expected a map {KEY.PATH: value, ...}");
          continue;
        }
        std::vector<std::pair<std::string, std::string>> settings;
        for (std::size_t j = 0; j < run.entries.size(); ++j) {
          check_axis_path(r, run.key_marks[j], where + "." + run.entries[j].first, run.entries[j].first);
          settings.emplace_back(run.entries[j].first, run.entries[j].second.flow());
        }
        sweep.runs.push_back(std::move(settings));
      }
    }
  }
}

bool valid_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// ---- resolved YAML ----

// A float as the shortest text that reads back exactly, always with a '.' or exponent ("0.0").
std::string text_of(double v) {
  std::string t = number_text(v);
  if (t.find_first_of(".e") == std::string::npos) t += ".0";
  return t;
}

YAML::Node flow_node(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

YAML::Node plugin_node(const PluginRef& p) {
  YAML::Node n(YAML::NodeType::Map);
  n["plugin"] = p.name;
  for (const auto& [k, v] : p.options) n[k] = v;
  return flow_node(n);
}

YAML::Node optional_node(const std::optional<double>& v) { return v ? YAML::Node(text_of(*v)) : YAML::Node(YAML::NodeType::Null); }

YAML::Node axes_node(const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  YAML::Node n(YAML::NodeType::Map);
  for (const auto& [axis, values] : axes) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& v : values) list.push_back(YAML::Load(v));
    n[axis] = flow_node(list);
  }
  return axes.empty() ? flow_node(n) : n;
}

}  // namespace

SourceMark SpecMarks::of(const std::string& path) const {
  std::string p = path;
  while (!p.empty()) {
    if (auto it = at.find(p); it != at.end()) return it->second;
    const auto dot = p.rfind('.');
    p = dot == std::string::npos ? std::string() : p.substr(0, dot);
  }
  return fallback;
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

ExperimentSpec spec_from_tree(const SpecTree& tree) {
  ExperimentSpec spec;
  SpecErrors errors;
  spec.marks.fallback = tree.mark;
  Reader r(errors, spec.marks);
  if (!tree.is_map()) {
    r.error(tree.mark, "", describe(tree) + " is not a spec; expected a map with keys " + join(children_of(""), ", "));
    errors.throw_if_any();
  }
  r.check_keys(tree, "");
  if (const SpecTree* e = tree.find("extends"))
    r.error(e->mark, "extends", "cannot be resolved here; expected it only in a spec file (load_spec)");

  r.read_string(&tree, "name", "name", spec.name, true);
  if (const SpecTree* n = tree.find("name"); n && n->is_scalar() && !valid_name(spec.name))
    r.error(n->mark, "name", "'" + spec.name + "' is not a valid name; expected letters, digits, '_', '.' or '-', and not '.' or '..' (it names the results folder)");
  r.read_string(&tree, "description", "description", spec.description);
  if (const SpecTree* p = tree.find("plugin_paths"); p && p->kind != SpecTree::Kind::Null) {
    spec.marks.at["plugin_paths"] = p->mark;
    if (p->kind != SpecTree::Kind::Sequence) {
      r.error(p->mark, "plugin_paths", describe(*p) + " is not a list; expected a list of directories");
    } else {
      for (std::size_t i = 0; i < p->items.size(); ++i) {
        if (std::error_code ec; p->items[i].is_scalar() && !p->items[i].text.empty() && !std::filesystem::exists(p->items[i].text, ec))
          r.error(p->items[i].mark, "plugin_paths[" + std::to_string(i) + "]",
                  "'" + p->items[i].text + "' does not exist; expected a directory of plugins or a plugin file (relative paths are relative to the spec file)");
        else if (p->items[i].is_scalar() && !p->items[i].text.empty())
          spec.plugin_paths.push_back(p->items[i].text);
        else
          r.error(p->items[i].mark, "plugin_paths[" + std::to_string(i) + "]", describe(p->items[i]) + " is not a path; expected a directory");
      }
    }
  }
  r.read_plugin(&tree, "task", "task", spec.task, true);
  read_model(r, r.section(tree, "model", "model"), spec.model);
  r.read_plugin(&tree, "backend", "backend", spec.backend);
  r.read_enum(&tree, "precision", "precision", spec.precision, kPrecision);
  read_train(r, r.section(tree, "train", "train"), tree.mark, spec.train);
  if (const SpecTree* l = r.section(tree, "log", "log")) {
    r.read_int(l, "every", "log.every", spec.log.every, 1);
    if (const SpecTree* a = r.section(*l, "attention", "log.attention")) {
      r.read_int(a, "every", "log.attention.every", spec.log.attention.every, 0);
      r.read_int(a, "probe_examples", "log.attention.probe_examples", spec.log.attention.probe_examples, 1);
    }
  }
  read_eval(r, r.section(tree, "eval", "eval"), spec.eval);
  read_sweep(r, r.section(tree, "sweep", "sweep"), spec.sweep);
  errors.throw_if_any("see docs/spec-reference.md for every key, its type and default");
  return spec;
}

namespace {

// Merges each "KEY.PATH=VALUE" over `tree`, in order; reports every bad one.
void apply_overrides(SpecTree& tree, const std::vector<std::string>& overrides) {
  SpecErrors errors;
  for (const std::string& o : overrides) {
    try {
      auto [top, path] = parse_override(o);
      if (!is_spec_path(path)) {
        std::string what = "unknown key path; expected a spec key path";
        if (auto near = closest_match(path, spec_paths())) what += " (did you mean '" + *near + "'?)";
        errors.add(SourceMark{"--set " + o, 0, 0}, path, what);
        continue;
      }
      merge_into(tree, top, "", is_plugin_path);
    } catch (const UsageError& e) {
      errors.add(SourceMark{e.what(), 0, 0}, "", "");
    }
  }
  errors.throw_if_any("see docs/spec-reference.md for every key path");
}

}  // namespace

ExperimentSpec load_spec(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, is_plugin_path);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec load_sweep_point(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  SpecTree tree = load_tree(file, is_plugin_path, /*with_sweep=*/false);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

ExperimentSpec parse_spec(const std::string& yaml, const std::string& origin, const std::vector<std::string>& overrides) {
  SpecTree tree = parse_yaml(yaml, origin);
  apply_overrides(tree, overrides);
  return spec_from_tree(tree);
}

std::string resolved_yaml(const ExperimentSpec& s) {
  YAML::Node root(YAML::NodeType::Map);
  root["name"] = s.name;
  root["description"] = s.description;
  YAML::Node paths(YAML::NodeType::Sequence);
  for (const auto& p : s.plugin_paths) paths.push_back(p);
  root["plugin_paths"] = flow_node(paths);
  root["task"] = plugin_node(s.task);

  const ModelSpec& m = s.model;
  YAML::Node model(YAML::NodeType::Map);
  model["arch"] = to_string(m.arch);
  model["d_model"] = std::to_string(m.d_model);
  model["heads"] = std::to_string(m.heads);
  model["layers"] = std::to_string(m.layers);
  model["encoder_layers"] = std::to_string(m.encoder_layers);
  model["decoder_layers"] = std::to_string(m.decoder_layers);
  model["d_ff"] = std::to_string(m.d_ff);
  model["dropout"] = text_of(m.dropout);
  model["attention_dropout"] = text_of(m.attention_dropout);
  model["embedding_dropout"] = text_of(m.embedding_dropout);
  model["block"] = plugin_node(m.block);
  model["positional_encoding"] = plugin_node(m.positional_encoding);
  model["ffn"] = plugin_node(m.ffn);
  model["qkv_bias"] = m.qkv_bias;
  model["out_bias"] = m.out_bias;
  model["scale_embedding"] = m.scale_embedding;
  model["embedding_norm"] = m.embedding_norm;
  model["embedding_norm_eps"] = text_of(m.embedding_norm_eps);
  model["causal"] = m.causal;
  model["final_norm"] = m.final_norm;
  model["tie_embeddings"] = m.tie_embeddings;
  model["norm_eps"] = text_of(m.norm_eps);
  model["pooling"] = to_string(m.pooling);
  root["model"] = model;

  root["backend"] = plugin_node(s.backend);
  root["precision"] = to_string(s.precision);

  const TrainSpec& t = s.train;
  YAML::Node train(YAML::NodeType::Map);
  train["steps"] = std::to_string(t.steps);
  train["batch_size"] = std::to_string(t.batch_size);
  YAML::Node opt(YAML::NodeType::Map);
  opt["name"] = to_string(t.optimizer.name);
  opt["lr"] = text_of(t.optimizer.lr);
  YAML::Node betas(YAML::NodeType::Sequence);
  betas.push_back(text_of(t.optimizer.betas[0]));
  betas.push_back(text_of(t.optimizer.betas[1]));
  opt["betas"] = flow_node(betas);
  opt["eps"] = text_of(t.optimizer.eps);
  opt["weight_decay"] = text_of(t.optimizer.weight_decay);
  train["optimizer"] = opt;
  train["schedule"] = plugin_node(t.schedule);
  train["clip_grad_norm"] = text_of(t.clip_grad_norm);
  train["label_smoothing"] = text_of(t.label_smoothing);
  train["seed"] = std::to_string(t.seed);
  train["deterministic"] = t.deterministic;
  if (t.early_stopping) {
    YAML::Node es(YAML::NodeType::Map);
    es["metric"] = t.early_stopping->metric;
    es["mode"] = to_string(t.early_stopping->mode);
    es["target"] = optional_node(t.early_stopping->target);
    es["patience"] = std::to_string(t.early_stopping->patience);
    train["early_stopping"] = es;
  } else {
    train["early_stopping"] = YAML::Node(YAML::NodeType::Null);
  }
  train["loss_threshold"] = optional_node(t.loss_threshold);
  root["train"] = train;

  YAML::Node log(YAML::NodeType::Map);
  log["every"] = std::to_string(s.log.every);
  YAML::Node attention(YAML::NodeType::Map);
  attention["every"] = std::to_string(s.log.attention.every);
  attention["probe_examples"] = std::to_string(s.log.attention.probe_examples);
  log["attention"] = attention;
  root["log"] = log;

  YAML::Node eval(YAML::NodeType::Map);
  eval["every"] = std::to_string(s.eval.every);
  YAML::Node metrics(YAML::NodeType::Sequence);
  for (Metric x : s.eval.metrics) metrics.push_back(to_string(x));
  eval["metrics"] = flow_node(metrics);
  eval["batches"] = std::to_string(s.eval.batches);
  YAML::Node generate(YAML::NodeType::Map);
  generate["prompt_tokens"] = std::to_string(s.eval.generate.prompt_tokens);
  generate["max_tokens"] = std::to_string(s.eval.generate.max_tokens);
  generate["temperature"] = text_of(s.eval.generate.temperature);
  generate["top_k"] = std::to_string(s.eval.generate.top_k);
  eval["generate"] = generate;
  root["eval"] = eval;

  YAML::Node sweep(YAML::NodeType::Map);
  sweep["grid"] = axes_node(s.sweep.grid);
  sweep["zip"] = axes_node(s.sweep.zip);
  YAML::Node seeds(YAML::NodeType::Sequence);
  for (auto seed : s.sweep.seeds) seeds.push_back(std::to_string(seed));
  sweep["seeds"] = flow_node(seeds);
  YAML::Node runs(YAML::NodeType::Sequence);
  for (const auto& run : s.sweep.runs) {
    YAML::Node r(YAML::NodeType::Map);
    for (const auto& [k, v] : run) r[k] = YAML::Load(v);
    runs.push_back(flow_node(r));
  }
  sweep["runs"] = runs.size() ? runs : flow_node(runs);
  root["sweep"] = sweep;

  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

const std::vector<std::string>& execution_keys() {
  static const std::vector<std::string> keys = {"backend.threads"};
  return keys;
}

std::string identity_yaml(ExperimentSpec spec) {
  spec.sweep = {};  // a run is one point: its identity excludes the sweep around it
  for (const std::string& key : execution_keys())
    if (key.starts_with("backend.")) spec.backend.options.erase(key.substr(std::string("backend.").size()));
  return resolved_yaml(spec);
}

}  // namespace ablate::spec
