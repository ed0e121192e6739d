// Training checkpoints (framework/train/checkpoint.hpp): the checksummed binary format, the
// atomic write (temporary file, fsync, rename) and the load that checks the whole file against
// the store before it overwrites anything.
#include "train/checkpoint.hpp"

#include "core/text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "ablate/error.hpp"

namespace ablate::train {

static_assert(std::endian::native == std::endian::little, "checkpoints are written as native little-endian bytes");
static_assert(sizeof(float) == 4 && sizeof(double) == 8);

namespace {

constexpr std::uint64_t kHeaderBytes = 24;  // magic, version, reserved, payload length
constexpr std::uint64_t kTrailerBytes = 8;  // checksum
constexpr std::uint64_t kStateBytes = 5 * 8 + 1 + 3 * 8 + 5 * 8;
constexpr std::uint64_t kStateBytesV1 = kStateBytes - 8;  // without flops_seen
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr std::size_t kListedNames = 5;  // names listed per kind of mismatch before "and N more"

const char* const kCorruptHint =
    "the file was damaged after it was written (disk fault, interrupted copy or transfer); resume from "
    "another checkpoint or start the run afresh";
const char* const kMalformedHint = "the file was not written by a compatible version of Ablate";
const char* const kMismatchHint =
    "a checkpoint loads only into the model it was saved from: check that the spec (model sizes, "
    "components, shared weights) is the one of the run that wrote it";

std::string errno_text(int e) { return std::generic_category().message(e); }

std::string hex(std::uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// An owned file descriptor (closed on scope exit).
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now: 0, or the errno of a failed close (where deferred write errors surface).
  int close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// How many state tensors follow a parameter's value: 0, 1 (m) or 2 (m and v).
int state_count(const Parameter& p) { return p.m.defined() ? (p.v.defined() ? 2 : 1) : 0; }
// The moments flag byte for a count of state tensors, and the count for a flag (checkpoint.hpp:
// flag 1 is m and v, flag 2 m alone): the map swaps 1 and 2, so it is its own inverse.
int flag_or_count(int n) { return n == 2 ? 1 : n == 1 ? 2 : n; }

// ---------------------------------------------------------------------------------------------
// Writing

// The temporary file beside the checkpoint while it is written; removed unless committed.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
      path_ = target;
      path_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        fd_ = std::make_unique<Fd>(fd);
        return;
      }
      const int e = errno;
      if (e == EEXIST && attempt < 100) continue;  // a leftover of a crashed run with our pid
      throw Error("cannot write checkpoint " + target.string() + ": cannot create the temporary file " + path_.string() + ": " +
                      errno_text(e),
                  "check that the directory " + directory().string() + " exists and is writable");
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (committed_) return;
    fd_.reset();
    ::unlink(path_.c_str());
  }

