// RunWriter (run_file.hpp): builds a complete run file under a temporary name and renames it into
// place, then appends rows under SWMR; resume trims rows past the checkpoint in SWMR mode too, so
// live readers may stay open and a killed writer leaves a file every reader can open.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "ablate/error.hpp"
#include "results/hdf5_util.hpp"
#include "results/run_file.hpp"
#include "results/run_schema.hpp"

namespace ablate::results {
namespace {
namespace fs = std::filesystem;
using schema::Elem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr std::int32_t kNoToken = -1;
constexpr std::int64_t kNoStep = -1;

hid_t file_type_of(Elem e) {
  switch (e) {
    case Elem::F64: return H5T_IEEE_F64LE;
    case Elem::F32: return H5T_IEEE_F32LE;
    case Elem::I32: return H5T_STD_I32LE;
    case Elem::Text: break;
  }
  return H5I_INVALID_HID;
}

hid_t mem_type_of(Elem e) {
  switch (e) {
    case Elem::F64: return H5T_NATIVE_DOUBLE;
    case Elem::F32: return H5T_NATIVE_FLOAT;
    case Elem::I32: return H5T_NATIVE_INT32;
    case Elem::Text: break;
  }
  return H5I_INVALID_HID;
}

// The group at absolute `path`, created (with its parents) where missing.
h5::Obj group_at(const h5::Obj& root, const std::string& path) {
  h5::Obj g{h5::Handle(H5Gopen2(root.id(), "/", H5P_DEFAULT), H5Gclose), root.file, "/"};
  std::size_t start = 1;
  while (start < path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string name = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    g = h5::has_link(g, name) ? h5::open_group(g, name) : h5::create_group(g, name, true);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return g;
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }
std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }
std::string relative_to(const std::string& base, const std::string& path) { return path.substr(base.size() + 1); }

h5::Obj create_column(const h5::Obj& root, const schema::ColumnDef& c) {
  const h5::Obj parent = group_at(root, parent_of(c.path));
  const std::string name = name_of(c.path);
  switch (c.elem) {
    case Elem::F64:
      return h5::create_appendable(parent, name, file_type_of(c.elem), c.row, c.chunk_rows, c.compress, H5T_NATIVE_DOUBLE, &kNaN);
    case Elem::F32:
      return h5::create_appendable(parent, name, file_type_of(c.elem), c.row, c.chunk_rows, c.compress, H5T_NATIVE_FLOAT, &kNaNf);
    case Elem::I32:
      return h5::create_appendable(parent, name, file_type_of(c.elem), c.row, c.chunk_rows, c.compress, H5T_NATIVE_INT32,
                                   &kNoToken);
    case Elem::Text: {
      h5::Handle t = h5::fixed_string_type(c.text_bytes);
      return h5::create_appendable(parent, name, t.get(), c.row, c.chunk_rows, c.compress, H5I_INVALID_HID, nullptr);
    }
  }
  throw Error("unknown column kind for " + c.path);
}

h5::Obj create_steps(const h5::Obj& root, const std::string& path, hsize_t chunk_rows) {
  return h5::create_appendable(group_at(root, parent_of(path)), name_of(path), H5T_STD_I64LE, {}, chunk_rows, false,
                               H5T_NATIVE_INT64, &kNoStep);
}

// An attention or entropy slot's dataset, labelled with its axes and where it sits (stack, kind, layer).
template <class Slot>
h5::Obj open_slot(const h5::Obj& root, const Slot& s, const char* axes) {
  h5::Obj ds = schema::open_path(root, s.path());
  h5::set_attr(ds, "axes", axes);
  h5::set_attr(ds, "stack", s.stack);
  h5::set_attr(ds, "kind", s.kind);
  h5::set_attr(ds, "layer", s.layer);
  return ds;
}

void write_probe_side(const h5::Obj& probe, const std::string& side, const ProbeTokens& t, std::int64_t examples) {
  const hsize_t e = static_cast<hsize_t>(examples);
  const h5::Obj ids =
      h5::create_fixed(probe, side, H5T_STD_I32LE, {e, static_cast<hsize_t>(t.length)}, H5T_NATIVE_INT32, t.ids.data());
  h5::set_attr(ids, "axes", "example,position");
  const h5::Obj lengths = h5::create_fixed(probe, side + "_lengths", H5T_STD_I32LE, {e}, H5T_NATIVE_INT32, t.lengths.data());
  h5::set_attr(lengths, "axes", "example");
  h5::create_strings(probe, side + "_text", t.texts);
}

// Every group, dataset and attribute of a new run file (nothing is created after this).
void build(const h5::Obj& file, const RunInfo& info, const RunLayout& l) {
  const h5::Obj root = schema::open_root(file);
  h5::set_attr(root, "format", kFormatName);
  h5::set_attr(root, "format_version", kFormatVersion);
  h5::set_attr(root, "ablate_version", info.ablate_version);
  h5::set_attr(root, "git_revision", info.git_revision);
  h5::set_attr(root, "run_id", info.run_id);
  h5::set_attr(root, "experiment", info.experiment);
  schema::write_state(root, RunState{});
  h5::set_attr(root, "spec_yaml", info.spec_yaml);
  h5::set_attr(root, "resolved_spec_yaml", info.resolved_spec_yaml);
  h5::set_attr(root, "seed", info.seed);
  h5::set_attr(root, "backend", info.backend);
  h5::set_attr(root, "backend_device", info.backend_device);
  h5::set_attr(root, "backend_deterministic", std::int64_t{info.backend_deterministic ? 1 : 0});
  h5::set_attr(root, "plugins", info.plugins);
  h5::set_attr(root, "precision", info.precision);
  h5::set_attr(root, "plugin_code", info.plugin_code);
  h5::set_attr(root, "code_id", info.code_id);
  h5::set_attr(root, "data_files", info.data_files);
  h5::set_attr(root, "parameter_kinds", info.parameter_kinds);
  h5::set_attr(root, "parameter_counts", info.parameter_counts);
  if (!info.parameter_match.empty()) h5::set_attr(root, "parameter_match", info.parameter_match);
  h5::set_attr(root, "host", info.host);
  h5::set_attr(root, "created", info.created.empty() ? utc_now_iso8601() : info.created);

  for (const char* g : {schema::kTrain, schema::kEval, schema::kAttention, schema::kProbe, schema::kStats, schema::kEntropy,
                        schema::kSamples, schema::kResumes})
    group_at(root, g);
  const std::vector<schema::TableDef> tables = schema::tables(l);
  for (const schema::TableDef& t : tables) {
    create_steps(root, t.steps, 256);
    for (const schema::ColumnDef& c : t.columns) create_column(root, c);
  }

  const h5::Obj probe = group_at(root, schema::kProbe);
  write_probe_side(probe, "src", l.probe.src, l.probe.examples);
  write_probe_side(probe, "tgt", l.probe.tgt, l.probe.examples);

  std::vector<std::string> slots;
  for (const AttentionSlot& s : l.attention) {
    slots.push_back(relative_to(schema::kAttention, s.path()));
    const h5::Obj ds = open_slot(root, s, "step,example,head,query,key");
    h5::set_attr(ds, "mask", to_string(s.mask));
    h5::set_attr(ds, "query_tokens", s.query_tokens);
    h5::set_attr(ds, "key_tokens", s.key_tokens);
  }
  h5::set_attr(group_at(root, schema::kAttention), "slots", slots);
  if (l.decode.layers > 0) {
    h5::set_attr(group_at(root, schema::kDecode), "layers", l.decode.layers);
    h5::set_attr(schema::open_path(root, std::string(schema::kDecode) + "/tokens"), "axes", "step,example,decode_step");
    h5::set_attr(schema::open_path(root, std::string(schema::kDecode) + "/lengths"), "axes", "step,example");
    for (std::int64_t i = 0; i < l.decode.layers; ++i) {
      const h5::Obj ds = schema::open_path(root, std::string(schema::kDecode) + "/cross/layer_" + std::to_string(i));
      h5::set_attr(ds, "axes", "step,example,head,decode_step,key");
      h5::set_attr(ds, "layer", i);
      h5::set_attr(ds, "mask", to_string(AttentionMask::KeyPadding));
      h5::set_attr(ds, "key_tokens", "src");
    }
  }

  for (const StatsTable& s : l.stats) {
    const h5::Obj ds = schema::open_path(root, std::string(schema::kStats) + "/" + s.name);
    h5::set_attr(ds, "axes", "step,column");
    h5::set_attr(ds, "columns", s.columns);
  }
  std::vector<std::string> entropy;
  for (const EntropySlot& s : l.entropy) {
    entropy.push_back(relative_to(schema::kEntropy, s.path()));
    h5::set_attr(open_slot(root, s, "step,head"), "units", "nats");
  }
  h5::set_attr(group_at(root, schema::kEntropy), "slots", entropy);

  const h5::Obj samples = group_at(root, schema::kSamples);
  h5::set_attr(samples, "text_bytes", l.samples.text_bytes);
  for (const schema::ColumnDef& c : tables[schema::kSamplesTable].columns)
    h5::set_attr(schema::open_path(root, c.path), "axes", "step,example");

  const h5::Obj resumes = group_at(root, schema::kResumes);
  create_steps(root, std::string(schema::kResumes) + "/step", 16);
  h5::Handle time_type = h5::fixed_string_type(kTimeBytes);
  h5::create_appendable(resumes, "time", time_type.get(), {}, 16, false, H5I_INVALID_HID, nullptr);

  const h5::Obj evals = group_at(root, schema::kEvals);
  create_steps(root, std::string(schema::kEvals) + "/checkpoint_step", 16);
  h5::Handle name_type = h5::fixed_string_type(kEvalNameBytes), scores_type = h5::fixed_string_type(kEvalScoresBytes);
  h5::create_appendable(evals, "name", name_type.get(), {}, 16, false, H5I_INVALID_HID, nullptr);
  h5::create_appendable(evals, "scores", scores_type.get(), {}, 4, true, H5I_INVALID_HID, nullptr);
  h5::create_appendable(evals, "time", time_type.get(), {}, 16, false, H5I_INVALID_HID, nullptr);
}

// `s` in a NUL-padded buffer of `bytes` (a fixed-length string row); `s` fits.
std::vector<char> fixed_text(const std::string& s, std::size_t bytes) {
  std::vector<char> row(bytes, '\0');
  std::memcpy(row.data(), s.data(), std::min(s.size(), bytes));
  return row;
}

// Renames `from` to `to` unless `to` exists (atomically where the file system can).
void rename_no_replace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {  // no RENAME_NOREPLACE here: a hard link refuses an existing name too
    if (::link(from.c_str(), to.c_str()) == 0) {
      ::unlink(from.c_str());
      return;
    }
    err = errno;
  }
  if (err == EEXIST)
    throw Error("refusing to overwrite " + to.string() + ": it appeared while the run file was being created",
                "results are never overwritten: pick a new run directory, or resume the run");
  throw Error("cannot move the new run file into place as " + to.string() + ": " + std::strerror(err));
}

// Removes a half-built file unless released.
class TempFile {
 public:
  explicit TempFile(fs::path p) : path_(std::move(p)) {}
  ~TempFile() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove(path_, ec);
    }
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

}  // namespace

