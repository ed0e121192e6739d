// The out-of-line parts of the task kind (ablate/task.hpp): batching examples into the padded
// host layout the runner uploads, and the defaults every task inherits (metrics, a training
// example read as any other) and every tokenizer (no subword sampling).
#include "ablate/task.hpp"

#include <algorithm>
#include <cstddef>

namespace ablate {

HostBatch make_batch(const std::vector<Example>& examples) {
  if (examples.empty()) throw Error("make_batch: no examples", "pass at least one example per batch");
  HostBatch b;
  b.B = static_cast<std::int64_t>(examples.size());
  for (const Example& e : examples) {
    b.S = std::max<std::int64_t>(b.S, static_cast<std::int64_t>(e.src.size()));
    b.T = std::max<std::int64_t>(b.T, static_cast<std::int64_t>(e.tgt.size()) + 1);  // + bos / eos
  }
  b.src.assign(static_cast<std::size_t>(b.B * b.S), TaskInfo::kPad);
  b.tgt_in.assign(static_cast<std::size_t>(b.B * b.T), TaskInfo::kPad);
  b.tgt_out.assign(static_cast<std::size_t>(b.B * b.T), HostBatch::kIgnore);
  b.src_lengths.reserve(examples.size());
  b.tgt_lengths.reserve(examples.size());
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const Example& e = examples[i];
    const std::size_t srow = i * static_cast<std::size_t>(b.S), trow = i * static_cast<std::size_t>(b.T);
    std::copy(e.src.begin(), e.src.end(), b.src.begin() + static_cast<std::ptrdiff_t>(srow));
    b.tgt_in[trow] = TaskInfo::kBos;
    std::copy(e.tgt.begin(), e.tgt.end(), b.tgt_in.begin() + static_cast<std::ptrdiff_t>(trow + 1));
    std::copy(e.tgt.begin(), e.tgt.end(), b.tgt_out.begin() + static_cast<std::ptrdiff_t>(trow));
    if (!e.cut) b.tgt_out[trow + e.tgt.size()] = TaskInfo::kEos;  // a cut window's last position predicts nothing
    b.src_lengths.push_back(static_cast<std::int32_t>(e.src.size()));
    b.tgt_lengths.push_back(static_cast<std::int32_t>(e.tgt.size() + 1));
  }
  return b;
}

void Task::prepare(const TaskContext& context) {
  if (context.tokenizer) throw Error("this task reads no text, so it takes no tokenizer", "remove task.tokenizer from the spec");
}

Example Task::train_example(std::int64_t index, std::uint64_t) const { return example(Split::Train, index); }

bool Tokenizer::samples() const { return false; }

std::vector<std::int32_t> Tokenizer::encode_sampled(std::string_view text, std::uint64_t) const { return encode(text, nullptr); }

std::int64_t Task::size_at_length(Split, std::int64_t) const { return 0; }

Example Task::example_at_length(Split, std::int64_t, std::int64_t length) const {
  throw Error("this task makes no examples of other lengths (asked for " + std::to_string(length) + " tokens)",
              "check size_at_length(split, length) > 0 first");
}

std::map<std::string, double> Task::score(const std::vector<Example>& references,
                                          const std::vector<std::vector<std::int32_t>>& predictions) const {
  if (references.size() != predictions.size())
    throw Error("task score: " + std::to_string(predictions.size()) + " predictions for " + std::to_string(references.size()) +
                    " references",
                "pass one prediction (content tokens, eos stripped) per reference example");
  if (references.empty()) throw Error("task score: no references", "score at least one example");
  std::int64_t exact = 0, correct = 0, positions = 0;
  for (std::size_t i = 0; i < references.size(); ++i) {
    const auto& ref = references[i].tgt;
    const auto& pred = predictions[i];
    if (pred == ref) ++exact;
    const std::size_t common = std::min(ref.size(), pred.size());
    for (std::size_t t = 0; t < common; ++t) correct += pred[t] == ref[t] ? 1 : 0;
    positions += static_cast<std::int64_t>(std::max(ref.size(), pred.size()));
  }
  return {{"exact_match", static_cast<double>(exact) / static_cast<double>(references.size())},
          {"token_accuracy", positions == 0 ? 1.0 : static_cast<double>(correct) / static_cast<double>(positions)}};
}

std::vector<std::string> Task::score_names() const { return {"exact_match", "token_accuracy"}; }

std::string Task::text(const std::vector<std::int32_t>&, bool) const { return {}; }

std::vector<Example> Task::read_examples(const std::string& file, ReadReport&) const {
  throw Error("this task reads no data files, so " + file + " cannot be evaluated",
              "evaluate a task over files (task/translation, task/language_model with file, task/classification) with --data, "
              "or use --split");
}

std::vector<std::int32_t> Task::encode(const std::string&, bool, std::int64_t*) const {
  throw Error("this task has no text: its tokens are synthetic ids, so text cannot be encoded",
              "give token ids, or use a task over text (task/translation, task/language_model with file, "
              "task/classification)");
}

}  // namespace ablate
