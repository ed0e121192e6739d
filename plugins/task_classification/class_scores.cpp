// Accuracy and macro-F1 of class predictions (class_scores.hpp).
#include "class_scores.hpp"

#include <string>

#include "ablate/error.hpp"

namespace task_classification {

ClassScores class_scores(const std::vector<std::int32_t>& references, const std::vector<std::int32_t>& predictions,
                         std::int64_t num_classes) {
  if (references.size() != predictions.size())
    throw ablate::Error("class scores: " + std::to_string(predictions.size()) + " predictions for " +
                            std::to_string(references.size()) + " references",
                        "pass one predicted class per reference");
  if (references.empty()) throw ablate::Error("class scores: no references", "score at least one example");
  const auto C = static_cast<std::size_t>(num_classes);
  std::vector<std::int64_t> tp(C, 0), fp(C, 0), fn(C, 0);
  std::int64_t correct = 0;
  const auto in_range = [num_classes](std::int32_t c) { return c >= 0 && c < num_classes; };
  for (std::size_t i = 0; i < references.size(); ++i) {
    const std::int32_t ref = references[i], pred = predictions[i];
    if (!in_range(ref))
      throw ablate::Error("class scores: reference " + std::to_string(i) + " is class " + std::to_string(ref) +
                              "; expected a class in [0, " + std::to_string(num_classes) + ")",
                          "references come from the task's examples");
    if (pred == ref) {
      ++correct;
      ++tp[static_cast<std::size_t>(ref)];
      continue;
    }
    ++fn[static_cast<std::size_t>(ref)];
    if (in_range(pred)) ++fp[static_cast<std::size_t>(pred)];
  }
  double f1_sum = 0.0;
  std::int64_t classes = 0;
  for (std::size_t c = 0; c < C; ++c) {
    const std::int64_t denominator = 2 * tp[c] + fp[c] + fn[c];
    if (denominator == 0) continue;  // neither a reference nor a prediction
    f1_sum += 2.0 * static_cast<double>(tp[c]) / static_cast<double>(denominator);
    ++classes;
  }
  ClassScores s;
  s.accuracy = static_cast<double>(correct) / static_cast<double>(references.size());
  s.macro_f1 = f1_sum / static_cast<double>(classes);  // classes >= 1: every reference's class counts
  return s;
}

}  // namespace task_classification