struct Column {
  schema::ColumnDef def;
  h5::Obj ds;
  h5::Handle text_type;  // Elem::Text: the fixed-length string type rows are written in
  hid_t mem_type() const { return def.elem == Elem::Text ? text_type.get() : mem_type_of(def.elem); }
};

struct Table {
  schema::TableDef def;
  h5::Obj steps;
  std::vector<Column> columns;
  hsize_t rows = 0;
  std::optional<std::int64_t> last_step;
};

struct RunWriter::Impl {
  fs::path path;
  RunLayout layout;
  std::optional<schema::WriterLock> lock;  // released when closed, so the file can be resumed at once
  h5::Obj file, root;
  std::vector<Table> tables;
  h5::Obj resume_steps, resume_times;
  bool open = true;

  Impl(fs::path p, schema::WriterLock l) : path(std::move(p)), lock(std::move(l)) {}

  void check_open() const {
    if (!open) throw Error("the run file writer for " + path.string() + " is closed", "create or resume a new RunWriter");
  }

  [[noreturn]] void refuse(const Table& t, std::int64_t step, const std::string& why, const std::string& hint) const {
    throw Error("cannot append " + t.def.what + " at step " + std::to_string(step) + " to " + path.string() + ": " + why, hint);
  }

  // Appends one row to every dataset of table `index`, the step last. `rows[i]` holds column i's row.
  void append(std::size_t index, std::int64_t step, const std::vector<const void*>& rows) {
    Table& t = tables[index];
    if (step < 0) refuse(t, step, "steps are not negative", "log the training step the values belong to");
    if (t.last_step && step <= *t.last_step)
      refuse(t, step, "it is not after the last logged step " + std::to_string(*t.last_step),
             "steps increase strictly within a table; a resumed run continues after its checkpoint step");
    const hsize_t r = t.rows;
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      h5::set_rows(t.columns[i].ds, r + 1);
      h5::write_rows(t.columns[i].ds, r, 1, t.columns[i].mem_type(), rows[i]);
    }
    h5::set_rows(t.steps, r + 1);
    h5::write_rows(t.steps, r, 1, H5T_NATIVE_INT64, &step);
    t.rows = r + 1;
    t.last_step = step;
  }

  void append_metrics(std::size_t index, std::int64_t step, std::span<const double> values) {
    check_open();
    const Table& t = tables[index];
    if (values.size() != t.columns.size()) {
      std::string names;
      for (const Column& c : t.columns) names += (names.empty() ? "" : ", ") + name_of(c.def.path);
      refuse(t, step,
             "got " + std::to_string(values.size()) + " values for the " + std::to_string(t.columns.size()) +
                 " declared metrics [" + names + "]",
             "pass one value per declared metric, in the declared order");
    }
    std::vector<const void*> rows;
    for (const double& v : values) rows.push_back(&v);
    append(index, step, rows);
  }

  void append_metrics(std::size_t index, std::int64_t step, const std::map<std::string, double>& values) {
    check_open();
    const Table& t = tables[index];
    std::vector<double> row(t.columns.size(), kNaN);
    for (const auto& [name, v] : values) {
      std::size_t i = 0;
      while (i < t.columns.size() && name_of(t.columns[i].def.path) != name) ++i;
      if (i == t.columns.size()) {
        std::string names;
        for (const Column& c : t.columns) names += (names.empty() ? "" : ", ") + name_of(c.def.path);
        refuse(t, step, "'" + name + "' is not a declared metric of " + parent_of(t.def.steps) + " (declared: " + names + ")",
               "declare every metric in RunLayout when creating the run file; under SWMR no dataset can be added later");
      }
      row[i] = v;
    }
    append_metrics(index, step, std::span<const double>(row));
  }

  void write_resume_record(std::int64_t step) {
    const hsize_t n = std::min(h5::dims(resume_steps)[0], h5::dims(resume_times)[0]);
    const std::vector<char> time = fixed_text(utc_now_iso8601(), kTimeBytes);
    h5::Handle type = h5::fixed_string_type(kTimeBytes);
    h5::set_rows(resume_times, n + 1);
    h5::write_rows(resume_times, n, 1, type.get(), time.data());
    h5::set_rows(resume_steps, n + 1);
    h5::write_rows(resume_steps, n, 1, H5T_NATIVE_INT64, &step);
  }

  void close_handles() {
    tables.clear();
    resume_steps = {};
    resume_times = {};
    root = {};
  }
};

