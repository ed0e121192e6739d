// evaluate() (evaluator.hpp): batches of the eval split through the model without gradient,
// then the task's scoring of the greedy predictions; and a language model's sampled continuations.
#include "train/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ablate/error.hpp"
#include "ablate/ops.hpp"

namespace ablate::train {

namespace {
// The op id of the continuations' random draws (RngKey{train.seed, step, kGenerateOp}): far from
// the small op ids the graph gives dropout masks, so the two never share a stream.
constexpr std::uint32_t kGenerateOp = 0x47454E00u;  // "GEN"

// A task score's column: prefixed where a teacher-forced metric has the name already.
std::string decoded_name(const std::string& score) {
  return score == "loss" || score == "perplexity" || score == "token_accuracy" ? "decoded_" + score : score;
}
}  // namespace

std::vector<std::string> evaluated_names(const std::vector<spec::Metric>& metrics, const std::vector<std::string>& score_names) {
  std::vector<std::string> out;
  for (spec::Metric m : metrics) out.push_back(spec::to_string(m));
  if (std::find(metrics.begin(), metrics.end(), spec::Metric::exact_match) != metrics.end())
    for (const std::string& s : score_names)
      if (s != "exact_match") out.push_back(decoded_name(s));
  return out;
}

std::string at_length(const std::string& metric, std::int64_t length) { return metric + "_at_" + std::to_string(length); }

std::int64_t text_bytes(const Experiment& ex, const std::vector<std::int32_t>& tokens, std::int32_t before) {
  if (before < 0) return static_cast<std::int64_t>(ex.text(tokens, true).size());
  std::vector<std::int32_t> ids = {before};
  const auto own = static_cast<std::int64_t>(ex.text(ids, true).size());
  ids.insert(ids.end(), tokens.begin(), tokens.end());
  return static_cast<std::int64_t>(ex.text(ids, true).size()) - own;
}

std::int64_t positions_needed(const Experiment& ex, std::int64_t length) {
  const spec::Arch arch = ex.spec.model.arch;
  return std::max(arch != spec::Arch::Decoder ? length : 0, arch != spec::Arch::Encoder ? length + 1 : 0);
}

namespace {
// The examples [first, first + k) of what is being evaluated.
using Fetch = std::function<std::vector<Example>(std::int64_t first, std::int64_t k)>;

Evaluation evaluate_fetched(Experiment& ex, const std::vector<spec::Metric>& metrics, std::int64_t n, const Fetch& fetch,
                            std::size_t samples, std::int64_t max_decode, const BeamOptions* beam) {
  const auto wants = [&](spec::Metric m) { return std::find(metrics.begin(), metrics.end(), m) != metrics.end(); };
  const bool decode = wants(spec::Metric::exact_match);
  const bool bytes_wanted = wants(spec::Metric::bits_per_byte);
  const bool forced =
      wants(spec::Metric::loss) || wants(spec::Metric::perplexity) || wants(spec::Metric::token_accuracy) || bytes_wanted;
  const std::int64_t batch_size = ex.spec.train.batch_size;

  double loss_sum = 0.0, rows = 0.0, correct = 0.0, bytes = 0.0;
  std::int32_t last = -1;  // the last target token evaluated: what a cut window's text follows
  std::vector<Example> references;
  std::vector<std::vector<std::int32_t>> predictions;
  for (std::int64_t first = 0; first < n; first += batch_size) {
    std::vector<Example> examples = fetch(first, std::min(n, first + batch_size) - first);
    const model::DeviceBatch batch = ex.batch(examples);
    if (forced) {
      Graph g(*ex.backend, static_cast<std::uint64_t>(ex.spec.train.seed), 0, /*training=*/false, /*grad=*/false);
      const ops::CrossEntropyResult ce = ops::cross_entropy(g, ex.model->logits(g, batch), batch.targets);
      float loss = 0.0f;
      ex.backend->copy_to_host(&loss, ce.loss.value());
      loss_sum += static_cast<double>(loss) * ce.rows;
      rows += ce.rows;
      correct += ce.correct;
      if (bytes_wanted)  // applicable_metrics asks for it only where the task has text
        for (const Example& e : examples) {
          bytes += static_cast<double>(text_bytes(ex, e.tgt, e.cut ? last : -1));
          if (!e.tgt.empty()) last = e.tgt.back();
        }
    }
    if (decode) {
      references.insert(references.end(), std::make_move_iterator(examples.begin()), std::make_move_iterator(examples.end()));
      std::vector<std::vector<std::int32_t>> p;
      if (beam && beam->beam > 1) {
        std::vector<std::vector<std::int32_t>> sources;
        for (std::size_t i = references.size() - examples.size(); i < references.size(); ++i)
          sources.push_back(references[i].src);
        BeamOptions o = *beam;
        o.max_len = max_decode;
        p = beam_search(ex, sources, o);
      } else {
        p = ex.model->greedy_decode(*ex.backend, batch, max_decode);
      }
      predictions.insert(predictions.end(), std::make_move_iterator(p.begin()), std::make_move_iterator(p.end()));
    }
  }

  Evaluation result;
  std::map<std::string, double>& out = result.metrics;
  const double loss = rows > 0 ? loss_sum / rows : 0.0;
  if (wants(spec::Metric::loss)) out["loss"] = loss;
  if (wants(spec::Metric::perplexity)) out["perplexity"] = std::exp(loss);
  if (wants(spec::Metric::token_accuracy)) out["token_accuracy"] = rows > 0 ? correct / rows : 0.0;
  if (bytes_wanted) out["bits_per_byte"] = bytes > 0 ? loss_sum / std::log(2.0) / bytes : std::nan("");
  if (decode && !references.empty()) {
    for (const auto& [name, value] : ex.score(references, predictions)) out[decoded_name(name)] = value;
    for (std::size_t i = 0; i < std::min(samples, references.size()); ++i)
      result.samples.push_back({ex.text(references[i].src, false), ex.text(references[i].tgt, true),
                                ex.text(predictions[i], true), references[i].src, references[i].tgt, predictions[i]});
  }
  return result;
}
}  // namespace

Evaluation evaluate(Experiment& ex, const std::vector<spec::Metric>& metrics, Split split, std::size_t samples,
                    std::int64_t length, std::int64_t count, const BeamOptions* beam) {
  const std::int64_t n = std::min(count > 0 ? count : ex.spec.eval.batches * ex.spec.train.batch_size, ex.size(split, length));
  const Fetch fetch = [&](std::int64_t first, std::int64_t k) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(k));
    for (std::int64_t i = 0; i < k; ++i) indices[static_cast<std::size_t>(i)] = first + i;
    return ex.examples(split, indices, length);
  };
  return evaluate_fetched(ex, metrics, n, fetch, samples, std::max(ex.task_info.max_tgt_len, length), beam);
}

