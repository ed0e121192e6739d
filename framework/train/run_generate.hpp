// `ablate generate`: a trained language model continues prompts people write, greedily or by
// sampling, one continuation per prompt: what a researcher reads to see what an arm has learned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/run_eval.hpp"

namespace ablate::train {

struct GenerateRequest {
  std::vector<std::string> prompts;  // text, encoded as the task encodes its data
  std::int64_t max_tokens = 0;       // new tokens per prompt (fewer where eos comes first)
  double temperature = 0.0;          // 0: greedy; > 0: sampled from softmax(logits / temperature)
  std::int64_t top_k = 0;            // > 0: among the k most likely tokens only
  std::uint64_t seed = 0;            // the sampling draws' key (the same seed gives the same text)
};

struct Generated {
  std::string text;  // the continuation, as the task writes text
  std::int64_t prompt_tokens = 0;
  std::int64_t unknown = 0;  // prompt tokens the vocabulary did not have (<unk>)
};

// Continues every prompt with `run`'s model (Transformer::generate, in batches of the run's
// train.batch_size; prompt i's draws depend on the seed and on i alone). Throws UsageError, before
// generating anything, for a model that is not a causal decoder-only language model, a task
// without text, no prompts, an empty prompt, max_tokens < 1, temperature < 0, top_k < 0, or a prompt
// that with bos and max_tokens needs more positions than the positional encoding represents.
std::vector<Generated> generate_text(TrainedRun& run, const GenerateRequest& request);

}  // namespace ablate::train