namespace {

// Opens an existing run file for SWMR writing: one writer (the lock), status flags left by a
// killed writer cleared, HDF5's own flock off (SWMR readers hold a shared one; our lock guards).
std::unique_ptr<RunWriter::Impl> open_for_writing(const fs::path& path, std::optional<std::int64_t> resume_step,
                                                  const RunLayout* expected) {
  auto impl = std::make_unique<RunWriter::Impl>(path, schema::WriterLock(path));
  h5::Handle fapl = h5::plist(H5P_FILE_ACCESS);
  const std::string name = path.string();
  if (H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_file_locking(fapl.get(), false, true) < 0)
    h5::fail(name, "/", "prepare to open");
  hbool_t clear = true;
  if (H5Pexist(fapl.get(), "clear_status_flags") > 0) H5Pset(fapl.get(), "clear_status_flags", &clear);  // what `h5clear -s` does
  h5::Handle f(H5Fopen(name.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, fapl.get()), H5Fclose);
  if (!f)
    throw Error("cannot open run file " + name + " for writing: HDF5: " + h5::hdf5_reason(),
                "is it a run file written by Ablate (HDF5 1.10 file format, SWMR-capable)?");
  impl->file = h5::Obj{std::move(f), name, "/"};
  impl->root = schema::open_root(impl->file);
  const std::int64_t version = schema::check_format(impl->root);
  if (version != kFormatVersion)
    throw Error("cannot write " + name + ": it has run-file format version " + std::to_string(version) +
                    ", this Ablate writes version " + std::to_string(kFormatVersion),
                "start a new run");
  impl->layout = schema::read_layout(impl->root);
  if (expected) {
    const std::string diff = schema::layout_difference(impl->layout, *expected);
    if (!diff.empty())
      throw Error("cannot resume " + name + ": its layout differs from this run's: " + diff,
                  "resume with the spec (and code) the run started with, or start a new run");
  }

  for (schema::TableDef& def : schema::tables(impl->layout)) {
    Table t;
    t.steps = schema::open_path(impl->root, def.steps);
    for (schema::ColumnDef& c : def.columns) {
      Column col{c, schema::open_path(impl->root, c.path), {}};
      if (c.elem == Elem::Text) col.text_type = h5::fixed_string_type(c.text_bytes);
      t.columns.push_back(std::move(col));
    }
    t.def = std::move(def);
    std::vector<const h5::Obj*> datasets{&t.steps};
    for (const Column& c : t.columns) datasets.push_back(&c.ds);
    const schema::TableRows rows = schema::consistent_rows(datasets, false, resume_step);
    for (const h5::Obj* ds : datasets) h5::set_rows(*ds, rows.rows);  // drops rows past the checkpoint, and torn ones
    t.rows = rows.rows;
    if (!rows.steps.empty()) t.last_step = rows.steps.back();
    impl->tables.push_back(std::move(t));
  }
  impl->resume_steps = schema::open_path(impl->root, std::string(schema::kResumes) + "/step");
  impl->resume_times = schema::open_path(impl->root, std::string(schema::kResumes) + "/time");
  if (resume_step) {
    impl->write_resume_record(*resume_step);
    schema::write_state(impl->root, RunState{RunStatus::Running, "", *resume_step, ""});
    if (H5Fflush(impl->file.id(), H5F_SCOPE_GLOBAL) < 0) h5::fail(name, "/", "flush");
  }
  return impl;
}

}  // namespace

