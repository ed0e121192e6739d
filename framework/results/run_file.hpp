// The run file: one HDF5 file per training run holding its identity, state, metrics, attention
// logs, per-layer statistics and decoded samples (schema: docs/results-format.md). RunWriter
// records a run live under SWMR (readers follow it; a killed writer leaves a readable file);
// RunReader is what `ablate inspect`, `compare` and `plot` read. h5py reads the same files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/version.hpp"

namespace ablate::results {

inline constexpr const char* kFormatName = "ablate-run";  // root attribute `format`
inline constexpr std::int64_t kFormatVersion = 1;         // root attribute `format_version`
// Sizes of the fixed-length root attributes rewritten while the run goes (SWMR writes cannot
// allocate): `status`, `reason` (longer reasons are cut at a UTF-8 character boundary), `finished`.
inline constexpr std::size_t kStatusBytes = 16;
inline constexpr std::size_t kReasonBytes = 1024;  // older files have 256; readers take either
inline constexpr std::size_t kTimeBytes = 32;
// Sizes of an evaluation record's fixed-length texts (/evals: appended under SWMR, so fixed).
inline constexpr std::size_t kEvalNameBytes = 128;
inline constexpr std::size_t kEvalScoresBytes = 16384;

enum class RunStatus { Running, Completed, Failed, Diverged, Interrupted };
const char* to_string(RunStatus s);
RunStatus parse_run_status(std::string_view text);  // throws ablate::Error listing the allowed values

// Which probe positions an attention tensor's softmax could see.
enum class AttentionMask { None, Causal, KeyPadding, CausalKeyPadding };
const char* to_string(AttentionMask m);  // none | causal | key_padding | causal+key_padding
AttentionMask parse_attention_mask(std::string_view text);

// The current time as ISO-8601 UTC, "2025-01-31T12:00:00Z"; such a text as seconds since the
// epoch (0 when it does not read as one).
std::string utc_now_iso8601();
double iso8601_seconds(const std::string& text);
// This machine's host name ("unknown" when the system does not say).
std::string host_name();

// The run's identity: root attributes written once, when the file is created.
struct RunInfo {
  std::string ablate_version = ABLATE_VERSION;
  std::string git_revision = ABLATE_GIT_REVISION;
  std::string run_id;
  std::string experiment;
  std::string spec_yaml;           // the spec file as the user wrote it
  std::string resolved_spec_yaml;  // every default filled in
  std::int64_t seed = 0;
  std::string backend;
  std::string backend_device;         // BackendCaps::device, e.g. "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3)"
  bool backend_deterministic = true;  // BackendCaps::deterministic: bit-identical reruns
  std::string precision;              // what ran: "f32", or "bf16 (<BackendCaps::bf16_arithmetic>)"; "" in older files
  std::vector<std::string> plugins;   // one per plugin: "kind/name version"
  // The code that made it (train/code_identity.hpp): "ablate compute N", then "kind/name version
  // hash" per plugin; and their hash. Both empty in files written before they existed.
  std::vector<std::string> plugin_code;
  std::string code_id;
  // The data files the run read (train/code_identity.hpp, data_identity): "task.file=PATH
  // <FNV-1a 64 of the content>" each. Empty in files written before it, and for tasks without files.
  std::vector<std::string> data_files;
  // The model's parameters by kind (train/compute.hpp): "total", "non_embedding", then each kind,
  // with their counts side by side. Both empty in files written before they existed.
  std::vector<std::string> parameter_kinds;
  std::vector<std::int64_t> parameter_counts;
  // model.match_parameters: the FFN width chosen and the counts it matched (train/parameter_matching.hpp,
  // ParameterMatch::text); empty without a match (and in older files).
  std::string parameter_match;
  std::string host;
  std::string created;  // ISO-8601 UTC; empty: the time RunWriter::create runs
  bool operator==(const RunInfo&) const = default;
};

// The run's state: root attributes rewritten in place as the run goes.
struct RunState {
  RunStatus status = RunStatus::Running;
  std::string reason;     // why it stopped ("" while running); at most kReasonBytes bytes are kept
  std::int64_t step = 0;  // the last completed training step
  std::string finished;   // ISO-8601 UTC; "" until the run stops
  bool operator==(const RunState&) const = default;
};

// One side of the probe batch (the fixed examples whose attention is logged).
struct ProbeTokens {
  std::int64_t length = 0;            // L: padded length
  std::vector<std::int32_t> ids;      // [E, L] token ids, padded
  std::vector<std::int32_t> lengths;  // [E] valid tokens per example (0..L)
  std::vector<std::string> texts;     // [E] decoded text, "" where the task has none
  bool operator==(const ProbeTokens&) const = default;
};
struct Probe {
  std::int64_t examples = 0;  // E
  ProbeTokens src, tgt;       // a language model has only src (tgt.length == 0)
  bool operator==(const Probe&) const = default;
};

// One logged attention tensor: /attention/<stack>/<kind>/layer_<layer>, [E, H, Q, K] per log.
struct AttentionSlot {
  std::string stack;  // encoder | decoder
  std::string kind;   // self | cross
  std::int64_t layer = 0;
  std::int64_t heads = 0, queries = 0, keys = 0;  // H, Q, K
  AttentionMask mask = AttentionMask::None;
  std::string query_tokens, key_tokens;  // the probe side labelling each axis: src | tgt | ""
  std::string path() const;              // "/attention/encoder/self/layer_0"
  bool operator==(const AttentionSlot&) const = default;
};

// Greedy decoding of the probe (seq2seq), logged with each attention log; layers == 0: none.
struct DecodeLayout {
  std::int64_t layers = 0;  // decoder layers: one cross-attention tensor each
  std::int64_t heads = 0;   // H
  std::int64_t steps = 0;   // T: decode steps logged (outputs shorter than T are padded)
  std::int64_t keys = 0;    // S: source positions (the probe's src length)
  bool operator==(const DecodeLayout&) const = default;
};

// A per-layer statistic: /stats/<name> float32 [n, columns] (residual_norm, grad_norm, ...).
struct StatsTable {
  std::string name;
  std::vector<std::string> columns;  // e.g. layer names "encoder.layer_0"
  bool operator==(const StatsTable&) const = default;
};
// Attention entropy per head: /stats/attention_entropy/<stack>/<kind>/layer_<layer> float32 [n, H].
struct EntropySlot {
  std::string stack, kind;
  std::int64_t layer = 0;
  std::int64_t heads = 0;
  std::string path() const;
  bool operator==(const EntropySlot&) const = default;
};

// Decoded eval examples, one row of `count` per append: /samples/{src,reference,prediction}.
struct SamplesLayout {
  std::int64_t count = 0;         // examples per row; 0: no samples
  std::int64_t text_bytes = 512;  // each text is kept to this many bytes of UTF-8
  bool operator==(const SamplesLayout&) const = default;
};

// Everything a run will append, declared before it starts: under SWMR no dataset or attribute
// can be created once writing has started.
struct RunLayout {
  std::vector<std::string> train_metrics;  // /metrics/train/<name>, in this order
  std::vector<std::string> eval_metrics;   // /metrics/eval/<name>
  Probe probe;
  std::vector<AttentionSlot> attention;
  DecodeLayout decode;
  std::vector<StatsTable> stats;
  std::vector<EntropySlot> entropy;
  SamplesLayout samples;
  bool operator==(const RunLayout&) const = default;
};

// Throws ablate::Error naming the first problem (bad or duplicate names, sizes that disagree).
void validate(const RunLayout& layout);

// One attention log: every declared slot, and the probe's greedy decoding where declared.
struct DecodeLog {
  std::span<const std::int32_t> tokens;       // [E, T] generated ids, padded
  std::span<const std::int32_t> lengths;      // [E] generated tokens per example (0..T)
  std::vector<std::span<const float>> cross;  // per decoder layer: [E, H, T, S]
};
struct AttentionLog {
  std::vector<std::span<const float>> slots;  // in RunLayout::attention order: [E, H, Q, K] each
  DecodeLog decode;                           // required when RunLayout::decode.layers > 0
};
// One statistics row.
struct StatsLog {
  std::vector<std::span<const float>> tables;   // in RunLayout::stats order: [columns] each
  std::vector<std::span<const float>> entropy;  // in RunLayout::entropy order: [H] each
};
// One samples row: RunLayout::samples.count texts each.
struct SamplesLog {
  std::vector<std::string> src, reference, prediction;
};

// One `ablate eval` of the run's checkpoint: /evals, a row per evaluation (docs/results-format.md).
struct EvalRecord {
  std::string name;                  // what was scored, unique in the file: "test", a --data file's stem, ...
  std::int64_t checkpoint_step = 0;  // the training step of the weights scored
  std::string scores;                // the evaluation's scores.json, as written beside it
  std::string time;                  // ISO-8601 UTC; empty: now (record_evaluation)
  bool operator==(const EvalRecord&) const = default;
};

// Writes one run file. Not thread-safe; one writer per file (a second is refused). Within one
// process, HDF5 shares an open file among its handles: open the writer before any RunReader of
// the same file (the other order fails with "file is already open for read-only").
class RunWriter {
 public:
  // Creates `file` with every group, dataset and attribute the layout declares, then starts SWMR
  // writing. Refuses an existing file (results are never overwritten). The file appears complete
  // or not at all: it is built under a temporary name and renamed into place.
  static RunWriter create(const std::filesystem::path& file, const RunInfo& info, const RunLayout& layout);
  // Reopens the file of a stopped or killed run to continue from its checkpoint at `resume_step`:
  // drops every appended row logged after it, sets the state back to running and records the
  // resume (/resumes), all in SWMR mode (readers may stay open). With `expected`, first refuses
  // (changing nothing) a file whose layout differs. Refused while another writer holds the file.
  static RunWriter resume(const std::filesystem::path& file, std::int64_t resume_step, const RunLayout* expected = nullptr);
  // Records the end of a run whose writer died without recording it (`ablate sweep` marks a crashed
  // run failed): drops torn rows, rewrites the state, closes. Refused while a writer holds the file.
  static void record_end(const std::filesystem::path& file, const RunState& state);
  // Appends an evaluation to /evals of a stopped run's file, in SWMR mode (readers may stay open;
  // the training record is not touched). Refused, changing nothing, while a writer holds the file,
  // when /evals already has `record.name`, when a text is longer than its fixed size, and for a
  // file written before /evals existed.
  static void record_evaluation(const std::filesystem::path& file, const EvalRecord& record);

