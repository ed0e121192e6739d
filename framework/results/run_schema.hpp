// The run file as stored (docs/results-format.md), shared by RunWriter and RunReader: the object
// paths, the appended tables and their datasets, reading identity/state/layout back from a file,
// counting the rows of a table consistently, and the lock that keeps one writer per file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "results/hdf5_util.hpp"
#include "results/run_file.hpp"

namespace ablate::results::schema {

inline constexpr const char* kTrain = "/metrics/train";
inline constexpr const char* kEval = "/metrics/eval";
inline constexpr const char* kAttention = "/attention";
inline constexpr const char* kProbe = "/attention/probe";
inline constexpr const char* kDecode = "/attention/decode";
inline constexpr const char* kStats = "/stats";
inline constexpr const char* kEntropy = "/stats/attention_entropy";
inline constexpr const char* kSamples = "/samples";
inline constexpr const char* kResumes = "/resumes";
inline constexpr const char* kEvals = "/evals";

// How a column's elements are stored.
enum class Elem { F64, F32, I32, Text };

// One appended dataset: [rows, row...], chunked `chunk_rows` rows at a time.
struct ColumnDef {
  std::string path;
  Elem elem = Elem::F32;
  std::vector<hsize_t> row;  // the shape of one row
  hsize_t chunk_rows = 1;
  bool compress = false;       // shuffle + deflate
  std::size_t text_bytes = 0;  // Elem::Text: fixed length of each string
  std::size_t row_elems() const;
};

// Datasets appended together, one row per append; `steps` (int64) is written last.
struct TableDef {
  std::string what;   // for messages: "train metrics", "attention logs", ...
  std::string steps;  // the step dataset's path
  std::vector<ColumnDef> columns;
};

// The tables of a run, always in this order (some may have no columns).
enum TableIndex : std::size_t { kTrainTable = 0, kEvalTable, kAttentionTable, kStatsTable, kSamplesTable, kTableCount };
std::vector<TableDef> tables(const RunLayout& layout);

// The root group of an open file; a dataset by its absolute path.
h5::Obj open_root(const h5::Obj& file);
h5::Obj open_path(const h5::Obj& root, const std::string& path);

// Checks the root's `format` attribute; returns `format_version` (throws for a newer one).
std::int64_t check_format(const h5::Obj& root);
RunInfo read_info(const h5::Obj& root);
RunState read_state(const h5::Obj& root);
void write_state(const h5::Obj& root, const RunState& state);  // in place: SWMR-safe
RunLayout read_layout(const h5::Obj& root);
// The first difference between two layouts, in words; "" when equal.
std::string layout_difference(const RunLayout& in_file, const RunLayout& expected);

// The datasets of /evals (RunWriter::record_evaluation, RunReader::evaluations): the step first.
struct EvalDatasets {
  h5::Obj checkpoint_step, name, scores, time;
  std::vector<const h5::Obj*> all() const { return {&checkpoint_step, &name, &scores, &time}; }
};
EvalDatasets open_evals(const h5::Obj& root);

// The rows of a table a reader may trust: the shortest of its datasets, cut before the first
// step that is unwritten (negative, the fill value) or, when `increasing`, not after the one
// before it, and, with `max_step`, before the first step past it. `datasets`: the steps dataset
// first. Records of events (/resumes, /evals) are not increasing: two may name one step.
struct TableRows {
  hsize_t rows = 0;    // consistent rows: present in every dataset, steps >= 0 and increasing
  hsize_t stored = 0;  // rows present in every dataset (stored - rows: left out, e.g. a torn write)
  std::vector<std::int64_t> steps;
};
TableRows consistent_rows(const std::vector<const h5::Obj*>& datasets, bool refresh, std::optional<std::int64_t> max_step = {},
                          bool increasing = true);

// One writer per file: an open-file-description lock on one byte far past the file's data (HDF5
// itself uses flock(), which is independent). Held while the RunWriter lives; closes its fd.
class WriterLock {
 public:
  // Throws ablate::Error when another writer holds `file`.
  explicit WriterLock(const std::filesystem::path& file);
  WriterLock(WriterLock&& o) noexcept;
  WriterLock& operator=(WriterLock&& o) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};
bool writer_lock_held(const std::filesystem::path& file);

}  // namespace ablate::results::schema
