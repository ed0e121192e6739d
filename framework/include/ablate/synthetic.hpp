// The shared generator of synthetic task plugins (the built-in task/copy, reverse, sort,
// random_pairs, language_model's Markov chain, and a task of one's own): their common options,
// validation, and a Philox token stream keyed by (seed, split, index), so every example is a pure
// function of those three. Header-only, part of the installed SDK: a seq2seq task whose target is a
// function of a random source is Seq2Seq(options, "task/NAME", f) (plugins/task_copy is 12 lines).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ablate/philox.hpp"
#include "ablate/task.hpp"

namespace ablate::synthetic {

inline constexpr ablate::OptionInfo kOptions[] = {
    {"vocab_size", ablate::OptionType::Int, "32", nullptr, "token ids incl. the 3 reserved ones (pad, bos, eos)"},
    {"min_len", ablate::OptionType::Int, "4", nullptr, "shortest sequence, in content tokens"},
    {"max_len", ablate::OptionType::Int, "12", nullptr, "longest sequence, in content tokens"},
    {"train_examples", ablate::OptionType::Int, "20000", nullptr, "examples in the train split"},
    {"eval_examples", ablate::OptionType::Int, "500", nullptr, "examples in the eval split"},
    {"seed", ablate::OptionType::Int, "1", nullptr, "seed of the data (independent of the training seed)"},
};

// Op ids of the Philox keys: the split keys the stream, so train and eval draw different data;
// the eval examples of another length (eval.lengths) have a stream per length.
inline constexpr std::uint32_t kTrainStream = 1, kEvalStream = 2, kTableStream = 3, kLengthStreams = 0x4C000000u;

struct Settings {
  std::int64_t vocab_size, min_len, max_len, train_examples, eval_examples, seed;

  // Reads and validates the options; `plugin` ("task/copy") names the plugin in errors.
  Settings(const ablate::Options& o, const std::string& plugin)
      : vocab_size(o.get_int("vocab_size")),
        min_len(o.get_int("min_len")),
        max_len(o.get_int("max_len")),
        train_examples(o.get_int("train_examples")),
        eval_examples(o.get_int("eval_examples")),
        seed(o.get_int("seed")) {
    if (vocab_size <= 3)
      throw ablate::Error(plugin + ": vocab_size must be > 3 (ids 0..2 are pad, bos, eos), got " + std::to_string(vocab_size),
                          "set vocab_size to the number of content tokens + 3");
    if (min_len < 1 || min_len > max_len)
      throw ablate::Error(plugin + ": need 1 <= min_len <= max_len, got min_len " + std::to_string(min_len) + ", max_len " +
                              std::to_string(max_len),
                          "sequence lengths count content tokens; raise max_len or lower min_len");
    if (train_examples < 1 || eval_examples < 1)
      throw ablate::Error(plugin + ": train_examples and eval_examples must be >= 1, got " + std::to_string(train_examples) +
                          " and " + std::to_string(eval_examples));
  }

  // No test split: the synthetic data has no held-out set beyond eval.
  std::int64_t size(ablate::Split s) const {
    return s == ablate::Split::Train ? train_examples : s == ablate::Split::Eval ? eval_examples : 0;
  }
  std::int64_t content_tokens() const { return vocab_size - 3; }
  // eval.lengths: the eval split holds eval_examples sequences of any length >= 1, drawn afresh.
  std::int64_t size_at_length(ablate::Split s, std::int64_t length) const {
    return s == ablate::Split::Eval && length >= 1 && length < (1 << 24) ? eval_examples : 0;
  }