  RunWriter(RunWriter&&) noexcept;
  RunWriter& operator=(RunWriter&&) noexcept;
  ~RunWriter();  // closes (errors are swallowed: call close() to see them)

  const std::filesystem::path& path() const;
  const RunLayout& layout() const;

  // A row of metrics at `step` (steps increase strictly within each table). `values` in the
  // declared order; or by name: unknown names are refused, declared names left out are NaN.
  void append_train(std::int64_t step, std::span<const double> values);
  void append_train(std::int64_t step, const std::map<std::string, double>& values);
  void append_eval(std::int64_t step, std::span<const double> values);
  void append_eval(std::int64_t step, const std::map<std::string, double>& values);
  // One attention log (and decode log) at `step`; every buffer's size is checked first.
  void append_attention(std::int64_t step, const AttentionLog& log);
  void append_stats(std::int64_t step, const StatsLog& log);
  void append_samples(std::int64_t step, const SamplesLog& log);

  // Rewrites the state attributes in place (visible to readers after the next flush).
  void set_state(const RunState& state);
  // Writes everything appended so far to the file and to disk (H5Fflush + fsync): a crash
  // loses at most what came after the last flush.
  void flush();
  // Flushes and closes (closing again does nothing); anything else afterwards throws.
  void close();

  struct Impl;