namespace {
// The writer's state; a moved-from RunWriter has none.
RunWriter::Impl& live(const std::unique_ptr<RunWriter::Impl>& impl) {
  if (!impl) throw Error("this RunWriter was moved from", "use the RunWriter it was moved to");
  return *impl;
}
// The writer's state, refused once the writer is closed: what every append and update starts from.
RunWriter::Impl& writable(const std::unique_ptr<RunWriter::Impl>& impl) {
  RunWriter::Impl& m = live(impl);
  m.check_open();
  return m;
}
}  // namespace

RunWriter::RunWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunWriter::RunWriter(RunWriter&&) noexcept = default;
RunWriter& RunWriter::operator=(RunWriter&& o) noexcept {
  if (this != &o) {
    try {
      if (impl_) close();
    } catch (...) {
    }
    impl_ = std::move(o.impl_);
  }
  return *this;
}
RunWriter::~RunWriter() {
  try {
    if (impl_) close();
  } catch (...) {
  }
}

RunWriter RunWriter::create(const fs::path& file, const RunInfo& info, const RunLayout& layout) {
  h5::Quiet quiet;
  validate(layout);
  std::error_code ec;
  if (fs::symlink_status(file, ec).type() != fs::file_type::not_found)
    throw Error("refusing to overwrite " + file.string() + ": it exists",
                "results are never overwritten: pick a new run directory, or resume the run");
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::is_directory(dir, ec))
    throw Error("cannot create " + file.string() + ": no directory " + dir.string(), "create the run directory first");

  const fs::path temp = file.string() + ".creating." + std::to_string(::getpid());
  TempFile guard(temp);
  {
    h5::Handle fcpl = h5::plist(H5P_FILE_CREATE);
    h5::Handle fapl = h5::plist(H5P_FILE_ACCESS);
    const std::string name = temp.string();
    if (H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
        H5Pset_attr_phase_change(fcpl.get(), 64, 48) < 0 || H5Pset_obj_track_times(fcpl.get(), false) < 0 ||
        H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0)
      h5::fail(name, "/", "prepare to create");
    h5::Handle f(H5Fcreate(name.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), H5Fclose);
    if (!f) h5::fail(name, "/", "create", "check the run directory is writable");
    h5::Obj obj{std::move(f), file.string(), "/"};
    build(obj, info, layout);
    if (obj.handle.reset() < 0) h5::fail(name, "/", "close");
  }
  rename_no_replace(temp, file);
  guard.release();
  return RunWriter(open_for_writing(file, std::nullopt, nullptr));
}

