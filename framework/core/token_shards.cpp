// Token shards in llm.c's format (ablate/token_shards.hpp): writing, checking, reading windows.
#include "ablate/token_shards.hpp"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>

#include "ablate/error.hpp"

namespace ablate {
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxShardTokens = std::numeric_limits<std::int32_t>::max();

void put_header(std::ostream& out, int version, std::int64_t tokens) {
  std::array<std::int32_t, kShardHeaderInts> h{};
  h[0] = kShardMagic;
  h[1] = version;
  h[2] = static_cast<std::int32_t>(tokens);
  out.write(reinterpret_cast<const char*>(h.data()), sizeof(h));  // little-endian: the x86-64 and AArch64 hosts
}

}  // namespace

ShardWriter::ShardWriter(fs::path file, std::int64_t vocab_size)
    : file_(std::move(file)), tmp_(file_.string() + ".tmp"), vocab_size_(vocab_size), wide_(vocab_size > 65536) {
  std::error_code ec;
  if (fs::exists(file_, ec))
    throw UsageError(file_.string() + " already exists", "a shard is never written over: choose another --out directory");
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error("cannot write " + tmp_.string(), "check that the --out directory is writable");
  put_header(out_, version(), 0);
}

ShardWriter::~ShardWriter() {
  if (finished_) return;
  out_.close();
  std::error_code ec;
  fs::remove(tmp_, ec);
}

void ShardWriter::add(const std::vector<std::int32_t>& ids) {
  if (tokens_ + static_cast<std::int64_t>(ids.size()) > kMaxShardTokens)
    throw Error(file_.string() + ": more than 2^31 - 1 tokens, the most a shard's header can count",
                "split the input file into parts (e.g. split -l) and tokenize them as several shards");
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocab_size_)
      throw Error("token id " + std::to_string(id) + " is outside the tokenizer's vocabulary of " + std::to_string(vocab_size_),
                  "a defect of the tokenizer plugin");
    if (wide_) {
      const auto v = static_cast<std::uint32_t>(id);
      out_.write(reinterpret_cast<const char*>(&v), sizeof(v));
    } else {
      const auto v = static_cast<std::uint16_t>(id);
      out_.write(reinterpret_cast<const char*>(&v), sizeof(v));
    }
  }
  tokens_ += static_cast<std::int64_t>(ids.size());
}

void ShardWriter::finish() {
  out_.seekp(0);
  put_header(out_, version(), tokens_);
  out_.close();
  if (!out_) throw Error("cannot write " + tmp_.string(), "check the free space of the --out directory");
  fs::rename(tmp_, file_);
  finished_ = true;
}

ShardHeader read_shard_header(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("cannot read shard " + file.string(), "check the path");
  std::array<std::int32_t, kShardHeaderInts> h{};
  in.read(reinterpret_cast<char*>(h.data()), sizeof(h));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(h)) || h[0] != kShardMagic)
    throw UsageError(file.string() + " is not a token shard: its first 4 bytes are not the magic number " +
                         std::to_string(kShardMagic) + " of llm.c's format",
                     "make shards with `ablate tokenize` (docs/data.md)");
  if (h[1] != 1 && h[1] != 2)
    throw UsageError(file.string() + ": shard version " + std::to_string(h[1]) + "; expected 1 (uint16 tokens) or 2 (uint32)",
                     "make shards with `ablate tokenize` (docs/data.md)");
  ShardHeader s{h[1], h[2]};
  std::error_code ec;
  const auto size = static_cast<std::int64_t>(fs::file_size(file, ec));
  const std::int64_t expected = static_cast<std::int64_t>(sizeof(h)) + s.tokens * (s.version == 1 ? 2 : 4);
  if (s.tokens < 0 || size != expected)
    throw UsageError(file.string() + ": the header counts " + std::to_string(s.tokens) + " tokens (" + std::to_string(expected) +
                         " bytes in all), but the file has " + std::to_string(size) + " bytes",
                     "the shard is truncated or damaged: make it again");
  return s;
}

ShardReader::ShardReader(fs::path file) : file_(std::move(file)), header_(read_shard_header(file_)) {
  fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw UsageError("cannot read shard " + file_.string() + ": " + std::strerror(errno), "check the path");
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardReader::read(std::int64_t first, std::int64_t count, std::int32_t* out) const {
  if (first < 0 || count < 0 || first + count > header_.tokens)
    throw Error(file_.string() + ": tokens [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") are outside the shard's " + std::to_string(header_.tokens));
  const std::size_t width = header_.version == 1 ? 2 : 4, bytes = static_cast<std::size_t>(count) * width;
  // The raw tokens land in the second half of `out` (int32 each), then widen front to back: the
  // 2-byte tokens of the upper half never overlap an int32 not yet written.
  auto* raw = reinterpret_cast<char*>(out) + (width == 2 ? bytes : 0);
  const auto offset = static_cast<off_t>(kShardHeaderInts * 4 + first * static_cast<std::int64_t>(width));
  for (std::size_t done = 0; done < bytes;) {
    const ssize_t n = ::pread(fd_, raw + done, bytes - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(file_.string() + ": cannot read tokens [" + std::to_string(first) + ", " + std::to_string(first + count) + ")" +
                      (n < 0 ? std::string(": ") + std::strerror(errno) : std::string(": the file is shorter than when opened")),
                  "the shard changed during the run: make it again and rerun");
    done += static_cast<std::size_t>(n);
  }
  if (width == 2) {
    std::uint16_t v;
    for (std::int64_t i = 0; i < count; ++i) {
      std::memcpy(&v, raw + i * 2, 2);
      out[i] = v;
    }
  } else {
    for (std::int64_t i = 0; i < count; ++i)
      if (out[i] < 0)
        throw Error(file_.string() + ": token " + std::to_string(first + i) + " is id " +
                        std::to_string(static_cast<std::uint32_t>(out[i])) + ", past what an int32 id holds",
                    "the shard is damaged or not of this format: make it again");
  }
}

std::vector<fs::path> shard_glob(const std::string& pattern, const std::string& what) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<fs::path> files;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (fs::path(g.gl_pathv[i]).filename() != "tokenizer-text.bin") files.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw UsageError(what + ": '" + pattern + "' matches no file",
                     "give a path or glob of token shards relative to the current directory (e.g. data/shards/train_*.bin), "
                     "made by `ablate tokenize` (docs/data.md)");
  return files;
}

}  // namespace ablate