  int fd() const { return fd_->get(); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path directory() const {
    const auto dir = target_.parent_path();
    return dir.empty() ? std::filesystem::path(".") : dir;
  }

  [[noreturn]] void fail(const std::string& doing, int e) const {
    throw Error("cannot write checkpoint " + target_.string() + ": " + doing + " " + path_.string() + " failed: " + errno_text(e),
                "check free space, quotas and permissions on the file system of " + directory().string() +
                    "; the previous checkpoint, if any, is unchanged");
  }

  // fsync, close and rename over the target; then fsync the directory (best effort: the
  // rename is already atomic, this only makes it durable sooner).
  void commit() {
    if (::fsync(fd()) != 0) fail("syncing", errno);
    if (const int e = fd_->close(); e != 0) fail("closing", e);
    if (::rename(path_.c_str(), target_.c_str()) != 0) {
      const int e = errno;
      throw Error(
          "cannot write checkpoint " + target_.string() + ": renaming " + path_.string() + " over it failed: " + errno_text(e),
          "check that " + target_.string() + " is not a directory and that " + directory().string() + " is writable");
    }
    committed_ = true;
    Fd dir(::open(directory().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.valid()) ::fsync(dir.get());
  }

 private:
  std::filesystem::path target_, path_;
  std::unique_ptr<Fd> fd_;
  bool committed_ = false;
};

// Buffered writes to the temporary file; payload bytes also go through the checksum.
class Writer {
 public:
  explicit Writer(TempFile& out) : out_(out) { buffer_.reserve(kChunkBytes); }

  void raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    if (buffer_.size() + n > kChunkBytes) flush();
    if (n >= kChunkBytes) {
      write_all(p, n);
    } else {
      buffer_.insert(buffer_.end(), p, p + n);
    }
  }
  void payload(const void* data, std::size_t n) {
    hash_ = fnv1a64(data, n, hash_);
    raw(data, n);
  }
  template <class T>
  void value(T v) {
    payload(&v, sizeof v);
  }
  std::uint64_t hash() const { return hash_; }

  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  void write_all(const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(out_.fd(), p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        out_.fail("writing", errno);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  TempFile& out_;
  std::vector<char> buffer_;
  std::uint64_t hash_ = kFnv1a64Basis;
};

void check_saveable(const std::filesystem::path& file, const Parameter& p) {
  auto bad = [&](const std::string& what) {
    throw Error("cannot write checkpoint " + file.string() + ": parameter '" + p.name + "' " + what,
                "this is a bug in the optimizer or the model that built the store");
  };
  if (p.value.dtype() != DType::F32) bad("has a " + std::string(dtype_name(p.value.dtype())) + " master value");
  if (p.v.defined() && !p.m.defined()) bad("has the optimizer state v without m");
  for (const Tensor* t : {&p.m, &p.v})
    if (t->defined() && (t->shape() != p.value.shape() || t->dtype() != DType::F32))
      bad("has optimizer state " + t->str() + " that does not match its value " + p.value.str());
}

// ---------------------------------------------------------------------------------------------
// Reading

// One parameter's record as found in the file.
struct Record {
  std::string name;
  Shape shape;
  int states = 0;                 // optimizer state tensors after the value: 0, 1 (m), 2 (m and v)
  std::uint64_t data_offset = 0;  // file offset of the value (m and v follow when present)
};

// Positioned reads of the open checkpoint, with errors that name it.
class Reader {
 public:
  Reader(int fd, const std::filesystem::path& file) : fd_(fd), file_(file) {}

  [[noreturn]] void fail(const std::string& what, const std::string& hint) const {
    throw Error("checkpoint " + file_.string() + ": " + what, hint);
  }

  void read_at(std::uint64_t offset, void* out, std::size_t n) const {
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0) {
        if (errno == EINTR) continue;
        fail("cannot read: " + errno_text(errno), "check that the file is readable and the disk healthy");
      }
      if (r == 0) fail("is truncated: the file ended while being read (was it changed meanwhile?)", kCorruptHint);
      p += r;
      n -= static_cast<std::size_t>(r);
      offset += static_cast<std::uint64_t>(r);
    }
  }

 private:
  int fd_;
  const std::filesystem::path& file_;
};

// Walks the payload's fields in order, refusing any that runs past its end.
class Cursor {
 public:
  Cursor(const Reader& in, std::uint64_t begin, std::uint64_t end) : in_(in), at_(begin), end_(end) {}

  std::uint64_t offset() const { return at_; }
  std::uint64_t left() const { return end_ - at_; }