RunWriter RunWriter::resume(const fs::path& file, std::int64_t resume_step, const RunLayout* expected) {
  h5::Quiet quiet;
  if (resume_step < 0)
    throw Error("cannot resume " + file.string() + " from step " + std::to_string(resume_step),
                "the resume step is the checkpoint's step (>= 0)");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw Error("cannot resume " + file.string() + ": no such file", "check the run directory");
  return RunWriter(open_for_writing(file, resume_step, expected));
}

void RunWriter::record_end(const fs::path& file, const RunState& state) {
  h5::Quiet quiet;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error("cannot record the end of " + file.string() + ": no such file", "check the run directory");
  RunWriter writer(open_for_writing(file, std::nullopt, nullptr));
  writer.set_state(state);
  writer.close();
}

namespace {
// record_evaluation's row: the name checked unique, the texts written, the step last.
void append_evaluation(RunWriter::Impl& m, const EvalRecord& record, const std::string& what) {
  if (!h5::has_link(m.root, schema::kEvals + 1))
    throw Error(what + ": the file has no /evals (written before evaluations were recorded in run files)",
                "the evaluation's scores.json is its record; a new run's file has /evals");
  const schema::EvalDatasets e = schema::open_evals(m.root);
  const hsize_t n = schema::consistent_rows(e.all(), false, {}, false).rows;
  for (const std::string& name : h5::read_string_rows(e.name, 0, n))
    if (name == record.name)
      throw Error(what + ": the file records an evaluation of that name already",
                  "evaluations are never written over: give this one another name (ablate eval --out DIR names it DIR)");
  const std::pair<const h5::Obj*, std::vector<char>> texts[] = {
      {&e.name, fixed_text(record.name, kEvalNameBytes)},
      {&e.scores, fixed_text(record.scores, kEvalScoresBytes)},
      {&e.time, fixed_text(record.time.empty() ? utc_now_iso8601() : record.time, kTimeBytes)}};
  for (const auto& [ds, row] : texts) {  // the texts first, the step last (a row counts once its step is written)
    h5::Handle type = h5::fixed_string_type(row.size());
    h5::set_rows(*ds, n + 1);
    h5::write_rows(*ds, n, 1, type.get(), row.data());
  }
  h5::set_rows(e.checkpoint_step, n + 1);
  h5::write_rows(e.checkpoint_step, n, 1, H5T_NATIVE_INT64, &record.checkpoint_step);
}
}  // namespace

