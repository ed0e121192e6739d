// translate_text() (run_translate.hpp): lines encoded by the task's source side, checked against
// the encoder's positions, decoded in batches, and written back as target text.
#include "train/run_translate.hpp"

#include <algorithm>

#include "ablate/error.hpp"

namespace ablate::train {

std::vector<Translated> translate_text(TrainedRun& run, const std::vector<std::string>& lines, const BeamOptions& options) {
  Experiment& ex = *run.experiment;
  if (ex.model->config().arch != model::Arch::EncoderDecoder)
    throw UsageError(
        std::string("ablate translate needs an encoder-decoder model; this run is ") + spec::to_string(ex.spec.model.arch),
        "a language model continues text: ablate generate RUN_DIR --prompt TEXT");
  if (!ex.has_text())
    throw UsageError("the run's task has no text (synthetic token ids): there is no vocabulary to read a sentence with",
                     "train on text (task/translation)");
  if (lines.empty()) throw UsageError("nothing to translate: the input is empty", "give --input FILE or lines on stdin");
  check_beam_options(options);
  const Experiment::PositionLimit limit = ex.decoding_limit();
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<Translated> out(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    sources.push_back(ex.encode(lines[i], false, &out[i].unknown));
    const auto len = static_cast<std::int64_t>(sources.back().size());
    if (len == 0)
      throw UsageError("line " + std::to_string(i + 1) + " has no tokens (it is blank)", "remove blank lines from the input");
    if (len > limit.positions)
      throw UsageError("line " + std::to_string(i + 1) + " has " + std::to_string(len) + " tokens; " + limit.why,
                       "split the sentence");
  }
  BeamOptions o = options;
  if (o.max_len <= 0) o.max_len = ex.task_info.max_tgt_len;
  o.max_len = std::min(o.max_len, limit.positions - 1);  // the decoder reads bos + the target
  const auto batch = static_cast<std::size_t>(std::max<std::int64_t>(ex.spec.train.batch_size, 1));
  for (std::size_t first = 0; first < sources.size(); first += batch) {
    const std::size_t last = std::min(sources.size(), first + batch);
    const std::vector<std::vector<std::int32_t>> part(sources.begin() + static_cast<std::ptrdiff_t>(first),
                                                      sources.begin() + static_cast<std::ptrdiff_t>(last));
    std::vector<std::vector<std::int32_t>> decoded;
    if (o.beam == 1) {
      std::vector<Example> examples;
      for (const auto& s : part) examples.push_back({s, {}, {}});
      decoded = ex.model->greedy_decode(*ex.backend, ex.batch(examples), o.max_len);
    } else {
      decoded = beam_search(ex, part, o);
    }
    for (std::size_t j = 0; j < decoded.size(); ++j) out[first + j].text = ex.text(decoded[j], true);
  }
  return out;
}

}  // namespace ablate::train
