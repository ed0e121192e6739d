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

ExportResult export_safetensors(TrainedRun& run, const fs::path& file) {
  if (fs::exists(file))
    throw UsageError(file.string() + " already exists", "export never writes over a file: name another with --out");
  Experiment& ex = *run.experiment;
  std::string header = "{";
  std::vector<float> host;
  std::string data;
  std::int64_t tensors = 0;
  for (Parameter* p : ex.store->all()) {
    const Tensor& v = p->value;  // F32 master weights
    if (v.dtype() != DType::F32) throw Error("export: parameter " + p->name + " is " + v.str() + ", expected f32");
    host.resize(static_cast<std::size_t>(v.numel()));
    ex.backend->copy_to_host(host.data(), v);
    const std::size_t begin = data.size(), bytes = host.size() * sizeof(float);
    data.resize(begin + bytes);
    std::memcpy(data.data() + begin, host.data(), bytes);  // little-endian hosts only (x86-64, arm64)
    std::string shape = "[";
    for (int d = 0; d < v.shape().rank(); ++d) {
      if (d) shape += ", ";
      shape += std::to_string(v.shape()[d]);
    }
    header += json_quote(p->name) + ": {\"dtype\": \"F32\", \"shape\": " + shape + "], \"data_offsets\": [" +
              std::to_string(begin) + ", " + std::to_string(begin + bytes) + "]}, ";
    ++tensors;
  }
  header += "\"__metadata__\": {\"format\": \"pt\", \"ablate_version\": " + json_quote(ABLATE_VERSION) +
            ", \"run_id\": " + json_quote(run.run_id) + ", \"checkpoint_step\": " + json_quote(std::to_string(run.step)) +
            ", \"arch\": " + json_quote(spec::to_string(ex.spec.model.arch)) +
            ", \"spec\": " + json_quote(spec::resolved_yaml(ex.spec));
  const std::string src = ex.task_info.type == TaskType::LanguageModel ? std::string() : vocabulary(ex, false);
  const std::string tgt = vocabulary(ex, true);
  if (!src.empty()) header += ", \"src_vocab\": " + json_quote(src);
  if (!tgt.empty()) header += ", \"tgt_vocab\": " + json_quote(tgt);
  header += "}}";
  header.append((8 - (8 + header.size()) % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string contents(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) contents[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xffu);
  contents += header;
  contents += data;
  write_file_atomically(file, contents);
  return {file, tensors, contents.size()};
}

}  // namespace ablate::train