void RunWriter::record_evaluation(const fs::path& file, const EvalRecord& record) {
  h5::Quiet quiet;
  const std::string what = "cannot record evaluation '" + record.name + "' in " + file.string();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw Error(what + ": no such file", "check the run directory");
  if (record.name.empty() || record.name.size() > kEvalNameBytes || record.name.find('\0') != std::string::npos)
    throw Error(what + ": its name must be 1 to " + std::to_string(kEvalNameBytes) + " bytes", "name the evaluation shorter");
  if (record.scores.size() > kEvalScoresBytes)
    throw Error(what + ": its scores are " + std::to_string(record.scores.size()) + " bytes, more than the " +
                    std::to_string(kEvalScoresBytes) + " a record holds",
                "report fewer metrics");
  RunWriter writer(open_for_writing(file, std::nullopt, nullptr));
  append_evaluation(*writer.impl_, record, what);  // its datasets closed before the file is
  writer.close();
}

const fs::path& RunWriter::path() const { return live(impl_).path; }
const RunLayout& RunWriter::layout() const { return live(impl_).layout; }

void RunWriter::append_train(std::int64_t step, std::span<const double> values) {
  h5::Quiet quiet;
  live(impl_).append_metrics(schema::kTrainTable, step, values);
}
void RunWriter::append_train(std::int64_t step, const std::map<std::string, double>& values) {
  h5::Quiet quiet;
  live(impl_).append_metrics(schema::kTrainTable, step, values);
}
void RunWriter::append_eval(std::int64_t step, std::span<const double> values) {
  h5::Quiet quiet;
  live(impl_).append_metrics(schema::kEvalTable, step, values);
}
void RunWriter::append_eval(std::int64_t step, const std::map<std::string, double>& values) {
  h5::Quiet quiet;
  live(impl_).append_metrics(schema::kEvalTable, step, values);
}

