// generate_text() (run_generate.hpp): prompts encoded by the task, checked against the model's
// positions, continued by Transformer::generate in batches, and written back as text.
#include "train/run_generate.hpp"

#include <algorithm>

#include "ablate/error.hpp"

namespace ablate::train {

namespace {
constexpr std::uint32_t kGenerateCommandOp = 0x47454E31u;  // "GEN1": the draws' op id (apart from eval's)
}

std::vector<Generated> generate_text(TrainedRun& run, const GenerateRequest& r) {
  Experiment& ex = *run.experiment;
  if (ex.model->config().arch != model::Arch::Decoder || ex.task_info.type != TaskType::LanguageModel)
    throw UsageError(std::string("ablate generate continues text with a decoder-only language model; this run is ") +
                         spec::to_string(ex.spec.model.arch) + " on task/" + ex.spec.task.name,
                     "an encoder-decoder model translates: ablate translate RUN_DIR");
  if (!ex.model->config().causal) throw UsageError("ablate generate needs a causal decoder; this run has model.causal false");
  if (!ex.has_text())
    throw UsageError("the run's task has no text (synthetic token ids): there is no vocabulary to encode a prompt with",
                     "train on a text file (task/language_model with file: PATH)");
  if (r.prompts.empty()) throw UsageError("no prompts: the input is empty", "give --prompt TEXT, --input FILE or lines on stdin");
  if (r.max_tokens < 1) throw UsageError("--max-tokens must be >= 1, got " + std::to_string(r.max_tokens));
  if (!(r.temperature >= 0.0)) throw UsageError("--temperature must be >= 0 (0: greedy), got " + std::to_string(r.temperature));
  if (r.top_k < 0) throw UsageError("--top-k must be >= 0 (0: all tokens), got " + std::to_string(r.top_k));

  std::vector<std::vector<std::int32_t>> prompts;
  std::vector<Generated> out(r.prompts.size());
  const Experiment::PositionLimit limit = ex.decoding_limit();
  for (std::size_t i = 0; i < r.prompts.size(); ++i) {
    prompts.push_back(ex.encode(r.prompts[i], true, &out[i].unknown));
    out[i].prompt_tokens = static_cast<std::int64_t>(prompts.back().size());
    if (prompts.back().empty())
      throw UsageError("prompt " + std::to_string(i + 1) + " has no tokens (it is empty or blank)",
                       "every prompt needs at least one token to continue");
    const std::int64_t needed = out[i].prompt_tokens + 1 + r.max_tokens;  // bos + prompt + new tokens
    if (needed > limit.positions)
      throw UsageError("prompt " + std::to_string(i + 1) + " has " + std::to_string(out[i].prompt_tokens) +
                           " tokens: with bos and --max-tokens " + std::to_string(r.max_tokens) + " it needs " +
                           std::to_string(needed) + " positions, and " + limit.why,
                       "shorten the prompt or lower --max-tokens (to at most " +
                           std::to_string(std::max<std::int64_t>(limit.positions - out[i].prompt_tokens - 1, 0)) + ")");
  }
  model::GenerateOptions options;
  options.max_tokens = r.max_tokens;
  options.temperature = r.temperature;
  options.top_k = r.top_k;
  const auto batch = static_cast<std::size_t>(std::max<std::int64_t>(ex.spec.train.batch_size, 1));
  for (std::size_t first = 0; first < prompts.size(); first += batch) {
    const std::size_t last = std::min(prompts.size(), first + batch);
    // The batch's index is the key's step: prompt i's draws are (seed, i / batch, i % batch, n).
    options.key = {r.seed, static_cast<std::uint64_t>(first / batch), kGenerateCommandOp};
    const std::vector<std::vector<std::int32_t>> part(prompts.begin() + static_cast<std::ptrdiff_t>(first),
                                                      prompts.begin() + static_cast<std::ptrdiff_t>(last));
    const auto continued = ex.model->generate(*ex.backend, part, options);
    for (std::size_t j = 0; j < continued.size(); ++j) out[first + j].text = ex.text(continued[j], true);
  }
  return out;
}

}  // namespace ablate::train