  void need(std::uint64_t n, const std::string& what) const {
    if (n > left())
      in_.fail("is malformed: " + what + " at byte " + std::to_string(at_) + " runs past the end of the payload", kMalformedHint);
  }
  template <class T>
  T value(const std::string& what) {
    need(sizeof(T), what);
    T v;
    in_.read_at(at_, &v, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string text(std::uint64_t n, const std::string& what) {
    need(n, what);
    std::string s(static_cast<std::size_t>(n), '\0');
    in_.read_at(at_, s.data(), s.size());
    at_ += n;
    return s;
  }
  void skip(std::uint64_t n, const std::string& what) {
    need(n, what);
    at_ += n;
  }

 private:
  const Reader& in_;
  std::uint64_t at_, end_;
};

// "'a', 'b', 'c'" for the first few names, then "and N more".
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < kListedNames; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kListedNames) s += " and " + std::to_string(names.size() - kListedNames) + " more";
  return s;
}

std::string count(std::size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

// Checks magic, version, length and checksum; returns the payload length (and the version).
std::uint64_t check_envelope(const Reader& in, std::uint64_t size, std::uint32_t& version) {
  char header[kHeaderBytes] = {};
  const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(size, kHeaderBytes));
  in.read_at(0, header, have);
  if (std::memcmp(header, kCheckpointMagic, std::min<std::size_t>(have, sizeof kCheckpointMagic)) != 0)
    in.fail("is not an Ablate checkpoint (it does not start with \"ABLATECK\")",
            "pass a checkpoint file written by an Ablate training run");
  if (size < kHeaderBytes + kTrailerBytes)
    in.fail("is truncated: " + std::to_string(size) + " bytes, shorter than the " + std::to_string(kHeaderBytes + kTrailerBytes) +
                " of header and checksum alone",
            kCorruptHint);

  std::uint32_t reserved;
  std::uint64_t payload;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&reserved, header + 12, 4);
  std::memcpy(&payload, header + 16, 8);
  if (version != kCheckpointFormatVersion && version != 1)
    in.fail("has format version " + std::to_string(version) + "; this Ablate reads versions 1 to " +
                std::to_string(kCheckpointFormatVersion),
            "it was written by another version of Ablate: resume with that version, or start the run afresh");
  if (reserved != 0) in.fail("is malformed: reserved header field is " + std::to_string(reserved) + ", not 0", kCorruptHint);
  const std::uint64_t body = size - kHeaderBytes - kTrailerBytes;
  if (payload > body)
    in.fail("is truncated: " + std::to_string(size) + " bytes, but its header announces " + std::to_string(payload) +
                " bytes of payload (" + std::to_string(payload + kHeaderBytes + kTrailerBytes) + " in all)",
            kCorruptHint);
  if (payload < body)
    in.fail("is corrupt: " + count(body - payload, "unexpected byte") + " after its end (" + std::to_string(size) + " bytes, " +
                std::to_string(payload + kHeaderBytes + kTrailerBytes) + " expected)",
            kCorruptHint);

  std::vector<char> chunk(static_cast<std::size_t>(std::min<std::uint64_t>(payload, kChunkBytes)));
  std::uint64_t hash = kFnv1a64Basis;
  for (std::uint64_t at = 0; at < payload;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(payload - at, chunk.size()));
    in.read_at(kHeaderBytes + at, chunk.data(), n);
    hash = fnv1a64(chunk.data(), n, hash);
    at += n;
  }
  std::uint64_t stored;
  in.read_at(kHeaderBytes + payload, &stored, sizeof stored);
  if (stored != hash)
    in.fail("is corrupt: checksum mismatch (stored " + hex(stored) + ", computed " + hex(hash) + ")", kCorruptHint);
  return payload;
}