void RunWriter::append_attention(std::int64_t step, const AttentionLog& log) {
  h5::Quiet quiet;
  Impl& m = writable(impl_);
  const Table& t = m.tables[schema::kAttentionTable];
  const RunLayout& l = m.layout;
  const std::int64_t e = l.probe.examples;
  auto shape_error = [&](const std::string& what, std::size_t got, const std::string& shape, std::int64_t expected) {
    m.refuse(t, step, what + " got " + std::to_string(got) + " values, expected " + shape + " = " + std::to_string(expected),
             "pass each buffer with the shape declared in RunLayout");
  };
  if (log.slots.size() != l.attention.size())
    m.refuse(t, step,
             "got " + std::to_string(log.slots.size()) + " attention buffers for " + std::to_string(l.attention.size()) +
                 " declared slots",
             "pass one buffer per RunLayout::attention slot, in the declared order");
  std::vector<const void*> rows;
  for (std::size_t i = 0; i < l.attention.size(); ++i) {
    const AttentionSlot& s = l.attention[i];
    const std::int64_t n = e * s.heads * s.queries * s.keys;
    if (static_cast<std::int64_t>(log.slots[i].size()) != n)
      shape_error("attention slot " + s.path(), log.slots[i].size(),
                  "[E=" + std::to_string(e) + ", H=" + std::to_string(s.heads) + ", Q=" + std::to_string(s.queries) +
                      ", K=" + std::to_string(s.keys) + "]",
                  n);
    rows.push_back(log.slots[i].data());
  }
  const DecodeLayout& d = l.decode;
  const DecodeLog& dl = log.decode;
  if (d.layers == 0) {
    if (!dl.tokens.empty() || !dl.lengths.empty() || !dl.cross.empty())
      m.refuse(t, step, "it has a decode log, but the run file declares no decoding",
               "declare RunLayout::decode when creating the run file");
  } else {
    if (static_cast<std::int64_t>(dl.tokens.size()) != e * d.steps)
      shape_error("decode tokens", dl.tokens.size(), "[E=" + std::to_string(e) + ", T=" + std::to_string(d.steps) + "]",
                  e * d.steps);
    if (static_cast<std::int64_t>(dl.lengths.size()) != e)
      shape_error("decode lengths", dl.lengths.size(), "[E=" + std::to_string(e) + "]", e);
    for (std::int32_t n : dl.lengths)
      if (n < 0 || n > d.steps)
        m.refuse(t, step, "a decode length of " + std::to_string(n) + " is outside 0.." + std::to_string(d.steps),
                 "lengths count generated tokens");
    if (static_cast<std::int64_t>(dl.cross.size()) != d.layers)
      m.refuse(t, step,
               "got " + std::to_string(dl.cross.size()) + " decode cross-attention buffers for " + std::to_string(d.layers) +
                   " declared layers",
               "pass one buffer per decoder layer");
    rows.push_back(dl.tokens.data());
    rows.push_back(dl.lengths.data());
    const std::int64_t n = e * d.heads * d.steps * d.keys;
    for (std::size_t i = 0; i < dl.cross.size(); ++i) {
      if (static_cast<std::int64_t>(dl.cross[i].size()) != n)
        shape_error("decode cross-attention " + std::string(schema::kDecode) + "/cross/layer_" + std::to_string(i),
                    dl.cross[i].size(),
                    "[E=" + std::to_string(e) + ", H=" + std::to_string(d.heads) + ", T=" + std::to_string(d.steps) +
                        ", S=" + std::to_string(d.keys) + "]",
                    n);
      rows.push_back(dl.cross[i].data());
    }
  }
  m.append(schema::kAttentionTable, step, rows);
}

