// Training checkpoints: every parameter's F32 master value and optimizer state, the training
// progress and the run's resolved spec, in one checksummed binary file written atomically, so
// a stopped run resumes exactly where it was and a damaged file is refused rather than loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ablate/parameters.hpp"
#include "core/text.hpp"  // fnv1a64: the checksum

namespace ablate::train {

// File layout, format version 2 (version 1, still read, lacks flops_seen). Integers are little-endian, floats raw IEEE-754 (binary32
// tensors, binary64 scalars), so the file is bit-exact and readable without Ablate:
//
//   offset  size  field
//   0       8     magic "ABLATECK"
//   8       4     u32 format version (1)
//   12      4     u32 reserved, 0
//   16      8     u64 payload length P in bytes
//   24      P     payload:
//                   i64 step, i64 optimizer_steps, i64 tokens_seen, f64 flops_seen, f64 elapsed_seconds,
//                   u8 has_best (0 or 1), f64 best_metric, i64 best_step, i64 evals_since_best,
//                   f64 log_loss_sum, f64 log_rows, f64 log_correct, f64 log_grad_norm_sum, i64 log_steps
//                   u64 spec length L, then L bytes: the resolved spec (YAML, no terminator)
//                   u64 parameter count N, then N records in the store's creation order:
//                     u32 name length K, then K bytes of the dotted name
//                     u32 rank R (0-4), then R x i64 dims
//                     u8 moments: 0 = none (saved before the first optimizer step, or a
//                                 rule without state), 1 = the optimizer's m and v follow the
//                                 value (Adam), 2 = m alone follows (Lion, SGD with momentum)
//                     f32[numel] value, then f32[numel] m (1, 2), then f32[numel] v (1)
//   24 + P  8     u64 FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
//                 over the P payload bytes
//
// The file is exactly 32 + P bytes: anything shorter is truncated, anything longer is refused.
inline constexpr char kCheckpointMagic[8] = {'A', 'B', 'L', 'A', 'T', 'E', 'C', 'K'};
inline constexpr std::uint32_t kCheckpointFormatVersion = 2;

// Training progress beside the weights: what a resumed run needs to continue exactly.
struct TrainState {
  std::int64_t step = 0;             // optimizer steps completed (the next step is step + 1)
  std::int64_t optimizer_steps = 0;  // the optimizer's update count (OptimizerDriver::steps_taken())
  std::int64_t tokens_seen = 0;      // target tokens trained on so far
  double flops_seen = 0.0;           // training FLOPs so far (train/compute.hpp); NaN after a version-1 checkpoint
  double elapsed_seconds = 0.0;      // training wall time before this checkpoint
  bool has_best = false;             // early stopping: best eval metric so far
  double best_metric = 0.0;
  std::int64_t best_step = 0;
  std::int64_t evals_since_best = 0;
  // The train log's running sums since its last row (one row per log.every steps), so a run
  // resumed mid-interval writes the same next row as the uninterrupted run.
  double log_loss_sum = 0.0, log_rows = 0.0, log_correct = 0.0, log_grad_norm_sum = 0.0;
  std::int64_t log_steps = 0;
  bool operator==(const TrainState&) const = default;
};

// Writes every parameter's value and (when defined) optimizer state, the state, and `spec_yaml`
// (the run's resolved spec, so a resume can check it continues the same experiment) to `file`
// atomically: written to a temporary file in the same directory ("<name>.tmp.<pid>.<n>"),
// flushed and fsync'ed, then renamed over `file` (and the directory fsync'ed, best effort).
// A crash at any point leaves either the old checkpoint or the new one. Throws ablate::Error
// naming `file` and the OS's reason when it cannot write; the temporary file is then removed
// and an existing `file` is left as it was. Host memory used: one parameter's worth.
// `with_moments` false: the weights alone (moments byte 0 for every parameter), a third of the
// size: what train.keep_checkpoints keeps for averaging.
void save_checkpoint(const std::filesystem::path& file, ParameterStore& store, const TrainState& state,
                     const std::string& spec_yaml, bool with_moments = true);

struct LoadedCheckpoint {
  TrainState state;
  std::string spec_yaml;
};

// Checks `file` whole (as load_checkpoint does) and returns its state and spec, loading no
// parameters: what a resume compares with the spec and the run file before touching anything.
LoadedCheckpoint read_checkpoint(const std::filesystem::path& file);

// Reads `file` into an already-built `store` (the same model: same parameter names and shapes)
// and returns the state. Every value, and moment, is restored bit for bit; moments absent in the
// file are left undefined (a checkpoint taken before the first step), so the optimizer starts
// them afresh. Compute copies are refreshed. The whole file is checked first (magic, version,
// length, checksum, structure, names and shapes against the store): on any problem it throws
// ablate::Error naming `file`, and the store is untouched. Host memory used: one parameter's
// worth (the file is read twice: once for the checksum, once for the data).
LoadedCheckpoint load_checkpoint(const std::filesystem::path& file, ParameterStore& store);

// Sets every parameter of `store` to the element-wise mean of its values in `files` (accumulated
// in double, rounded once to float): checkpoint averaging (Vaswani et al. 2017, sec. 6.1). Every
// file is checked whole against the store first (as load_checkpoint does) and must hold the same
// spec as the first; then the store's values are replaced (moments untouched). Returns the last
// file's state and spec. Throws ablate::Error naming the file. Host memory: two copies of the
// parameters (the sums, in double).
LoadedCheckpoint load_average(const std::vector<std::filesystem::path>& files, ParameterStore& store);

// A run's files named PREFIX-STEP.bin, STEP zero-padded to 10 digits so that name order is step
// order: the kept checkpoints (RUN/checkpoints/step-STEP.bin) and the weight average (RUN/ema-STEP.bin).
std::filesystem::path step_file(const std::filesystem::path& dir, const std::string& prefix, std::int64_t step);
// The STEP of such a file's name.
std::int64_t step_of(const std::filesystem::path& step_file);
// The PREFIX-STEP.bin files of `dir`, by step, oldest first (none when `dir` does not exist).
std::vector<std::filesystem::path> step_files(const std::filesystem::path& dir, const std::string& prefix);
// Removes all but the newest `keep` of them.
void keep_newest(const std::filesystem::path& dir, const std::string& prefix, std::int64_t keep);

// The weights-only checkpoints train.keep_checkpoints keeps in a run folder
// (RUN/checkpoints/step-STEP.bin), by step, oldest first.
std::vector<std::filesystem::path> kept_checkpoints(const std::filesystem::path& run_dir);
// Writes `store`'s weights as RUN/checkpoints/step-STEP.bin and removes all but the newest `keep`.
void keep_checkpoint(const std::filesystem::path& run_dir, ParameterStore& store, const TrainState& state,
                     const std::string& spec_yaml, std::int64_t keep);

// The whole training states train.branch_points keeps (RUN/branch-points/step-STEP.bin: the
// checkpoint format with the optimizer's state), where train.branch_from starts another run.
std::filesystem::path branch_point_file(const std::filesystem::path& run_dir, std::int64_t step);
// The steps of those a run keeps, ascending.
std::vector<std::int64_t> branch_point_steps(const std::filesystem::path& run_dir);
// Writes `store` with its optimizer state as RUN/branch-points/step-STEP.bin (STEP = state.step).
void keep_branch_point(const std::filesystem::path& run_dir, ParameterStore& store, const TrainState& state,
                       const std::string& spec_yaml);

}  // namespace ablate::train