// Parses the payload's state, spec and parameter records (skipping the float data).
std::vector<Record> parse_payload(const Reader& in, std::uint64_t payload, std::uint32_t version, LoadedCheckpoint& out) {
  Cursor c(in, kHeaderBytes, kHeaderBytes + payload);
  TrainState& s = out.state;
  c.need(version == 1 ? kStateBytesV1 : kStateBytes, "the training state");
  s.step = c.value<std::int64_t>("step");
  s.optimizer_steps = c.value<std::int64_t>("optimizer_steps");
  s.tokens_seen = c.value<std::int64_t>("tokens_seen");
  // version 1 did not count FLOPs: unknown from here on (NaN)
  s.flops_seen = version == 1 ? std::numeric_limits<double>::quiet_NaN() : c.value<double>("flops_seen");
  s.elapsed_seconds = c.value<double>("elapsed_seconds");
  const auto has_best = c.value<std::uint8_t>("has_best");
  if (has_best > 1) in.fail("is malformed: has_best is " + std::to_string(has_best) + ", not 0 or 1", kMalformedHint);
  s.has_best = has_best == 1;
  s.best_metric = c.value<double>("best_metric");
  s.best_step = c.value<std::int64_t>("best_step");
  s.evals_since_best = c.value<std::int64_t>("evals_since_best");
  s.log_loss_sum = c.value<double>("log_loss_sum");
  s.log_rows = c.value<double>("log_rows");
  s.log_correct = c.value<double>("log_correct");
  s.log_grad_norm_sum = c.value<double>("log_grad_norm_sum");
  s.log_steps = c.value<std::int64_t>("log_steps");
  out.spec_yaml = c.text(c.value<std::uint64_t>("spec length"), "the spec");

  const auto n = c.value<std::uint64_t>("parameter count");
  constexpr std::uint64_t kMinRecord = 4 + 4 + 1;
  if (n > c.left() / kMinRecord)
    in.fail(
        "is malformed: " + std::to_string(n) + " parameter records cannot fit in the " + std::to_string(c.left()) + " bytes left",
        kMalformedHint);
  std::vector<Record> records;
  records.reserve(static_cast<std::size_t>(n));
  std::map<std::string, std::size_t> seen;
  for (std::uint64_t i = 0; i < n; ++i) {
    Record r;
    const std::string which = "parameter record " + std::to_string(i);
    r.name = c.text(c.value<std::uint32_t>(which + " name length"), which + " name");
    const std::string what = "parameter '" + r.name + "'";
    if (!seen.emplace(r.name, i).second) in.fail("is malformed: " + what + " appears twice", kMalformedHint);
    const auto rank = c.value<std::uint32_t>(what + " rank");
    if (rank > static_cast<std::uint32_t>(Shape::kMaxRank))
      in.fail("is malformed: " + what + " has rank " + std::to_string(rank) + " (at most 4)", kMalformedHint);
    std::vector<std::int64_t> dims(rank);
    std::uint64_t bytes = 4;  // of one f32 tensor of this shape, guarded against overflow
    for (auto& d : dims) {
      d = c.value<std::int64_t>(what + " dims");
      if (d < 0) in.fail("is malformed: " + what + " has dimension " + std::to_string(d), kMalformedHint);
      if (d != 0 && bytes > c.left() / static_cast<std::uint64_t>(d))
        in.fail("is malformed: " + what + " data runs past the end of the payload", kMalformedHint);
      bytes *= static_cast<std::uint64_t>(d);
    }
    r.shape = Shape(dims);
    const auto moments = c.value<std::uint8_t>(what + " moments flag");
    if (moments > 2)
      in.fail("is malformed: " + what + " has moments flag " + std::to_string(moments) + ", not 0, 1 or 2", kMalformedHint);
    r.states = flag_or_count(moments);
    r.data_offset = c.offset();
    c.skip(bytes, what + " value");
    if (r.states >= 1) c.skip(bytes, what + " optimizer state m");
    if (r.states == 2) c.skip(bytes, what + " optimizer state v");
    records.push_back(std::move(r));
  }
  if (c.left() != 0)
    in.fail("is malformed: " + std::to_string(c.left()) + " bytes after the last parameter record", kMalformedHint);
  return records;
}

