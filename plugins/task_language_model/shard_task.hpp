// task/language_model over token shards (the plugin's shard mode, option `shards`): a corpus
// tokenized once by `ablate tokenize` (or llm.c's and nanoGPT-style scripts), read a window at a
// time (ablate::ShardReader), never loaded: memory stays the same for 20 MB or 2 GB of shards.
// Held-out text is contiguous: eval/test shards of their own, or a tail of the training shards.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plugin_name.hpp"
#include "ablate/task.hpp"
#include "ablate/token_shards.hpp"
#include "ablate/tokenizer.hpp"

namespace task_language_model {

struct ShardSettings {
  std::string shards, eval_shards, test_shards;  // glob patterns; eval/test empty: a tail of `shards`
  std::int64_t context = 64;                     // tokens per window
  double valid_fraction = 0.05, test_fraction = 0.05;
  // The tokenizer the shards were made with (task.tokenizer restored from tokenizer-text.bin beside
  // them; ids read as they are), or null: shards of another tool, ids 0 .. shard_vocab_size-1 read
  // as 3 .. shard_vocab_size+2 (0-2 are pad, bos, eos).
  std::shared_ptr<ablate::Tokenizer> tokenizer;
  std::int64_t shard_vocab_size = 0;
};

class ShardLanguageModel final : public ablate::Task {
 public:
  static constexpr const char* kName = kPluginName;
  // Opens every shard (headers checked) and lays out the splits. Throws ablate::Error naming the
  // plugin (and the shard) for bad settings and bad shards.
  explicit ShardLanguageModel(const ShardSettings& settings);

  ablate::TaskInfo info() const override;
  std::int64_t size(ablate::Split split) const override;
  // Window `index` of the split: `context` tokens read from its shard (an id outside the
  // vocabulary is an Error naming the shard and the token).
  ablate::Example example(ablate::Split split, std::int64_t index) const override;
  // The split's stretches cut into windows of `length` (eval.lengths), in shard order.
  std::int64_t size_at_length(ablate::Split split, std::int64_t length) const override;
  ablate::Example example_at_length(ablate::Split split, std::int64_t index, std::int64_t length) const override;
  // With the shards' tokenizer: its text and encoding; without one the ids have no text ("").
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override;
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override;
  std::vector<ablate::Example> read_examples(const std::string& file, ablate::ReadReport& report) const override;

  // A run of consecutive tokens of one shard: `tokens` from token `first`.
  struct Stretch {
    std::size_t shard = 0;
    std::int64_t first = 0, tokens = 0;
  };
  const std::vector<Stretch>& stretches(ablate::Split split) const;
  const ablate::ShardReader& shard(std::size_t i) const { return *readers_[i]; }

 private:
  // `count` tokens of the split from its token `offset` (stretches concatenated), as task ids.
  std::vector<std::int32_t> tokens_at(ablate::Split split, std::int64_t offset, std::int64_t count) const;

  struct Part {
    std::vector<Stretch> stretches;    // the split's text, in shard order
    std::vector<std::int64_t> starts;  // [stretches]: the split's token where each stretch starts
    std::int64_t tokens = 0;           // windows x context: every stretch holds whole windows
  };
  const Part& part(ablate::Split split) const;

  ShardSettings settings_;
  std::vector<std::unique_ptr<ablate::ShardReader>> readers_;
  std::map<ablate::Split, Part> parts_;
  std::int64_t vocab_size_ = 0;
};

}  // namespace task_language_model