 private:
  explicit RunWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A float tensor read back: row-major values of `shape`.
struct FloatTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

enum class MetricSplit { Train, Eval };

// One metrics table: `steps` and a column per name, all of the same length.
struct MetricTable {
  std::vector<std::string> names;
  std::vector<std::int64_t> steps;
  // Rows stored in the file; more than steps.size() when rows after the consistent ones are left
  // out (a live writer's row in progress, or steps that do not increase: a damaged file).
  std::size_t stored_rows = 0;
  std::vector<std::vector<double>> columns;                        // [names][rows]
  const std::vector<double>& column(std::string_view name) const;  // throws naming the known names
  const std::vector<double>* find(std::string_view name) const;    // nullptr for a metric not recorded
};

struct DecodeRecord {
  std::vector<std::int32_t> tokens;   // [E, T]
  std::vector<std::int32_t> lengths;  // [E]
  std::vector<FloatTensor> cross;     // per decoder layer: [E, H, T, S]
};

// One RunWriter::resume: the checkpoint step it continued from, and when.
struct ResumeRecord {
  std::int64_t step = 0;
  std::string time;  // ISO-8601 UTC
  bool operator==(const ResumeRecord&) const = default;
};

struct SamplesRecord {
  std::int64_t step = 0;
  std::vector<std::string> src, reference, prediction;
};

// Reads a run file, finished, live (written now) or left by a killed writer: it always opens
// read-only in SWMR mode, and every call reads the file's current contents (rows appended since
// the last call included). Rows are counted consistently per table: a row is visible once its
// step and all its datasets are.
// Has a forked child read each of `files` whole, so that RunReader refuses one that would crash
// the HDF5 library (see RunReader). Pass every file at once where they are known together
// (compare, plot, a sweep's status): one child reads them all, a new one only after a crash.
void vet_run_files(const std::vector<std::filesystem::path>& files);

class RunReader {
 public:
  // Opens `file` after a forked child has read it whole (attributes, tables): a file so damaged
  // that it crashes the HDF5 library is refused with an ablate::Error ("... is damaged: reading
  // it crashed the HDF5 library"), never a crash of this process. Checked once per file version.
  explicit RunReader(const std::filesystem::path& file);
  // kUnvetted: without that check (the child's own read).
  enum Vetting { kVetted, kUnvetted };
  RunReader(const std::filesystem::path& file, Vetting vetting);
  RunReader(RunReader&&) noexcept;
  RunReader& operator=(RunReader&&) noexcept;
  ~RunReader();