// Every store parameter has a record of the same shape and vice versa; else one error naming
// the missing, extra and mis-shaped parameters. Returns the records in store order.
std::vector<const Record*> match_store(const Reader& in, const std::vector<Record>& records, ParameterStore& store) {
  std::map<std::string, const Record*> by_name;
  for (const Record& r : records) by_name[r.name] = &r;
  std::vector<std::string> missing, extra, shapes;
  std::vector<const Record*> matched;
  for (Parameter* p : store.all()) {
    auto it = by_name.find(p->name);
    if (it == by_name.end()) {
      missing.push_back(p->name);
    } else if (it->second->shape != p->value.shape()) {
      shapes.push_back("'" + p->name + "' is " + p->value.shape().str() + " in the model, " + it->second->shape.str() +
                       " in the file");
    }
    matched.push_back(it == by_name.end() ? nullptr : it->second);
  }
  for (const Record& r : records)
    if (!store.contains(r.name)) extra.push_back(r.name);
  if (missing.empty() && extra.empty() && shapes.empty()) return matched;

  std::string msg = "does not match the model";
  const char* sep = ": ";
  if (!missing.empty()) {
    msg += sep + count(missing.size(), "model parameter") + " missing from the file (" + name_list(missing) + ")";
    sep = "; ";
  }
  if (!extra.empty()) {
    msg += sep + count(extra.size(), "parameter") + " in the file but not in the model (" + name_list(extra) + ")";
    sep = "; ";
  }
  if (!shapes.empty()) {
    msg += sep + count(shapes.size(), "shape mismatch") + ": ";
    for (std::size_t i = 0; i < shapes.size() && i < kListedNames; ++i) msg += (i ? ", " : "") + shapes[i];
    if (shapes.size() > kListedNames) msg += " and " + std::to_string(shapes.size() - kListedNames) + " more";
  }
  in.fail(msg, kMismatchHint);
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, ParameterStore& store, const TrainState& state,
                     const std::string& spec_yaml, bool with_moments) {
  if (!file.has_filename())
    throw Error("cannot write checkpoint " + file.string() + ": the path names a directory, not a file",
                "give the checkpoint a file name");
  const std::vector<Parameter*> params = store.all();
  std::uint64_t payload = kStateBytes + 8 + spec_yaml.size() + 8;
  std::int64_t largest = 0;
  for (const Parameter* p : params) {
    check_saveable(file, *p);
    const auto data = static_cast<std::uint64_t>(p->value.bytes()) * (1 + (with_moments ? state_count(*p) : 0));
    payload += 4 + p->name.size() + 4 + 8 * static_cast<std::uint64_t>(p->value.shape().rank()) + 1 + data;
    largest = std::max(largest, p->value.numel());
  }

  TempFile temp(file);
  Writer w(temp);
  w.raw(kCheckpointMagic, sizeof kCheckpointMagic);
  const std::uint32_t version = kCheckpointFormatVersion, reserved = 0;
  w.raw(&version, 4);
  w.raw(&reserved, 4);
  w.raw(&payload, 8);

  w.value(state.step);
  w.value(state.optimizer_steps);
  w.value(state.tokens_seen);
  w.value(state.flops_seen);
  w.value(state.elapsed_seconds);
  w.value(static_cast<std::uint8_t>(state.has_best ? 1 : 0));
  w.value(state.best_metric);
  w.value(state.best_step);
  w.value(state.evals_since_best);
  w.value(state.log_loss_sum);
  w.value(state.log_rows);
  w.value(state.log_correct);
  w.value(state.log_grad_norm_sum);
  w.value(state.log_steps);
  w.value(static_cast<std::uint64_t>(spec_yaml.size()));
  w.payload(spec_yaml.data(), spec_yaml.size());

  Backend& backend = store.backend();
  std::vector<float> host(static_cast<std::size_t>(largest));
  w.value(static_cast<std::uint64_t>(params.size()));
  for (const Parameter* p : params) {
    w.value(static_cast<std::uint32_t>(p->name.size()));
    w.payload(p->name.data(), p->name.size());
    const Shape& shape = p->value.shape();
    w.value(static_cast<std::uint32_t>(shape.rank()));
    for (int d = 0; d < shape.rank(); ++d) w.value(static_cast<std::int64_t>(shape[d]));
    const bool moments = with_moments && state_count(*p) > 0;
    w.value(static_cast<std::uint8_t>(flag_or_count(moments ? state_count(*p) : 0)));
    for (const Tensor* t : {&p->value, &p->m, &p->v}) {
      if (!t->defined() || t->bytes() == 0 || (!moments && t != &p->value)) continue;
      backend.copy_to_host(host.data(), *t);
      w.payload(host.data(), t->bytes());
    }
  }
  const std::uint64_t checksum = w.hash();
  w.raw(&checksum, 8);
  w.flush();
  temp.commit();
}