Evaluation evaluate_examples(Experiment& ex, const std::vector<spec::Metric>& metrics, const std::vector<Example>& examples,
                             std::size_t samples, const BeamOptions* beam) {
  const Fetch fetch = [&](std::int64_t first, std::int64_t k) {
    return std::vector<Example>(examples.begin() + first, examples.begin() + first + k);
  };
  return evaluate_fetched(ex, metrics, static_cast<std::int64_t>(examples.size()), fetch, samples, ex.task_info.max_tgt_len,
                          beam);
}

bool generates(const Experiment& ex, std::string* note) {
  const spec::GenerateSpec& g = ex.spec.eval.generate;
  if (ex.task_info.type != TaskType::LanguageModel || g.max_tokens == 0 || ex.size(Split::Eval) == 0) return false;
  if (!ex.has_text()) return false;  // no text (synthetic)
  if (g.prompt_tokens >= ex.task_info.max_tgt_len)
    throw UsageError(ex.spec.marks.of("eval.generate.prompt_tokens").str() + ": eval.generate.prompt_tokens: " +
                         std::to_string(g.prompt_tokens) + " leaves nothing to continue: the task's examples have at most " +
                         std::to_string(ex.task_info.max_tgt_len) + " tokens; expected fewer than " +
                         std::to_string(ex.task_info.max_tgt_len),
                     "lower eval.generate.prompt_tokens, or raise the task's example length (context)");
  if (!ex.model->config().causal) {
    if (note) *note = "eval.generate (model.causal is false: a continuation needs a causal decoder)";
    return false;
  }
  return true;
}

std::vector<DecodedSample> generate_samples(Experiment& ex, Split split, std::size_t count, std::int64_t step) {
  const spec::GenerateSpec& g = ex.spec.eval.generate;
  const auto n = static_cast<std::int64_t>(std::min<std::size_t>(count, static_cast<std::size_t>(ex.size(split))));
  std::vector<std::int64_t> indices;
  for (std::int64_t i = 0; i < n; ++i) indices.push_back(i);
  const std::vector<Example> examples = ex.examples(split, indices);
  std::vector<std::vector<std::int32_t>> prompts, references;
  for (const Example& e : examples) {  // tgt = prompt | reference | the rest
    const auto len = static_cast<std::int64_t>(e.tgt.size());
    const std::int64_t cut = std::min(len, g.prompt_tokens), end = std::min(len, cut + g.max_tokens);
    prompts.emplace_back(e.tgt.begin(), e.tgt.begin() + cut);
    references.emplace_back(e.tgt.begin() + cut, e.tgt.begin() + end);
  }
  model::GenerateOptions options;
  options.max_tokens = g.max_tokens;
  options.temperature = g.temperature;
  options.top_k = g.top_k;
  options.key = {static_cast<std::uint64_t>(ex.spec.train.seed), static_cast<std::uint64_t>(step), kGenerateOp};
  const std::vector<std::vector<std::int32_t>> continuations = ex.model->generate(*ex.backend, prompts, options);
  std::vector<DecodedSample> out;
  for (std::size_t i = 0; i < examples.size(); ++i)
    out.push_back({ex.text(prompts[i], true), ex.text(references[i], true), ex.text(continuations[i], true), prompts[i],
                   references[i], continuations[i]});
  return out;
}

}  // namespace ablate::train
