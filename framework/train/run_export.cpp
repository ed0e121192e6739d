// export_safetensors() (run_export.hpp): the parameters copied to the host and laid out as
// safetensors, with the run's identity, spec and vocabularies in the header's metadata.
#include "train/run_export.hpp"

#include <cstring>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/version.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "train/runner.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

namespace {

// The vocabulary as a JSON array of each id's token; "" when the task has no text.
std::string vocabulary(const Experiment& ex, bool target) {
  static const char* const kReserved[] = {"<pad>", "<bos>", "<eos>"};
  std::vector<std::string> tokens;
  bool any = false;
  for (std::int32_t id = 0; id < ex.task_info.vocab_size; ++id) {
    if (id < 3) {
      tokens.emplace_back(kReserved[id]);
      continue;
    }
    tokens.push_back(ex.text({id}, target));
    any |= !tokens.back().empty();
  }
  if (!any) return {};
  std::string json = "[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) json += ", ";
    json += json_quote(tokens[i]);
  }
  return json + "]";
}

}  // namespace

std::string safetensors_bytes(const std::vector<SafeTensor>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string header = "{", data;
  for (const SafeTensor& t : tensors) {
    const std::size_t begin = data.size();
    data += t.bytes;
    std::string shape = "[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(t.shape[d]);
    header += json_quote(t.name) + ": {\"dtype\": " + json_quote(t.dtype) + ", \"shape\": " + shape + "], \"data_offsets\": [" +
              std::to_string(begin) + ", " + std::to_string(data.size()) + "]}, ";
  }
  header += "\"__metadata__\": {";
  for (std::size_t i = 0; i < metadata.size(); ++i)
    header += (i ? ", " : "") + json_quote(metadata[i].first) + ": " + json_quote(metadata[i].second);
  header += "}}";
  header.append((8 - (8 + header.size()) % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string contents(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) contents[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xffu);
  return contents + header + data;
}

SafeTensor f32_tensor(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian hosts only (x86-64, arm64)
  return {std::move(name), "F32", std::move(shape), std::move(bytes)};
}

ExportResult export_safetensors(TrainedRun& run, const fs::path& file) {
  if (fs::exists(file))
    throw UsageError(file.string() + " already exists", "export never writes over a file: name another with --out");
  Experiment& ex = *run.experiment;
  std::vector<SafeTensor> tensors;
  std::vector<float> host;
  for (Parameter* p : ex.store->all()) {
    const Tensor& v = p->value;  // F32 master weights
    if (v.dtype() != DType::F32) throw Error("export: parameter " + p->name + " is " + v.str() + ", expected f32");
    host.resize(static_cast<std::size_t>(v.numel()));
    ex.backend->copy_to_host(host.data(), v);
    std::vector<std::int64_t> shape;
    for (int d = 0; d < v.shape().rank(); ++d) shape.push_back(v.shape()[d]);
    tensors.push_back(f32_tensor(p->name, shape, host));
  }
  std::vector<std::pair<std::string, std::string>> metadata = {{"format", "pt"},
                                                               {"ablate_version", ABLATE_VERSION},
                                                               {"run_id", run.run_id},
                                                               {"checkpoint_step", std::to_string(run.step)},
                                                               {"arch", spec::to_string(ex.spec.model.arch)},
                                                               {"spec", spec::resolved_yaml(ex.spec)}};
  const std::string src = ex.task_info.type == TaskType::LanguageModel ? std::string() : vocabulary(ex, false);
  const std::string tgt = vocabulary(ex, true);
  if (!src.empty()) metadata.emplace_back("src_vocab", src);
  if (!tgt.empty()) metadata.emplace_back("tgt_vocab", tgt);
  const std::string contents = safetensors_bytes(tensors, metadata);
  write_file_atomically(file, contents);
  return {file, static_cast<std::int64_t>(tensors.size()), contents.size()};
}

}  // namespace ablate::train
