// Kind "task": the data an experiment trains and evaluates on, as deterministic examples of
// token ids, plus the batching (make_batch) and default scoring the runner applies to them.
// The built-in synthetic tasks (copy, reverse, sort, language_model) live in plugins/task_*.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/plugin.hpp"
#include "ablate/tokenizer.hpp"

namespace ablate {

// Seq2Seq: src -> tgt. LanguageModel: tgt only (next-token prediction). Classification: src ->
// one class; each example's tgt is {class id in [0, num_classes)} (a class id, not a token id).
enum class TaskType { Seq2Seq, LanguageModel, Classification };
// Train: what the model learns from. Eval: scored during training (early stopping, curves).
// Test: held out, scored once when a run completes (size 0 for tasks without one).
enum class Split { Train, Eval, Test };

struct TaskInfo {
  TaskType type;
  std::int64_t vocab_size;                                     // includes the 3 reserved ids
  static constexpr std::int32_t kPad = 0, kBos = 1, kEos = 2;  // reserved ids; content tokens are 3 .. vocab_size-1
  std::int64_t max_src_len, max_tgt_len;                       // content lengths, without bos/eos (Classification: max_tgt_len 1)
  std::int64_t num_classes = 0;                                // Classification: the classes C (>= 2); 0 for the other task types
  bool shared_vocabulary = false;  // Seq2Seq: a source id and a target id name the same token (one vocabulary)
};

// Content tokens only (no bos/eos); src is empty for a LanguageModel task.
struct Example {
  std::vector<std::int32_t> src, tgt;
  // The target as written in the task's data (a translation's target sentence, before
  // tokenization), for scores that read text as papers do (sacreBLEU, chrF); empty where the task
  // has none.
  std::string reference;
  // The target is a window cut from a longer text (a language model's stretch of a file or of
  // token shards): the text goes on after it, so nothing is predicted after its last token (no
  // eos target; make_batch ignores that position). False: the target is whole and eos ends it.
  bool cut = false;
  bool operator==(const Example&) const = default;
};

// What the runner uploads: row-major, padded to the longest example of the batch.
struct HostBatch {
  std::int64_t B = 0, S = 0, T = 0;
  std::vector<std::int32_t> src, src_lengths;  // [B, S] padded with kPad; [B]
  std::vector<std::int32_t> tgt_in,
      tgt_out;  // [B, T]: kBos + tgt (teacher forcing), kPad at padding / tgt + kEos (a cut one's: kIgnore), kIgnore at padding
  std::vector<std::int32_t> tgt_lengths;  // [B]: tgt.size() + 1
  static constexpr std::int32_t kIgnore = -100;
};

// What the host hands a task before anything else (Task::prepare).
struct TaskContext {
  // The spec's task.tokenizer, one per `role` the task asks for ("text"; a translation's
  // "source" and "target", or "joint" for one vocabulary of both sides): a new tokenizer to
  // train() on that role's training text, or one the run already trained (restored from the run
  // folder, so eval and export read text as training did), in which case train() returns at once.
  // Empty (no target) when the spec names no tokenizer: the task tokenizes as its own options say.
  std::function<std::shared_ptr<Tokenizer>(const std::string& role)> tokenizer;
  // The spec's task.tokenizer as another command trained it, restored from its file (`ablate
  // tokenize`'s OUT/tokenizer-text.bin beside the shards it encoded), for `role`: the file must
  // hold the spec's plugin with the spec's options; the run keeps it as its own
  // (tokenizer-ROLE.bin), so eval and export read text with it; train() returns at once. When the
  // run folder already holds the role's tokenizer (eval, resume) it must be the file's. Throws
  // UsageError naming the file otherwise. Empty (no target) when the spec names no tokenizer.
  std::function<std::shared_ptr<Tokenizer>(const std::string& role, const std::string& file)> stored_tokenizer;
  // A task that reads text with a vocabulary of its own (no task.tokenizer: its own `tokens`
  // options), or has another table its ids index (a classification's class names), hands it here
  // as a tokenizer for `role`, once counted from its data: the host keeps it with the run (the
  // run folder's tokenizer-ROLE.bin), and when the run already holds it (eval, export, resume)
  // loads it into `own` (Tokenizer::load) before returning, so ids keep their meaning even if the
  // data file was edited since. The task reads with `own` afterwards. Returns true when it loaded
  // the run's (then what the task counted from the data now says nothing of it: skip checks of
  // that). Empty (no target) for a host that keeps nothing.
  std::function<bool(const std::string& role, const std::shared_ptr<Tokenizer>& own)> keep_tokenizer;
};

// What Task::read_examples says of a file besides its examples, so that a score is never over
// fewer examples than the file holds without saying so. The host passes it value-initialised.
struct ReadReport {
  std::int64_t unknown = 0;    // tokens outside the run's vocabularies, read as <unk>
  std::int64_t read = 0;       // examples the file holds (its lines or pairs; a language model's windows)
  std::int64_t dropped = 0;    // of those, left out by the task's rules: why in `dropped_why`
  std::string dropped_why;     // "a side longer than max_len 20 tokens (long_examples: filter)"
  std::int64_t truncated = 0;  // kept, cut to fit the length rule
};

class BOOST_SYMBOL_VISIBLE Task : public Component {
 public:
  static constexpr const char* kKind = "task";
  // Called by the host once, right after the plugin made the task and before any other call. The
  // default refuses a tokenizer (the task reads no text) and does nothing else; a text task reads
  // and encodes its data here.
  virtual void prepare(const TaskContext& context);
  virtual TaskInfo info() const = 0;
  virtual std::int64_t size(Split split) const = 0;
  // Deterministic in (the plugin's seed option, split, index): the same example every call, on
  // every machine. Throws ablate::Error for an index outside [0, size(split)).
  virtual Example example(Split split, std::int64_t index) const = 0;
  // Training example `index` as read for one batch of the run: `draw` is the host's key for that
  // read (a function of the run's seed and the batch, so each epoch reads the example anew and a
  // resumed run reads it as the uninterrupted one did). A task whose tokenizer samples
  // (Tokenizer::samples) segments the example's text anew from `draw`; evaluation never calls
  // this. Default: example(Split::Train, index).
  virtual Example train_example(std::int64_t index, std::uint64_t draw) const;
  // Examples of other lengths, for evaluation beyond the trained lengths (eval.lengths): how many
  // examples of exactly `length` content tokens (a seq2seq task's src, a language model's tgt) the
  // split holds; 0 (the default) when the task cannot make them. The index-th of them comes from
  // example_at_length, deterministic like example(); the default throws.
  virtual std::int64_t size_at_length(Split split, std::int64_t length) const;
  virtual Example example_at_length(Split split, std::int64_t index, std::int64_t length) const;
  // The metrics of predictions (greedy-decoded content tokens, eos stripped) against references.
  // The default (framework/core/task.cpp) gives "exact_match" (fraction of predictions equal to
  // their reference tgt) and "token_accuracy" (position-wise matches over the sum of
  // max(reference length, prediction length): extra and missing tokens count as wrong).
  virtual std::map<std::string, double> score(const std::vector<Example>& references,
                                              const std::vector<std::vector<std::int32_t>>& predictions) const;
  // The names score() returns, fixed for the task's lifetime (the run file declares its columns
  // before training). Default: {"exact_match", "token_accuracy"}; an override that adds scores
  // (BLEU) lists them all.
  virtual std::vector<std::string> score_names() const;
  // Tokens as text for people: decoded samples and attention-probe labels. `target`: the target
  // side's vocabulary, else the source's. Default "": the task has no text (synthetic ids).
  virtual std::string text(const std::vector<std::int32_t>& tokens, bool target) const;
  // Text people wrote (a prompt, a sentence to translate) as content token ids (no bos/eos), the
  // inverse of text(): tokenized as the task tokenizes its data, each token looked up in the
  // `target` side's vocabulary (else the source's), <unk> for one it does not have. `unknown`
  // (when not null) receives how many tokens became <unk>. Default: throws ablate::Error (the
  // task has no text).
  virtual std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const;
  // Examples read from another file in the task's own format (a new test set for `ablate eval
  // --data`), tokenized as the task's data and encoded with its vocabularies: <unk> for what they
  // lack. `report` receives the <unk> count, how many examples the file held, and how many the
  // task's rules (a length limit) left out or cut, and why. Throws ablate::Error naming FILE:LINE
  // for a bad line. Default: throws ablate::Error (the task reads no files).
  virtual std::vector<Example> read_examples(const std::string& file, ReadReport& report) const;
};

// Pads to the longest example in the batch (eos after each target but a cut one's); throws
// ablate::Error on an empty batch.
HostBatch make_batch(const std::vector<Example>& examples);

}  // namespace ablate
