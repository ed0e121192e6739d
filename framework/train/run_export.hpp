// `ablate export`: a trained run's weights as a safetensors file (the format Python's
// `safetensors` and PyTorch read), with the resolved spec and the vocabularies as metadata, so a
// model trained in Ablate can be loaded and studied outside it (docs/examples/load_in_torch.py).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "train/run_eval.hpp"

namespace ablate::train {

struct ExportResult {
  std::filesystem::path file;
  std::int64_t tensors = 0;
  std::uint64_t bytes = 0;  // the file's size
};

// One tensor of a safetensors file: its name, dtype ("F32", "I64"), shape and little-endian bytes.
struct SafeTensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};
// The safetensors layout of `tensors` (in this order) with string `metadata` (JSON-quoted here):
// u64 little-endian header length N, N bytes of JSON (padded with spaces to a multiple of 8),
// then the tensors' bytes back to back.
std::string safetensors_bytes(const std::vector<SafeTensor>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata);
// A float tensor's safetensors entry (F32).
SafeTensor f32_tensor(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values);

// Writes `run`'s parameters (F32 master weights, under their dotted names, in creation order) to
// `file` in the safetensors layout (safetensors_bytes). The header's "__metadata__" holds strings only: format "pt", ablate_version, run_id, checkpoint_step, arch,
// spec (the resolved spec as YAML), and where the task has text, src_vocab / tgt_vocab (JSON
// arrays: the token of each id, "<pad>", "<bos>", "<eos>" for ids 0-2). Refuses an existing
// `file` (UsageError: nothing is written over); written atomically.
ExportResult export_safetensors(TrainedRun& run, const std::filesystem::path& file);

}  // namespace ablate::train
