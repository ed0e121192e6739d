// translate_text() (run_translate.hpp): lines encoded by the task's source side (token ids for a
// task without text), checked against the encoder's positions, decoded in batches, and written
// back as target text (or ids).
#include "train/run_translate.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::train {
namespace {

// Line `number` of a task without text: its content token ids (3 .. vocab_size - 1), space-separated.
std::vector<std::int32_t> read_ids(const std::string& line, std::size_t number, std::int64_t vocab_size) {
  std::vector<std::int32_t> ids;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    std::int64_t id = -1;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || end != word.data() + word.size() || id < 3 || id >= vocab_size)
      throw UsageError("line " + std::to_string(number) + ": '" + word + "' is not a token id of the run's task (3 to " +
                           std::to_string(vocab_size - 1) + ")",
                       "the task has no text (synthetic token ids): give each line as content token ids separated by "
                       "spaces, e.g. '3 4 5'");
    ids.push_back(static_cast<std::int32_t>(id));
  }
  return ids;
}

}  // namespace

std::vector<Translated> translate_text(TrainedRun& run, const std::vector<std::string>& lines, const BeamOptions& options) {
  Experiment& ex = *run.experiment;
  if (ex.model->config().arch != model::Arch::EncoderDecoder)
    throw UsageError(
        std::string("ablate translate needs an encoder-decoder model; this run is ") + spec::to_string(ex.spec.model.arch),
        "a language model continues text: ablate generate RUN_DIR --prompt TEXT");
  const bool ids = !ex.has_text();  // a synthetic task: lines of token ids in, token ids out
  if (lines.empty()) throw UsageError("nothing to translate: the input is empty", "give --input FILE or lines on stdin");
  check_beam_options(options);
  const Experiment::PositionLimit limit = ex.decoding_limit();
  std::vector<std::vector<std::int32_t>> sources;
  std::vector<Translated> out(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    sources.push_back(ids ? read_ids(lines[i], i + 1, ex.task_info.vocab_size) : ex.encode(lines[i], false, &out[i].unknown));
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
    for (std::size_t j = 0; j < decoded.size(); ++j) out[first + j].text = ids ? ids_text(decoded[j]) : ex.text(decoded[j], true);
  }
  return out;
}

}  // namespace ablate::train
