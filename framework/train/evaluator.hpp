// Evaluation on the held-out split: teacher-forced loss, perplexity and token accuracy, and the
// task's scores of greedy-decoded predictions (exact_match, and whatever else the task reports).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spec/experiment_spec.hpp"
#include "train/experiment.hpp"

namespace ablate::train {

// The eval examples used: the first min(eval.batches * batch_size, size(Eval)) of the split,
// the same at every evaluation. Returns metric name -> value:
//   loss          mean cross entropy per target token (no label smoothing)
//   perplexity    exp(loss)
//   token_accuracy  teacher-forced argmax accuracy over target tokens
//   exact_match   fraction of greedy-decoded predictions equal to their target (task score)
//   decoded_<k>   any other score the task reports for the decoded predictions (e.g. decoded_token_accuracy)
// Only the metrics in `metrics` (and their decoded companions) are computed; no RNG is drawn and
// no gradient or parameter is touched.
std::map<std::string, double> evaluate(Experiment& experiment, const std::vector<spec::Metric>& metrics);

// The names evaluate() reports for `metrics`, in a fixed order (the run file's eval columns): the
// metrics themselves, then decoded_token_accuracy with exact_match (what the default task
// scoring adds; other scores a task plugin reports are printed but have no column).
std::vector<std::string> evaluated_names(const std::vector<spec::Metric>& metrics);

}  // namespace ablate::train
