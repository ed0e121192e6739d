// Token shards: a corpus encoded once into binary files of token ids, in llm.c's format so shards
// made by llm.c's or nanoGPT-style scripts and by `ablate tokenize` are interchangeable. A shard
// is a header of 256 little-endian int32 (magic 20240520, version 1 for uint16 tokens or 2 for
// uint32, the token count), then the tokens. docs/data.md describes the files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ablate::train {

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr std::int32_t kShardHeaderInts = 256;

// Writes one shard token by token (a corpus never held in memory): into FILE.tmp, renamed to FILE
// by finish(), so a shard that exists is whole. uint16 tokens when vocab_size <= 65536, else uint32.
class ShardWriter {
 public:
  // Throws UsageError when `file` exists (a shard is never written over), Error when it cannot be written.
  ShardWriter(std::filesystem::path file, std::int64_t vocab_size);
  ~ShardWriter();  // an unfinished shard's temporary file is removed
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  // Throws Error for an id outside [0, vocab_size), or past 2^31 - 1 tokens (the header's count).
  void add(const std::vector<std::int32_t>& ids);
  void finish();
  std::int64_t tokens() const { return tokens_; }
  int version() const { return wide_ ? 2 : 1; }

 private:
  std::filesystem::path file_, tmp_;
  std::int64_t vocab_size_, tokens_ = 0;
  bool wide_, finished_ = false;
  std::ofstream out_;
};

// A shard's header, checked: throws UsageError naming `file` for a wrong magic or version, or a
// body of another size than the count says (truncated, or trailing bytes).
struct ShardHeader {
  int version = 1;
  std::int64_t tokens = 0;
};
ShardHeader read_shard_header(const std::filesystem::path& file);

}  // namespace ablate::train
