// The scores of task/classification: accuracy and macro-averaged F1 of predicted class ids
// against reference class ids. Kept apart from the task so tests check them on hand-made
// predictions.
#pragma once

#include <cstdint>
#include <vector>

namespace task_classification {

struct ClassScores {
  double accuracy = 0.0;  // fraction of predictions equal to their reference
  // The mean over classes of F1 = 2 TP / (2 TP + FP + FN), over the classes that occur among the
  // references or the predictions (sklearn's f1_score(average="macro") with its default labels).
  double macro_f1 = 0.0;
};

// `references` in [0, num_classes); a prediction outside it (no class) is wrong: a false negative
// of its reference's class and no class's false positive. Throws ablate::Error for different
// sizes, no references, or a reference outside [0, num_classes).
ClassScores class_scores(const std::vector<std::int32_t>& references, const std::vector<std::int32_t>& predictions,
                         std::int64_t num_classes);

}  // namespace task_classification
