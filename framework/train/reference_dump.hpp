// The reference dump of `ablate run --dump-reference FILE.h5`: what another implementation of
// the same model (bench/peer_torch.py) needs to retrace a run step by step and compare losses.
// One HDF5 file:
//   @spec            the resolved spec YAML (every default written out)
//   @ignore_index    the target id that counts in no loss (HostBatch::kIgnore)
//   /params/<name>   float32, the parameter's shape: its value before the first update
//   /batches/src, /batches/src_lengths        int32 [steps, B, S_max], [steps, B] (not for a decoder-only model)
//   /batches/tgt_in, /batches/tgt_out         int32 [steps, B, T_max] (HostBatch's layout)
//   /batches/tgt_lengths                      int32 [steps, B]
//   /loss            float32 [steps]: the step's training loss (before its update)
//   /lr              float64 [steps]: the learning rate of the step's update
// S_max and T_max are the task's longest source and target (+ bos/eos): each batch is padded
// to them (kPad in src and tgt_in, the ignore index in tgt_out), so every row has one shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/parameters.hpp"
#include "ablate/task.hpp"

namespace ablate::train {

class ReferenceDump {
 public:
  // Creates `file` (an existing file is an error: nothing is overwritten) and writes the spec
  // and every parameter of `store` as it is now. `source`: the model reads batches' src.
  // `max_src`, `max_tgt`: the padded row widths S_max and T_max; `batch_size`: B.
  ReferenceDump(const std::filesystem::path& file, const std::string& resolved_spec_yaml, ParameterStore& store, bool source,
                std::int64_t batch_size, std::int64_t max_src, std::int64_t max_tgt);
  ~ReferenceDump();
  ReferenceDump(const ReferenceDump&) = delete;
  ReferenceDump& operator=(const ReferenceDump&) = delete;

  // Appends one training step: its batch, loss and learning rate. Throws ablate::Error for a
  // batch wider than S_max / T_max or not of B rows.
  void record(const HostBatch& batch, float loss, double lr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A dump read back (tests, tools): arrays flattened row-major with their dims.
template <class T>
struct DumpArray {
  std::vector<std::int64_t> dims;
  std::vector<T> values;
};
struct ReferenceData {
  std::string spec_yaml;
  std::int32_t ignore_index = 0;
  std::map<std::string, DumpArray<float>> params;
  std::map<std::string, DumpArray<std::int32_t>> batches;  // "src", "tgt_in", ...
  std::vector<float> loss;
  std::vector<double> lr;
};
ReferenceData read_reference_dump(const std::filesystem::path& file);

}  // namespace ablate::train
