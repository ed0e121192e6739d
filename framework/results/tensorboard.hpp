// TensorBoard event files beside run.h5 (log.tensorboard, `ablate export --format tensorboard`):
// the record format (length, masked CRC-32C, an Event protobuf) written without a protobuf
// library, and what a run's rows become there. run.h5 stays the source of truth.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/run_file.hpp"

namespace ablate::results {

// CRC-32C (Castagnoli), and TFRecord's mask of it.
std::uint32_t crc32c(std::string_view bytes);
std::uint32_t masked_crc32c(std::string_view bytes);

// One events.out.tfevents.* file, records appended as they come (flush() makes them readable to a
// TensorBoard following the file). Each file opens with its file_version event.
class EventFile {
 public:
  // A new file in `dir` (created if missing) to be named events.out.tfevents.SECONDS.HOST.PID,
  // written under a temporary name until publish() (destroyed unpublished, it is removed).
  static EventFile create(const std::filesystem::path& dir);
  // A resumed run continues the newest event file in `dir`, cut before its first record past
  // `step` (or a torn one a killed writer left): as run.h5 drops the rows logged after the
  // checkpoint, so does the event file, and any TensorBoard reader shows each step once. With no
  // event file there (log.tensorboard turned on at the resume), a new one.
  static EventFile resume(const std::filesystem::path& dir, std::int64_t step);
  EventFile(EventFile&&) noexcept;
  EventFile& operator=(EventFile&&) noexcept;
  ~EventFile();

  const std::filesystem::path& path() const { return path_; }
  // `wall_time`: seconds since the epoch (TensorBoard's relative-time axis).
  void scalar(std::int64_t step, const std::string& tag, float value, double wall_time);
  void text(std::int64_t step, const std::string& tag, const std::string& markdown, double wall_time);
  void flush();
  // Flushes and renames a created file to its name; from then on TensorBoard reads it.
  void publish();

 private:
  EventFile(std::filesystem::path path, std::FILE* f, std::filesystem::path partial);
  void record(const std::string& event);
  void close() noexcept;
  std::filesystem::path path_;
  std::filesystem::path partial_;  // the temporary name until publish(); empty after
  std::FILE* file_ = nullptr;
};

double wall_time_now();

// What a run's rows are in TensorBoard; the live run (train/run_recorder) and the export of a
// finished run file call the same functions, so both write the same tags and values.
// train/<metric>, eval/<metric>: one scalar per finite value; a row by its names, or by name.
void tensorboard_metrics(EventFile& f, std::string_view split, const std::vector<std::string>& names, std::int64_t step,
                         std::span<const double> values, double wall_time);
void tensorboard_metrics(EventFile& f, std::string_view split, const std::map<std::string, double>& values, std::int64_t step,
                         double wall_time);
// stats/<table>/<column> and attention_entropy/<stack>.<kind>.layer_<l>/head_<h>.
void tensorboard_stats(EventFile& f, const RunLayout& layout, std::int64_t step, const StatsLog& log, double wall_time);
// samples: a Markdown table of the decoded eval examples.
void tensorboard_samples(EventFile& f, std::int64_t step, const SamplesLog& log, double wall_time);
// spec: the resolved spec, and the run's id and code, as text at step 0.
void tensorboard_spec(EventFile& f, const RunInfo& info, double wall_time);

// `ablate export RUN --format tensorboard`: the whole run file as one event file in `dir`
// (refused when `dir` already holds event files: nothing is ever logged twice). Wall times are
// the run's start plus each row's elapsed_s. Returns the file written.
std::filesystem::path export_tensorboard(const RunReader& run, const std::filesystem::path& dir);

}  // namespace ablate::results