void RunWriter::append_stats(std::int64_t step, const StatsLog& log) {
  h5::Quiet quiet;
  Impl& m = writable(impl_);
  const Table& t = m.tables[schema::kStatsTable];
  const RunLayout& l = m.layout;
  if (log.tables.size() != l.stats.size() || log.entropy.size() != l.entropy.size())
    m.refuse(t, step,
             "got " + std::to_string(log.tables.size()) + " stats rows and " + std::to_string(log.entropy.size()) +
                 " entropy rows for " + std::to_string(l.stats.size()) + " declared tables and " +
                 std::to_string(l.entropy.size()) + " entropy slots",
             "pass one row per declared table and slot, in the declared order");
  std::vector<const void*> rows;
  // One row of `expected` values, or the append is refused naming `what` and `declared`.
  const auto add_row = [&](std::span<const float> row, std::size_t expected, const std::string& what, const std::string& declared,
                           const char* hint) {
    if (row.size() != expected) m.refuse(t, step, what + " got " + std::to_string(row.size()) + " values for " + declared, hint);
    rows.push_back(row.data());
  };
  for (std::size_t i = 0; i < l.stats.size(); ++i)
    add_row(log.tables[i], l.stats[i].columns.size(), "stats table /stats/" + l.stats[i].name,
            std::to_string(l.stats[i].columns.size()) + " declared columns", "pass one value per declared column");
  for (std::size_t i = 0; i < l.entropy.size(); ++i)
    add_row(log.entropy[i], static_cast<std::size_t>(l.entropy[i].heads), "entropy slot " + l.entropy[i].path(),
            "H=" + std::to_string(l.entropy[i].heads), "pass one value per head");
  m.append(schema::kStatsTable, step, rows);
}

void RunWriter::append_samples(std::int64_t step, const SamplesLog& log) {
  h5::Quiet quiet;
  Impl& m = writable(impl_);
  const Table& t = m.tables[schema::kSamplesTable];
  const SamplesLayout& s = m.layout.samples;
  if (s.count == 0)
    m.refuse(t, step, "the run file declares no samples", "declare RunLayout::samples.count when creating the run file");
  const std::size_t width = static_cast<std::size_t>(s.text_bytes);
  std::vector<std::vector<char>> packed;
  for (auto [what, texts] :
       {std::pair{"src", &log.src}, std::pair{"reference", &log.reference}, std::pair{"prediction", &log.prediction}}) {
    if (static_cast<std::int64_t>(texts->size()) != s.count)
      m.refuse(t, step,
               std::string(what) + " has " + std::to_string(texts->size()) + " texts, declared " + std::to_string(s.count),
               "pass RunLayout::samples.count texts in each of src, reference and prediction");
    std::vector<char> buf(texts->size() * width, '\0');
    for (std::size_t i = 0; i < texts->size(); ++i) {
      if ((*texts)[i].find('\0') != std::string::npos)
        m.refuse(t, step, std::string(what) + " text " + std::to_string(i) + " contains a NUL byte",
                 "remove it; HDF5 strings end at NUL");
      const std::string fitted = h5::fit_utf8((*texts)[i], width);
      std::memcpy(buf.data() + i * width, fitted.data(), fitted.size());
    }
    packed.push_back(std::move(buf));
  }
  m.append(schema::kSamplesTable, step, {packed[0].data(), packed[1].data(), packed[2].data()});
}

void RunWriter::set_state(const RunState& state) {
  h5::Quiet quiet;
  Impl& m = writable(impl_);
  schema::write_state(m.root, state);
}

void RunWriter::flush() {
  h5::Quiet quiet;
  Impl& m = writable(impl_);
  if (H5Fflush(m.file.id(), H5F_SCOPE_GLOBAL) < 0) h5::fail(m.path.string(), "/", "flush");
  if (::fsync(m.lock->fd()) != 0)
    throw Error("cannot write " + m.path.string() + " to disk: " + std::strerror(errno), "is the disk full?");
}

void RunWriter::close() {
  if (!impl_ || !impl_->open) return;
  h5::Quiet quiet;
  impl_->open = false;
  std::string error;
  if (H5Fflush(impl_->file.id(), H5F_SCOPE_GLOBAL) < 0) error = "flush";
  impl_->close_handles();
  if (impl_->file.handle.reset() < 0 && error.empty()) error = "close";
  if (error.empty() && ::fsync(impl_->lock->fd()) != 0) error = "sync";
  impl_->lock.reset();
  if (!error.empty()) h5::fail(impl_->path.string(), "/", error);
}

}  // namespace ablate::results
