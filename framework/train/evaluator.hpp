// Evaluation on a held-out split: teacher-forced loss, perplexity and token accuracy, and the
// task's scores of greedy-decoded predictions (exact_match, and whatever else the task reports,
// such as BLEU), plus a few decoded samples as text; for a language model with text, sampled
// continuations of eval examples (eval.generate).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spec/experiment_spec.hpp"
#include "train/beam_search.hpp"
#include "train/experiment.hpp"

namespace ablate::train {

// A decoded example, as text (empty strings for tasks without text). A language model's
// continuation: src = the prompt, reference = the true next tokens, prediction = the generated ones.
struct DecodedSample {
  std::string src, reference, prediction;
  std::vector<std::int32_t> src_ids, reference_ids, prediction_ids;  // the same as tokens
};

struct Evaluation {
  std::map<std::string, double> metrics;
  std::vector<DecodedSample> samples;  // the first `samples` examples (decoding runs only)
};

// The examples used: the first min(eval.batches * batch_size, size(split)) of `split` (Eval or
// Test), the same at every evaluation, or the first min(count, size(split)) when count > 0.
// Metrics, by name:
//   loss          mean cross entropy per target token (no label smoothing)
//   perplexity    exp(loss)
//   token_accuracy  teacher-forced argmax accuracy over target tokens
//   bits_per_byte the cross entropy summed over the target tokens, in bits, per UTF-8 byte of
//                 the text the targets spell (text_bytes): comparable across tokenizers. A cut
//                 window follows the last token of the example evaluated before it (consecutive
//                 in a contiguous split; the first starts a line, as a held-out stretch does)
//   exact_match and the task's other scores (Task::score_names) of greedy-decoded predictions;
//                 a score named like a teacher-forced metric gets the prefix decoded_
//                 (decoded_token_accuracy)
// Only the metrics in `metrics` (and the task's scores with exact_match) are computed; no RNG is
// drawn and no gradient or parameter is touched. length > 0: on the split's examples of that
// length instead (eval.lengths; greedy decoding then allows targets of up to that length too).
// `beam` (not null, beam > 1): the predictions come from beam_search (beam_search.hpp) instead.
Evaluation evaluate(Experiment& experiment, const std::vector<spec::Metric>& metrics, Split split = Split::Eval,
                    std::size_t samples = 0, std::int64_t length = 0, std::int64_t count = 0, const BeamOptions* beam = nullptr);

// The same on `examples` (Task::read_examples of a new file): every one of them, greedy (or beam)
// decoding up to the task's max_tgt_len.
Evaluation evaluate_examples(Experiment& experiment, const std::vector<spec::Metric>& metrics,
                             const std::vector<Example>& examples, std::size_t samples, const BeamOptions* beam = nullptr);

// The UTF-8 bytes of the text `tokens` (target side, content ids) spell where they follow the
// token `before` (-1: they start a line): the task's text of both, less `before`'s own, so that a
// window that starts at a word counts the space its first piece stands for (SentencePiece's
// decoding drops it at the start of a line, where the text has none) and the bytes of a stretch's
// windows add up to the stretch's. For a task with text (Experiment::has_text()).
std::int64_t text_bytes(const Experiment& experiment, const std::vector<std::int32_t>& tokens, std::int32_t before = -1);

// The column of `metric` evaluated at `length` (eval.lengths): "loss_at_128".
std::string at_length(const std::string& metric, std::int64_t length);

// The positions a model needs for examples of `length` content tokens (the encoder's source, the
// decoder's bos + target), for a task like `task` (a seq2seq task's target is taken as long as its source).
std::int64_t positions_needed(const Experiment& experiment, std::int64_t length);

// Whether evaluations record continuations: the task is a language model with text, the model a
// causal decoder, and eval.generate.max_tokens > 0. `note` receives why not when the spec asks for
// them and the model cannot (model.causal false). Throws UsageError (at eval.generate.prompt_tokens)
// when the prompt would take the task's whole example.
bool generates(const Experiment& experiment, std::string* note = nullptr);

// The continuations of the first `count` examples of `split`: prompt = the first
// eval.generate.prompt_tokens tokens, reference = the next max_tokens, prediction = the model's
// continuation (Transformer::generate, with eval.generate's temperature and top_k), drawn from the
// counter RNG keyed by (train.seed, step): the same samples at the same step after a resume.
std::vector<DecodedSample> generate_samples(Experiment& experiment, Split split, std::size_t count, std::int64_t step);

// The names evaluate() reports for `metrics` with a task scoring `score_names`, in a fixed order
// (the run file's eval columns): the metrics themselves, then the task's other scores when
// exact_match is among them.
std::vector<std::string> evaluated_names(const std::vector<spec::Metric>& metrics, const std::vector<std::string>& score_names);

}  // namespace ablate::train
