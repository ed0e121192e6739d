// evaluate() (evaluator.hpp): batches of the eval split through the model without gradient,
// then the task's scoring of the greedy predictions.
#include "train/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include "ablate/ops.hpp"

namespace ablate::train {

std::vector<std::string> evaluated_names(const std::vector<spec::Metric>& metrics) {
  std::vector<std::string> out;
  for (spec::Metric m : metrics) out.push_back(spec::to_string(m));
  if (std::find(metrics.begin(), metrics.end(), spec::Metric::exact_match) != metrics.end())
    out.push_back("decoded_token_accuracy");
  return out;
}

std::map<std::string, double> evaluate(Experiment& ex, const std::vector<spec::Metric>& metrics) {
  const auto wants = [&](spec::Metric m) { return std::find(metrics.begin(), metrics.end(), m) != metrics.end(); };
  const bool decode = wants(spec::Metric::exact_match);
  const bool forced = wants(spec::Metric::loss) || wants(spec::Metric::perplexity) || wants(spec::Metric::token_accuracy);
  const std::int64_t batch_size = ex.spec.train.batch_size;
  const std::int64_t n = std::min(ex.spec.eval.batches * batch_size, ex.task->size(Split::Eval));

  double loss_sum = 0.0, rows = 0.0, correct = 0.0;
  std::vector<Example> references;
  std::vector<std::vector<std::int32_t>> predictions;
  for (std::int64_t first = 0; first < n; first += batch_size) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = first; i < std::min(n, first + batch_size); ++i) indices.push_back(i);
    std::vector<Example> examples = ex.examples(Split::Eval, indices);
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

  std::map<std::string, double> out;
  const double loss = rows > 0 ? loss_sum / rows : 0.0;
  if (wants(spec::Metric::loss)) out["loss"] = loss;
  if (wants(spec::Metric::perplexity)) out["perplexity"] = std::exp(loss);
  if (wants(spec::Metric::token_accuracy)) out["token_accuracy"] = rows > 0 ? correct / rows : 0.0;
  if (decode && !references.empty())
    for (const auto& [name, value] : ex.task->score(references, predictions))
      out[name == "exact_match" ? name : "decoded_" + name] = value;
  return out;
}

}  // namespace ablate::train