namespace {

// Opens `file` and checks it whole (envelope, checksum, structure): its state, spec and records.
struct OpenCheckpoint {
  Fd fd;
  LoadedCheckpoint loaded;
  std::vector<Record> records;
};
OpenCheckpoint open_checkpoint(const std::filesystem::path& file) {
  OpenCheckpoint c{Fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC)), {}, {}};
  if (!c.fd.valid()) {
    const int e = errno;
    throw Error("cannot read checkpoint " + file.string() + ": " + errno_text(e),
                e == ENOENT ? "check the path, and that the run which should have written it got that far"
                            : "check that the file is readable by this user");
  }
  const Reader in(c.fd.get(), file);
  struct stat st {};
  if (::fstat(c.fd.get(), &st) != 0) in.fail("cannot stat: " + errno_text(errno), "check that the file is readable");
  if (S_ISDIR(st.st_mode)) in.fail("is a directory, not a checkpoint file", "pass the checkpoint file inside it");
  if (!S_ISREG(st.st_mode)) in.fail("is not a regular file", "pass a checkpoint file written by an Ablate training run");
  std::uint32_t version = 0;
  const std::uint64_t payload = check_envelope(in, static_cast<std::uint64_t>(st.st_size), version);
  c.records = parse_payload(in, payload, version, c.loaded);
  return c;
}

}  // namespace

LoadedCheckpoint read_checkpoint(const std::filesystem::path& file) { return open_checkpoint(file).loaded; }

LoadedCheckpoint load_checkpoint(const std::filesystem::path& file, ParameterStore& store) {
  OpenCheckpoint c = open_checkpoint(file);
  const Reader in(c.fd.get(), file);
  LoadedCheckpoint out = std::move(c.loaded);
  const std::vector<Record>& records = c.records;
  const std::vector<const Record*> matched = match_store(in, records, store);

  // Everything is checked. Moments the file has and the store lacks are allocated before the
  // first write, so from here only an I/O error on this second read can stop us half way.
  Backend& backend = store.backend();
  const std::vector<Parameter*> params = store.all();
  std::vector<std::pair<Tensor, Tensor>> moments(params.size());  // m, v as the file has them: the store's own, or new
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = *params[i];
    const int states = matched[i]->states;
    if (states >= 1) moments[i].first = p.m.defined() ? p.m : backend.empty(p.value.shape(), DType::F32);
    if (states == 2) moments[i].second = p.v.defined() ? p.v : backend.empty(p.value.shape(), DType::F32);
  }
  std::vector<float> host;
  auto load = [&](Tensor& t, std::uint64_t offset) {
    if (t.bytes() == 0) return;
    host.resize(static_cast<std::size_t>(t.numel()));
    in.read_at(offset, host.data(), t.bytes());
    backend.copy_from_host(t, host.data());
  };
  try {
    for (std::size_t i = 0; i < params.size(); ++i) {
      Parameter& p = *params[i];
      const Record& r = *matched[i];
      const std::uint64_t bytes = p.value.bytes();
      load(p.value, r.data_offset);
      if (r.states >= 1) load(moments[i].first, r.data_offset + bytes);
      if (r.states == 2) load(moments[i].second, r.data_offset + 2 * bytes);
      p.m = moments[i].first;  // undefined when the file has none: the optimizer starts afresh
      p.v = moments[i].second;
    }
  } catch (const std::exception& e) {
    throw Error("checkpoint " + file.string() + ": loading failed after validation, the model's parameters are " +
                    "now partly overwritten: " + e.what(),
                "do not train on with this model: rebuild it and load again, or start the run afresh");
  }
  store.refresh_compute();
  return out;
}

