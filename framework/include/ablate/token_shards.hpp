// Token shards: a corpus encoded once into binary files of token ids, in llm.c's format so shards
// made by llm.c's or nanoGPT-style scripts and by `ablate tokenize` are interchangeable. A shard
// is a header of 256 little-endian int32 (magic 20240520, version 1 for uint16 tokens or 2 for
// uint32, the token count), then the tokens. docs/data.md describes the files. Public: a task
// plugin reads shards with ShardReader (task/language_model's `shards` option does).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ablate {

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

// One shard opened for reading windows of it, never the whole file: each read() is one pread of
// the window's bytes, so memory does not grow with the corpus (a memory map would: its pages
// count in the process's resident memory as they are touched, and a shard truncated while mapped
// kills the process with SIGBUS instead of an error). Safe to read from several threads.
class ShardReader {
 public:
  // Checks the header (read_shard_header); throws UsageError naming the file.
  explicit ShardReader(std::filesystem::path file);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  const std::filesystem::path& file() const { return file_; }
  std::int64_t tokens() const { return header_.tokens; }
  int version() const { return header_.version; }
  // Tokens [first, first + count) into out: [count]. Throws Error naming the file for a range
  // outside the shard or a short read (the file changed since it was opened).
  void read(std::int64_t first, std::int64_t count, std::int32_t* out) const;

 private:
  std::filesystem::path file_;
  ShardHeader header_;
  int fd_ = -1;
};

// The files a glob pattern (glob(3): *, ?, [..]) matches, sorted by name (shard_000000.bin,
// shard_000001.bin, ... in order), except the tokenizer file `ablate tokenize` writes beside its
// shards (tokenizer-text.bin: DIR/*.bin means the shards). Throws UsageError naming `what` (the
// option, e.g. "task/language_model: shards") when nothing matches.
std::vector<std::filesystem::path> shard_glob(const std::string& pattern, const std::string& what);

}  // namespace ablate