  void check_index(ablate::Split s, std::int64_t index, const std::string& plugin) const {
    if (index < 0 || index >= size(s))
      throw ablate::Error(plugin + ": example index " + std::to_string(index) + " is outside the " +
                              (s == ablate::Split::Train ? "train" : "eval") + " split [0, " + std::to_string(size(s)) + ")",
                          "index with 0 .. size(split) - 1");
  }
};

// A stream of uniform floats in [0, 1): Philox under RngKey{seed, step, op_id}, blocks in order.
class Stream {
 public:
  Stream(std::int64_t seed, std::uint64_t step, std::uint32_t op_id) : key_{static_cast<std::uint64_t>(seed), step, op_id} {}
  // The stream of one example: keyed by (seed, split, index).
  static Stream of(const Settings& s, ablate::Split split, std::int64_t index) {
    return Stream(s.seed, static_cast<std::uint64_t>(index), split == ablate::Split::Train ? kTrainStream : kEvalStream);
  }
  // The stream of the index-th eval example of `length` tokens (Settings::size_at_length).
  static Stream at_length(const Settings& s, std::int64_t index, std::int64_t length) {
    if (index < 0 || index >= s.size_at_length(ablate::Split::Eval, length))
      throw ablate::Error("example " + std::to_string(index) + " of length " + std::to_string(length) +
                              " is outside the eval split's [0, " + std::to_string(s.eval_examples) + ") (length >= 1)",
                          "check size_at_length(split, length) first");
    return Stream(s.seed, static_cast<std::uint64_t>(index), kLengthStreams + static_cast<std::uint32_t>(length));
  }
  float uniform() {
    if (used_ == 4) {
      ablate::philox_uniform4(key_, block_++, buf_);
      used_ = 0;
    }
    return buf_[used_++];
  }
  // Uniform integer in [lo, hi].
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    const auto n = hi - lo + 1;
    return lo + std::min<std::int64_t>(static_cast<std::int64_t>(uniform() * static_cast<float>(n)), n - 1);
  }

 private:
  ablate::RngKey key_;
  std::uint64_t block_ = 0;
  float buf_[4] = {};
  int used_ = 4;
};

// The content tokens (in [3, vocab_size)) of a uniformly random sequence of `length` tokens, by
// default of a length drawn first from [min_len, max_len].
inline std::vector<std::int32_t> random_sequence(const Settings& s, Stream& r, std::int64_t length = 0) {
  std::vector<std::int32_t> seq(static_cast<std::size_t>(length > 0 ? length : r.integer(s.min_len, s.max_len)));
  for (auto& t : seq) t = static_cast<std::int32_t>(r.integer(3, s.vocab_size - 1));
  return seq;
}

// A sequence-to-sequence task whose tgt is a fixed function of a random src.
class Seq2Seq final : public ablate::Task {
 public:
  using Transform = std::function<std::vector<std::int32_t>(std::vector<std::int32_t>)>;
  Seq2Seq(const ablate::Options& o, std::string plugin, Transform f)
      : plugin_(std::move(plugin)), s_(o, plugin_), f_(std::move(f)) {}

  ablate::TaskInfo info() const override { return {ablate::TaskType::Seq2Seq, s_.vocab_size, s_.max_len, s_.max_len, 0, true}; }
  std::int64_t size(ablate::Split split) const override { return s_.size(split); }
  ablate::Example example(ablate::Split split, std::int64_t index) const override {
    s_.check_index(split, index, plugin_);
    Stream r = Stream::of(s_, split, index);
    return of(random_sequence(s_, r));
  }
  std::int64_t size_at_length(ablate::Split split, std::int64_t length) const override {
    return s_.size_at_length(split, length);
  }
  ablate::Example example_at_length(ablate::Split, std::int64_t index, std::int64_t length) const override {
    Stream r = Stream::at_length(s_, index, length);
    return of(random_sequence(s_, r, length));
  }

 private:
  ablate::Example of(std::vector<std::int32_t> src) const {
    ablate::Example e;
    e.tgt = f_(src);
    e.src = std::move(src);
    return e;
  }

  std::string plugin_;
  Settings s_;
  Transform f_;
};

}  // namespace ablate::synthetic
