// The code identity of a run (code_identity.hpp).
#include "train/code_identity.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/token_shards.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"

namespace ablate::train {

CodeIdentity code_identity(const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  CodeIdentity c;
  c.parts.push_back("ablate compute " + std::to_string(kComputeVersion));
  for (const spec::PluginSlot& slot : spec::plugin_slots()) {
    if (slot.optional && spec::plugin_at(spec, slot.path).name.empty()) continue;
    const PluginDescriptor& d = registry.find(slot.kind, spec::plugin_at(spec, slot.path).name);
    c.parts.push_back(d.id() + " " + d.version + " " + d.code_hash);
  }
  std::uint64_t h = kFnv1a64Basis;
  for (const std::string& p : c.parts) h = fnv1a64(p.data(), p.size() + 1, h);  // with the terminator: parts stay apart
  c.id = hex16(h);
  return c;
}

std::string code_difference(const std::vector<std::string>& recorded, const std::vector<std::string>& now) {
  if (recorded.empty()) return "unknown (the run file predates code identities)";
  std::vector<std::string> out;
  for (const std::string& part : now) {
    if (std::find(recorded.begin(), recorded.end(), part) != recorded.end()) continue;
    const std::string who = part.substr(0, part.find(' '));  // "ffn/swiglu", or "ablate"
    const auto was =
        std::find_if(recorded.begin(), recorded.end(), [&](const std::string& r) { return r.starts_with(who + " "); });
    out.push_back(part + (was != recorded.end() ? " (was " + was->substr(who.size() + 1) + ")" : " (new)"));
  }
  return out.empty() ? "the same parts in another order" : join(out, ", ");
}

namespace {

constexpr std::uintmax_t kWholeHashBytes = std::uintmax_t{64} << 20;

// A file's content hash: FNV-1a 64 of every byte up to kWholeHashBytes; past that (token shards of
// a large corpus, read at every start) "sSIZE:" and the hash of 64 blocks of 64 KiB spread evenly
// over the file, the first and the last among them: an edit, a truncation or another file is
// caught, a change of a few bytes between two blocks is not.
std::string content_hash(const std::filesystem::path& file) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec || size <= kWholeHashBytes) return file_fnv1a64(file);
  constexpr std::uintmax_t kBlock = 64 << 10, kBlocks = 64;
  std::ifstream in(file, std::ios::binary);
  std::vector<char> block(kBlock);
  std::uint64_t h = kFnv1a64Basis;
  for (std::uintmax_t i = 0; i < kBlocks; ++i) {
    in.seekg(static_cast<std::streamoff>((size - kBlock) * i / (kBlocks - 1)));  // the last block ends at the end
    in.read(block.data(), kBlock);
    h = fnv1a64(block.data(), static_cast<std::size_t>(in.gcount()), h);
  }
  return "s" + std::to_string(size) + ":" + hex16(h);
}

}  // namespace

std::vector<std::string> data_identity(const spec::ExperimentSpec& spec) {
  std::vector<std::string> out;
  for (const auto& [option, value] : spec.task.options) {
    std::error_code ec;
    if (value.empty()) continue;
    if (std::filesystem::is_regular_file(value, ec)) {
      out.push_back("task." + option + "=" + value + " " + content_hash(value));
    } else if (value.find_first_of("*?[") != std::string::npos) {  // a glob of files (token shards): each one
      std::vector<std::filesystem::path> files;
      try {
        files = shard_glob(value, "task." + option);
      } catch (const Error&) {
        continue;  // matches nothing now: the task says so when it reads it
      }
      for (const std::filesystem::path& f : files) out.push_back("task." + option + "=" + f.string() + " " + content_hash(f));
    }
  }
  return out;
}

std::vector<std::string> check_data_unchanged(const std::vector<std::string>& recorded, const spec::ExperimentSpec& spec,
                                              const std::string& doing, DataUse use,
                                              const std::vector<std::filesystem::path>& kept) {
  std::vector<std::string> warnings;
  if (recorded.empty()) return warnings;
  const std::vector<std::string> now = data_identity(spec);
  for (const std::string& was : recorded) {
    const std::string file = was.substr(0, was.rfind(' '));  // "task.file=PATH"
    const auto same_file = [&](const std::string& n) { return n.substr(0, n.rfind(' ')) == file; };
    const auto it = std::find_if(now.begin(), now.end(), same_file);
    if (it == now.end() || *it == was) continue;  // gone: the task says so when it reads it
    const std::size_t eq = file.find('=');
    const std::string changed = file.substr(0, eq) + " " + file.substr(eq + 1) + " changed since the run read it (content hash " +
                                was.substr(was.rfind(' ') + 1) + " then, " + it->substr(it->rfind(' ') + 1) + " now)";
    if (use == DataUse::Text && !kept.empty()) {
      std::vector<std::string> names;
      for (const std::filesystem::path& k : kept) names.push_back(k.filename().string());
      warnings.push_back(changed + ": text is read with the run's own " + join(names, ", ") +
                         ", not with what the file holds now");
      continue;
    }
    throw UsageError(doing + ": " + changed +
                         (kept.empty() ? ": the task would read other tokens than it trained on (a text file's vocabularies "
                                         "would be rebuilt), and token ids would change meaning"
                                       : ": the run's examples would be read from it, its splits drawn anew from other text "
                                         "(other examples, perhaps some the run trained on)"),
                     "restore the file the run was trained on; to score other text with this run, give it with "
                     "ablate eval --data FILE");
  }
  return warnings;
}

}  // namespace ablate::train
