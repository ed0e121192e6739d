// evaluate() (evaluator.hpp): batches of the eval split through the model without gradient,
// then the task's scoring of the greedy predictions.
#include "train/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include "ablate/ops.hpp"

namespace ablate::train {

namespace {
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

Evaluation evaluate(Experiment& ex, const std::vector<spec::Metric>& metrics, Split split, std::size_t samples) {
  const auto wants = [&](spec::Metric m) { return std::find(metrics.begin(), metrics.end(), m) != metrics.end(); };
  const bool decode = wants(spec::Metric::exact_match);
  const bool forced = wants(spec::Metric::loss) || wants(spec::Metric::perplexity) || wants(spec::Metric::token_accuracy);
  const std::int64_t batch_size = ex.spec.train.batch_size;
  const std::int64_t n = std::min(ex.spec.eval.batches * batch_size, ex.task->size(split));

  double loss_sum = 0.0, rows = 0.0, correct = 0.0;
  std::vector<Example> references;
  std::vector<std::vector<std::int32_t>> predictions;
  for (std::int64_t first = 0; first < n; first += batch_size) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = first; i < std::min(n, first + batch_size); ++i) indices.push_back(i);
    std::vector<Example> examples = ex.examples(split, indices);
    const model::DeviceBatch batch = ex.batch(examples);
    if (forced) {
      Graph g(*ex.backend, static_cast<std::uint64_t>(ex.spec.train.seed), 0, /*training=*/false, /*grad=*/false);
      const ops::CrossEntropyResult ce = ops::cross_entropy(g, ex.model->logits(g, batch), batch.targets);
      float loss = 0.0f;
      ex.backend->copy_to_host(&loss, ce.loss.value());
      loss_sum += static_cast<double>(loss) * ce.rows;
      rows += ce.rows;
      correct += ce.correct;
    }
    if (decode) {
      references.insert(references.end(), std::make_move_iterator(examples.begin()), std::make_move_iterator(examples.end()));
      auto p = ex.model->greedy_decode(*ex.backend, batch, ex.task_info.max_tgt_len);
      predictions.insert(predictions.end(), std::make_move_iterator(p.begin()), std::make_move_iterator(p.end()));
    }
  }

  Evaluation result;
  std::map<std::string, double>& out = result.metrics;
  const double loss = rows > 0 ? loss_sum / rows : 0.0;
  if (wants(spec::Metric::loss)) out["loss"] = loss;
  if (wants(spec::Metric::perplexity)) out["perplexity"] = std::exp(loss);
  if (wants(spec::Metric::token_accuracy)) out["token_accuracy"] = rows > 0 ? correct / rows : 0.0;
  if (decode && !references.empty()) {
    for (const auto& [name, value] : ex.task->score(references, predictions)) out[decoded_name(name)] = value;
    for (std::size_t i = 0; i < std::min(samples, references.size()); ++i)
      result.samples.push_back({ex.task->text(references[i].src, false), ex.task->text(references[i].tgt, true),
                                ex.task->text(predictions[i], true)});
  }
  return result;
}

}  // namespace ablate::train
