// The run file as stored (run_schema.hpp): table definitions, reading the identity, state and
// layout back, consistent row counts, and the one-writer lock.
#include "results/run_schema.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "ablate/error.hpp"

namespace ablate::results::schema {
namespace {

constexpr const char* kNotOurs = "the file does not follow docs/results-format.md (or is not an Ablate run file)";
// The writer lock's byte: far past anything HDF5 writes (files stay far below 2^62 bytes).
constexpr off_t kLockOffset = off_t{1} << 62;

hsize_t h(std::int64_t v) { return static_cast<hsize_t>(v); }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

std::vector<std::int32_t> read_i32(const h5::Obj& ds) {
  const std::vector<hsize_t> d = h5::dims(ds);
  hsize_t n = 1;
  for (hsize_t x : d) n *= x;
  std::vector<std::int32_t> out(n);
  if (!d.empty() && n > 0) h5::read_rows(ds, 0, d[0], H5T_NATIVE_INT32, out.data());
  return out;
}

ProbeTokens read_probe_side(const h5::Obj& probe, const std::string& side) {
  ProbeTokens t;
  const h5::Obj ids = h5::open_dataset(probe, side);
  const std::vector<hsize_t> d = h5::dims(ids);
  if (d.size() != 2) throw Error(ids.path + " in " + ids.file + " is not [example, position]", kNotOurs);
  t.length = static_cast<std::int64_t>(d[1]);
  t.ids = read_i32(ids);
  t.lengths = read_i32(h5::open_dataset(probe, side + "_lengths"));
  const h5::Obj text = h5::open_dataset(probe, side + "_text");
  const std::vector<hsize_t> td = h5::dims(text);
  t.texts = h5::read_string_rows(text, 0, td.empty() ? 0 : td[0]);
  return t;
}

// Shape [rows, expected...] of a dataset, checked against its rank.
std::vector<hsize_t> shape_of(const h5::Obj& ds, std::size_t rank) {
  std::vector<hsize_t> d = h5::dims(ds);
  if (d.size() != rank)
    throw Error(ds.path + " in " + ds.file + " has rank " + std::to_string(d.size()) + ", expected " + std::to_string(rank),
                kNotOurs);
  return d;
}

std::string slot_text(const AttentionSlot& s) {
  return s.path() + " [H=" + std::to_string(s.heads) + ", Q=" + std::to_string(s.queries) + ", K=" + std::to_string(s.keys) +
         "] mask " + to_string(s.mask) + " query_tokens '" + s.query_tokens + "' key_tokens '" + s.key_tokens + "'";
}

}  // namespace

std::size_t ColumnDef::row_elems() const {
  std::size_t n = 1;
  for (hsize_t x : row) n *= static_cast<std::size_t>(x);
  return n;
}

std::vector<TableDef> tables(const RunLayout& l) {
  std::vector<TableDef> t(kTableCount);
  t[kTrainTable] = {"train metrics", std::string(kTrain) + "/step", {}};
  for (const std::string& n : l.train_metrics)
    t[kTrainTable].columns.push_back({std::string(kTrain) + "/" + n, Elem::F64, {}, 512});
  t[kEvalTable] = {"eval metrics", std::string(kEval) + "/step", {}};
  for (const std::string& n : l.eval_metrics) t[kEvalTable].columns.push_back({std::string(kEval) + "/" + n, Elem::F64, {}, 512});

  const hsize_t e = h(l.probe.examples);
  t[kAttentionTable] = {"attention logs", std::string(kAttention) + "/steps", {}};
  for (const AttentionSlot& s : l.attention)
    t[kAttentionTable].columns.push_back({s.path(), Elem::F32, {e, h(s.heads), h(s.queries), h(s.keys)}, 1, true});
  if (l.decode.layers > 0) {
    const DecodeLayout& d = l.decode;
    auto& c = t[kAttentionTable].columns;
    c.push_back({std::string(kDecode) + "/tokens", Elem::I32, {e, h(d.steps)}, 64});
    c.push_back({std::string(kDecode) + "/lengths", Elem::I32, {e}, 64});
    for (std::int64_t i = 0; i < d.layers; ++i)
      c.push_back({std::string(kDecode) + "/cross/layer_" + std::to_string(i),
                   Elem::F32,
                   {e, h(d.heads), h(d.steps), h(d.keys)},
                   1,
                   true});
  }

  t[kStatsTable] = {"statistics", std::string(kStats) + "/steps", {}};
  for (const StatsTable& s : l.stats)
    t[kStatsTable].columns.push_back({std::string(kStats) + "/" + s.name, Elem::F32, {s.columns.size()}, 256});
  for (const EntropySlot& s : l.entropy) t[kStatsTable].columns.push_back({s.path(), Elem::F32, {h(s.heads)}, 256});

  t[kSamplesTable] = {"samples", std::string(kSamples) + "/steps", {}};
  if (l.samples.count > 0)
    for (const char* n : {"src", "reference", "prediction"})
      t[kSamplesTable].columns.push_back({std::string(kSamples) + "/" + n,
                                          Elem::Text,
                                          {h(l.samples.count)},
                                          1,
                                          true,
                                          static_cast<std::size_t>(l.samples.text_bytes)});
  return t;
}

EvalDatasets open_evals(const h5::Obj& root) {
  const std::string base = kEvals;
  return {open_path(root, base + "/checkpoint_step"), open_path(root, base + "/name"), open_path(root, base + "/scores"),
          open_path(root, base + "/time")};
}

h5::Obj open_root(const h5::Obj& file) {
  h5::Handle g(H5Gopen2(file.id(), "/", H5P_DEFAULT), H5Gclose);
  if (!g) h5::fail(file.file, "/", "open group");
  return h5::Obj{std::move(g), file.file, "/"};
}

h5::Obj open_path(const h5::Obj& root, const std::string& path) {
  // Walk the components so that a missing group is reported as such.
  std::string at;
  std::size_t start = 1;
  while (true) {
    const std::size_t slash = path.find('/', start);
    at = path.substr(0, slash);
    const htri_t r = H5Lexists(root.id(), at.c_str(), H5P_DEFAULT);
    if (r < 0) h5::fail(root.file, at, "look up");
    if (r == 0) throw Error(root.file + " has no " + at, kNotOurs);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  h5::Handle d(H5Dopen2(root.id(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d) h5::fail(root.file, path, "open dataset");
  return h5::Obj{std::move(d), root.file, path};
}

std::int64_t check_format(const h5::Obj& root) {
  if (!h5::has_attr(root, "format") || h5::string_attr(root, "format") != kFormatName)
    throw Error(root.file + " is not an Ablate run file (no root attribute format=\"" + std::string(kFormatName) + "\")",
                "pass the run.h5 of a run directory, e.g. results/<experiment>/<run id>/run.h5");
  const std::int64_t version = h5::int_attr(root, "format_version");
  if (version > kFormatVersion || version < 1)
    throw Error(root.file + " has run-file format version " + std::to_string(version) + "; this Ablate reads version " +
                    std::to_string(kFormatVersion),
                version > kFormatVersion ? "it was written by a newer Ablate: upgrade to read it" : std::string(kNotOurs));
  return version;
}

RunInfo read_info(const h5::Obj& r) {
  RunInfo i;
  i.ablate_version = h5::string_attr(r, "ablate_version");
  i.git_revision = h5::string_attr(r, "git_revision");
  i.run_id = h5::string_attr(r, "run_id");
  i.experiment = h5::string_attr(r, "experiment");
  i.spec_yaml = h5::string_attr(r, "spec_yaml");
  i.resolved_spec_yaml = h5::string_attr(r, "resolved_spec_yaml");
  i.seed = h5::int_attr(r, "seed");
  i.backend = h5::string_attr(r, "backend");
  if (h5::has_attr(r, "backend_device")) {  // files written before these two attributes existed lack them
    i.backend_device = h5::string_attr(r, "backend_device");
    i.backend_deterministic = h5::int_attr(r, "backend_deterministic") != 0;
  }
  i.plugins = h5::strings_attr(r, "plugins");
  if (h5::has_attr(r, "precision")) i.precision = h5::string_attr(r, "precision");
  if (h5::has_attr(r, "code_id")) {  // files written before code identities lack them
    i.plugin_code = h5::strings_attr(r, "plugin_code");
    i.code_id = h5::string_attr(r, "code_id");
  }
  if (h5::has_attr(r, "data_files")) i.data_files = h5::strings_attr(r, "data_files");  // older files lack it
  if (h5::has_attr(r, "parameter_kinds")) {                                             // and these
    i.parameter_kinds = h5::strings_attr(r, "parameter_kinds");
    i.parameter_counts = h5::ints_attr(r, "parameter_counts");
  }
  if (h5::has_attr(r, "parameter_match")) i.parameter_match = h5::string_attr(r, "parameter_match");
  i.host = h5::string_attr(r, "host");
  i.created = h5::string_attr(r, "created");
  return i;
}

RunState read_state(const h5::Obj& r) {
  RunState s;
  s.status = parse_run_status(h5::string_attr(r, "status"));
  s.reason = h5::string_attr(r, "reason");
  s.step = h5::int_attr(r, "step");
  s.finished = h5::string_attr(r, "finished");
  return s;
}

void write_state(const h5::Obj& r, const RunState& s) {
  if (s.finished.size() > kTimeBytes)
    throw Error("cannot record finished time '" + s.finished + "' in " + r.file + ": longer than " + std::to_string(kTimeBytes) +
                    " bytes",
                "use ISO-8601 UTC, e.g. utc_now_iso8601()");
  h5::set_fixed_attr(r, "status", to_string(s.status), kStatusBytes);
  h5::set_fixed_attr(r, "reason", s.reason, kReasonBytes);
  h5::set_attr(r, "step", s.step);
  h5::set_fixed_attr(r, "finished", s.finished, kTimeBytes);
}

RunLayout read_layout(const h5::Obj& root) {
  RunLayout l;
  for (auto [group, out] : {std::pair{kTrain, &l.train_metrics}, std::pair{kEval, &l.eval_metrics}}) {
    const h5::Obj g = h5::open_group(root, group);
    for (std::string& n : h5::children(g))
      if (n != "step") out->push_back(std::move(n));
  }

  const h5::Obj attention = h5::open_group(root, kAttention);
  const h5::Obj probe = h5::open_group(attention, "probe");
  l.probe.src = read_probe_side(probe, "src");
  l.probe.tgt = read_probe_side(probe, "tgt");
  l.probe.examples = static_cast<std::int64_t>(l.probe.src.lengths.size());

  for (const std::string& rel : h5::strings_attr(attention, "slots")) {
    const h5::Obj ds = open_path(root, std::string(kAttention) + "/" + rel);
    const std::vector<hsize_t> d = shape_of(ds, 5);
    AttentionSlot s;
    s.stack = h5::string_attr(ds, "stack");
    s.kind = h5::string_attr(ds, "kind");
    s.layer = h5::int_attr(ds, "layer");
    s.heads = static_cast<std::int64_t>(d[2]);
    s.queries = static_cast<std::int64_t>(d[3]);
    s.keys = static_cast<std::int64_t>(d[4]);
    s.mask = parse_attention_mask(h5::string_attr(ds, "mask"));
    s.query_tokens = h5::string_attr(ds, "query_tokens");
    s.key_tokens = h5::string_attr(ds, "key_tokens");
    if (s.path() != ds.path) throw Error(ds.path + " in " + ds.file + " says it is " + s.path(), kNotOurs);
    l.attention.push_back(std::move(s));
  }
  if (h5::has_link(attention, "decode")) {
    const h5::Obj decode = h5::open_group(attention, "decode");
    l.decode.layers = h5::int_attr(decode, "layers");
    if (l.decode.layers > 0) {
      const std::vector<hsize_t> d = shape_of(open_path(root, std::string(kDecode) + "/cross/layer_0"), 5);
      l.decode.heads = static_cast<std::int64_t>(d[2]);
      l.decode.steps = static_cast<std::int64_t>(d[3]);
      l.decode.keys = static_cast<std::int64_t>(d[4]);
    }
  }

  const h5::Obj stats = h5::open_group(root, kStats);
  for (const std::string& n : h5::children(stats)) {
    if (n == "steps" || n == "attention_entropy") continue;
    const h5::Obj ds = h5::open_dataset(stats, n);
    l.stats.push_back({n, h5::strings_attr(ds, "columns")});
  }
  const h5::Obj entropy = h5::open_group(stats, "attention_entropy");
  for (const std::string& rel : h5::strings_attr(entropy, "slots")) {
    const h5::Obj ds = open_path(root, std::string(kEntropy) + "/" + rel);
    const std::vector<hsize_t> d = shape_of(ds, 2);
    l.entropy.push_back(
        {h5::string_attr(ds, "stack"), h5::string_attr(ds, "kind"), h5::int_attr(ds, "layer"), static_cast<std::int64_t>(d[1])});
  }

  const h5::Obj samples = h5::open_group(root, kSamples);
  l.samples.text_bytes = h5::int_attr(samples, "text_bytes");
  if (h5::has_link(samples, "src")) l.samples.count = static_cast<std::int64_t>(shape_of(h5::open_dataset(samples, "src"), 2)[1]);
  return l;
}

std::string layout_difference(const RunLayout& f, const RunLayout& e) {
  if (f.train_metrics != e.train_metrics)
    return "train metrics: the file has " + join(f.train_metrics) + ", this run declares " + join(e.train_metrics);
  if (f.eval_metrics != e.eval_metrics)
    return "eval metrics: the file has " + join(f.eval_metrics) + ", this run declares " + join(e.eval_metrics);
  if (f.probe != e.probe) return "the probe batch (its examples, tokens, lengths or texts) differs";
  if (f.attention.size() != e.attention.size())
    return "attention slots: the file has " + std::to_string(f.attention.size()) + ", this run declares " +
           std::to_string(e.attention.size());
  for (std::size_t i = 0; i < f.attention.size(); ++i)
    if (f.attention[i] != e.attention[i])
      return "attention slot " + std::to_string(i) + ": the file has " + slot_text(f.attention[i]) + ", this run declares " +
             slot_text(e.attention[i]);
  if (f.decode != e.decode)
    return "decode: the file has layers " + std::to_string(f.decode.layers) + " H " + std::to_string(f.decode.heads) + " T " +
           std::to_string(f.decode.steps) + " S " + std::to_string(f.decode.keys) + ", this run declares layers " +
           std::to_string(e.decode.layers) + " H " + std::to_string(e.decode.heads) + " T " + std::to_string(e.decode.steps) +
           " S " + std::to_string(e.decode.keys);
  if (f.stats != e.stats) {
    std::vector<std::string> a, b;
    for (const StatsTable& s : f.stats) a.push_back(s.name + join(s.columns));
    for (const StatsTable& s : e.stats) b.push_back(s.name + join(s.columns));
    return "stats: the file has " + join(a) + ", this run declares " + join(b);
  }
  if (f.entropy != e.entropy) {
    std::vector<std::string> a, b;
    for (const EntropySlot& s : f.entropy) a.push_back(s.path() + " H=" + std::to_string(s.heads));
    for (const EntropySlot& s : e.entropy) b.push_back(s.path() + " H=" + std::to_string(s.heads));
    return "attention entropy: the file has " + join(a) + ", this run declares " + join(b);
  }
  if (f.samples != e.samples)
    return "samples: the file has " + std::to_string(f.samples.count) + " of " + std::to_string(f.samples.text_bytes) +
           " bytes, this run declares " + std::to_string(e.samples.count) + " of " + std::to_string(e.samples.text_bytes) +
           " bytes";
  return {};
}

TableRows consistent_rows(const std::vector<const h5::Obj*>& datasets, bool refresh, std::optional<std::int64_t> max_step,
                          bool increasing) {
  hsize_t n = std::numeric_limits<hsize_t>::max();
  for (const h5::Obj* ds : datasets) {
    if (refresh) h5::refresh(*ds);
    const std::vector<hsize_t> d = h5::dims(*ds);
    n = std::min<hsize_t>(n, d.empty() ? 0 : d[0]);
  }
  TableRows out;
  if (datasets.empty() || n == 0) return out;
  std::vector<std::int64_t> steps(n);
  h5::read_rows(*datasets.front(), 0, n, H5T_NATIVE_INT64, steps.data());
  hsize_t k = 0;
  while (k < n && steps[k] >= 0 && (k == 0 || !increasing || steps[k] > steps[k - 1]) && (!max_step || steps[k] <= *max_step))
    ++k;
  steps.resize(k);
  out.rows = k;
  out.stored = n;
  out.steps = std::move(steps);
  return out;
}

WriterLock::WriterLock(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0)
    throw Error("cannot open " + file.string() + " for writing: " + std::strerror(errno), "check the file's permissions");
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = kLockOffset;
  l.l_len = 1;
  if (::fcntl(fd_, F_OFD_SETLK, &l) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EACCES) {
      ::close(fd_);
      fd_ = -1;
      throw Error("another process is writing " + file.string(),
                  "a run file has one writer at a time: wait for that run to stop (or stop it) before resuming");
    }
    // Locks unsupported here (some network file systems): go on without the guard.
  }
}
WriterLock::WriterLock(WriterLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
WriterLock& WriterLock::operator=(WriterLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}
WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool writer_lock_held(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = kLockOffset;
  l.l_len = 1;
  const bool held = ::fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

}  // namespace ablate::results::schema