  const std::filesystem::path& path() const;
  std::int64_t format_version() const;
  const RunInfo& info() const;                  // read once, at open
  const RunLayout& layout() const;              // read once, at open
  RunState state() const;                       // current
  std::vector<ResumeRecord> resumes() const;    // every resume of this run, in order
  std::vector<EvalRecord> evaluations() const;  // every `ablate eval` recorded, in order (none in older files)
  bool records_evaluations() const;             // whether the file has /evals (files written before it existed do not)
  // Whether a live RunWriter holds the file now (status "running" without one: the writer died).
  bool writer_alive() const;

  MetricTable metrics(MetricSplit split) const;

  std::vector<std::int64_t> attention_steps() const;
  std::size_t attention_slot(std::string_view stack, std::string_view kind,
                             std::int64_t layer) const;            // index in layout().attention
  FloatTensor attention(std::size_t slot, std::size_t log) const;  // [E, H, Q, K]
  DecodeRecord decode(std::size_t log) const;

  std::vector<std::int64_t> stats_steps() const;
  FloatTensor stats(std::string_view name) const;  // [rows, columns]
  std::size_t entropy_slot(std::string_view stack, std::string_view kind, std::int64_t layer) const;
  FloatTensor entropy(std::size_t slot) const;  // [rows, H]

  std::vector<std::int64_t> sample_steps() const;
  SamplesRecord samples(std::size_t row) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ablate::results