LoadedCheckpoint load_average(const std::vector<std::filesystem::path>& files, ParameterStore& store) {
  if (files.empty()) throw Error("load_average: no checkpoints to average");
  std::vector<OpenCheckpoint> open;
  open.reserve(files.size());
  std::vector<std::vector<const Record*>> matched;
  for (const std::filesystem::path& f : files) {
    open.push_back(open_checkpoint(f));
    const Reader in(open.back().fd.get(), f);
    matched.push_back(match_store(in, open.back().records, store));
    if (open.back().loaded.spec_yaml != open.front().loaded.spec_yaml)
      in.fail("holds another spec than " + files.front().string() + ": checkpoints of two runs cannot be averaged",
              "average the checkpoints one run kept (train.keep_checkpoints)");
  }
  Backend& backend = store.backend();
  const std::vector<Parameter*> params = store.all();
  std::vector<float> host;
  std::vector<std::vector<double>> sums(params.size());
  for (std::size_t k = 0; k < files.size(); ++k) {
    const Reader in(open[k].fd.get(), files[k]);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Tensor& t = params[i]->value;
      host.resize(static_cast<std::size_t>(t.numel()));
      if (t.bytes() > 0) in.read_at(matched[k][i]->data_offset, host.data(), t.bytes());
      sums[i].resize(host.size(), 0.0);
      for (std::size_t j = 0; j < host.size(); ++j) sums[i][j] += host[j];
    }
  }
  const double n = static_cast<double>(files.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor& t = params[i]->value;
    host.resize(sums[i].size());
    for (std::size_t j = 0; j < host.size(); ++j) host[j] = static_cast<float>(sums[i][j] / n);
    if (t.bytes() > 0) backend.copy_from_host(t, host.data());
  }
  store.refresh_compute();
  return open.back().loaded;
}

namespace {
constexpr std::size_t kStepDigits = 10;
}  // namespace

std::filesystem::path step_file(const std::filesystem::path& dir, const std::string& prefix, std::int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%0*lld", static_cast<int>(kStepDigits), static_cast<long long>(step));
  return dir / (prefix + "-" + digits + ".bin");
}

std::int64_t step_of(const std::filesystem::path& step_file) {
  const std::string stem = step_file.stem().string();
  return std::stoll(stem.substr(stem.size() - kStepDigits));
}

std::vector<std::filesystem::path> step_files(const std::filesystem::path& dir, const std::string& prefix) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix + "-") && name.ends_with(".bin") && name.size() == prefix.size() + 1 + kStepDigits + 4)
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());  // zero-padded steps: name order is step order
  return files;
}

void keep_newest(const std::filesystem::path& dir, const std::string& prefix, std::int64_t keep) {
  const std::vector<std::filesystem::path> files = step_files(dir, prefix);
  std::error_code ec;
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < files.size(); ++i) std::filesystem::remove(files[i], ec);
}

std::vector<std::filesystem::path> kept_checkpoints(const std::filesystem::path& run_dir) {
  return step_files(run_dir / "checkpoints", "step");
}

namespace {
// run_dir/name, created if missing.
std::filesystem::path run_subdir(const std::filesystem::path& run_dir, const char* name) {
  const std::filesystem::path dir = run_dir / name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message(), "check that the run folder is writable");
  return dir;
}
}  // namespace

void keep_checkpoint(const std::filesystem::path& run_dir, ParameterStore& store, const TrainState& state,
                     const std::string& spec_yaml, std::int64_t keep) {
  const std::filesystem::path dir = run_subdir(run_dir, "checkpoints");
  save_checkpoint(step_file(dir, "step", state.step), store, state, spec_yaml, false);
  keep_newest(dir, "step", keep);
}

namespace {
constexpr const char* kBranchPoints = "branch-points";  // RUN/branch-points/step-STEP.bin
}  // namespace

std::filesystem::path branch_point_file(const std::filesystem::path& run_dir, std::int64_t step) {
  return step_file(run_dir / kBranchPoints, "step", step);
}

std::vector<std::int64_t> branch_point_steps(const std::filesystem::path& run_dir) {
  std::vector<std::int64_t> steps;
  for (const std::filesystem::path& f : step_files(run_dir / kBranchPoints, "step")) steps.push_back(step_of(f));
  return steps;
}

void keep_branch_point(const std::filesystem::path& run_dir, ParameterStore& store, const TrainState& state,
                       const std::string& spec_yaml) {
  run_subdir(run_dir, kBranchPoints);
  save_checkpoint(branch_point_file(run_dir, state.step), store, state, spec_yaml);
}

}  // namespace ablate::train
