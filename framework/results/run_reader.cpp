// RunReader (run_file.hpp): opens a run file read-only in SWMR mode (finished, live, or left by a
// killed writer) and reads tables with consistent row counts, refreshing metadata as it goes.
// A file is first read by a forked child (vet_in_child): HDF5 can crash on a damaged file.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ablate/error.hpp"
#include "results/hdf5_util.hpp"
#include "results/run_file.hpp"
#include "results/run_schema.hpp"

namespace ablate::results {
namespace {
namespace fs = std::filesystem;

std::vector<std::int64_t> to_shape(std::initializer_list<std::int64_t> d) { return std::vector<std::int64_t>(d); }

std::size_t numel(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// Reads every attribute of every object of an open file (what a damaged file crashes HDF5 on).
herr_t read_attribute(hid_t location, const char* name, const H5A_info_t*, void*) {
  h5::Handle a(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
  if (!a) return -1;
  h5::Handle type(H5Aget_type(a.get()), H5Tclose);
  h5::Handle space(H5Aget_space(a.get()), H5Sclose);
  if (!type || !space) return -1;
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || n > (1 << 20)) return -1;
  if (n == 0) return 0;  // an empty list: nothing to read
  if (H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) > 0) {
    std::vector<char*> strings(static_cast<std::size_t>(n), nullptr);
    if (H5Aread(a.get(), type.get(), strings.data()) < 0) return -1;
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, strings.data());
  } else {
    const std::size_t bytes = H5Tget_size(type.get()) * static_cast<std::size_t>(n);
    if (bytes > (std::size_t{1} << 26)) return -1;
    std::vector<char> buffer(bytes);
    if (H5Aread(a.get(), type.get(), buffer.data()) < 0) return -1;
  }
  return 0;
}
herr_t read_attributes(hid_t root, const char* path, const H5O_info_t*, void*) {  // path: relative to root
  h5::Handle object(H5Oopen(root, path, H5P_DEFAULT), H5Oclose);
  if (!object) return -1;
  return H5Aiterate2(object.get(), H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, read_attribute, nullptr) < 0 ? -1 : 0;
}

// What a RunReader reads at open and of its tables, plus every attribute: done by the child.
void read_everything(const fs::path& file) {
  RunReader r(file, RunReader::kUnvetted);  // in the child: read directly
  (void)r.state();
  (void)r.resumes();
  (void)r.evaluations();
  (void)r.metrics(MetricSplit::Train);
  (void)r.metrics(MetricSplit::Eval);
  (void)r.attention_steps();
  (void)r.stats_steps();
  (void)r.sample_steps();
  h5::Quiet quiet;
  h5::Handle fapl = h5::plist(H5P_FILE_ACCESS);
  H5Pset_file_locking(fapl.get(), false, true);
  h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get()), H5Fclose);
  if (!f || H5Ovisit2(f.get(), H5_INDEX_NAME, H5_ITER_NATIVE, read_attributes, nullptr, H5O_INFO_BASIC) < 0)
    throw Error("cannot read the attributes of run file " + file.string() + ": HDF5: " + h5::hdf5_reason(),
                "the file is damaged; rerun the run (or restore the file)");
}

// What a child found of each file it read, with the file's size and time then: a file that
// changes is read again. An empty error: readable.
struct Vetted {
  std::tuple<std::uintmax_t, fs::file_time_type> key;
  std::string error, hint;
};
std::mutex g_vetted_mutex;
std::map<fs::path, Vetted>& vetted() {
  static auto* m = new std::map<fs::path, Vetted>();
  return *m;
}

std::tuple<std::uintmax_t, fs::file_time_type> file_key(const fs::path& file) {
  std::error_code ec;
  return {fs::file_size(file, ec), fs::last_write_time(file, ec)};
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  return s;
}

// The child: reads files[from..] in order, writing "index\t0\n" or "index\t1\twhat\thint\n" after
// each; then _exit (no atexit handlers, no flushing of the parent's buffers).
[[noreturn]] void vet_child(const std::vector<fs::path>& files, std::size_t from, int fd) {
  for (std::size_t i = from; i < files.size(); ++i) {
    std::string record = std::to_string(i) + "\t0\n";
    try {
      read_everything(files[i]);
    } catch (const Error& e) {
      record = std::to_string(i) + "\t1\t" + one_line(e.what()) + "\t" + one_line(e.hint()) + "\n";
    } catch (const std::exception& e) {
      record = std::to_string(i) + "\t1\t" + one_line(e.what()) + "\t\n";
    }
    for (std::size_t done = 0; done < record.size();) {
      const ssize_t w = ::write(fd, record.data() + done, record.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ::_exit(2);
      done += static_cast<std::size_t>(w);
    }
  }
  ::_exit(0);
}

}  // namespace

// Reading a damaged HDF5 file can crash inside the library (seen: SIGSEGV in H5HG_read, under
// H5Aread of a string attribute, after 20 flipped bytes). So before this process reads a run
// file, a forked child reads it whole (read_everything); a child that dies on a file (or takes
// more than 60 s over it) means that file cannot be trusted to the library: it is refused like
// any unreadable file, and a new child goes on with the next. One child reads a whole batch
// (compare, plot and sweep pass every file at once), so the fork is paid once, not per file.
void vet_run_files(const std::vector<fs::path>& files) {
  // A child shares this process's HDF5 state: with a file open here (this process's own run being
  // written, e.g. a resume reading its run file), the child's read would meet it; read directly.
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE) > 0) return;
  std::vector<fs::path> todo;
  {
    std::lock_guard<std::mutex> lock(g_vetted_mutex);
    for (const fs::path& f : files)
      if (auto it = vetted().find(f); it == vetted().end() || it->second.key != file_key(f)) todo.push_back(f);
  }
  std::vector<Vetted> found(todo.size());
  for (std::size_t i = 0; i < todo.size(); ++i) found[i].key = file_key(todo[i]);
  for (std::size_t from = 0; from < todo.size();) {
    int fds[2];
    if (::pipe(fds) != 0) throw Error(std::string("cannot check run files: pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw Error(std::string("cannot check run files: fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::close(fds[0]);
      // What the library (or a sanitizer watching it) prints on a damaged file is the child's
      // business: it reports through the pipe.
      if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
      }
      vet_child(todo, from, fds[1]);
    }
    ::close(fds[1]);
    std::string pending;
    char buffer[4096];
    std::size_t next = from;  // the first file without a record yet
    bool hung = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fds[0], POLLIN, 0};
      const int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) {
        hung = ready == 0;
        break;
      }
      const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buffer, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        const std::string line = pending.substr(0, nl);
        const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
        const std::size_t index = std::stoul(line.substr(0, t1));
        if (line.substr(t1 + 1, 1) == "1") {
          const auto t3 = line.find('\t', t2 + 1);
          found[index].error = line.substr(t2 + 1, t3 - t2 - 1);
          found[index].hint = t3 == std::string::npos ? "" : line.substr(t3 + 1);
        }
        next = index + 1;
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      }
    }
    ::close(fds[0]);
    if (hung) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (next < todo.size() && (hung || WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))) {
      found[next].error =
          "run file " + todo[next].string() + " is damaged: " +
          (hung                  ? std::string("reading it did not finish within 60 s")
           : WIFSIGNALED(status) ? "reading it crashed the HDF5 library (" + std::string(::strsignal(WTERMSIG(status))) + ")"
                                 : "the process reading it failed on it");
      found[next].hint = "rerun the run (or restore the file); other runs are not affected";
      ++next;
    }
    from = next;
  }
  std::lock_guard<std::mutex> lock(g_vetted_mutex);
  for (std::size_t i = 0; i < todo.size(); ++i) vetted()[todo[i]] = found[i];
}

namespace {

// Throws the error a child found in `file` (after vetting it, if it was not yet).
void vet_in_child(const fs::path& file) {
  vet_run_files({file});
  std::lock_guard<std::mutex> lock(g_vetted_mutex);
  if (auto it = vetted().find(file); it != vetted().end() && !it->second.error.empty())
    throw Error(it->second.error, it->second.hint);
}

}  // namespace

struct ReaderTable {
  schema::TableDef def;
  h5::Obj steps;
  std::vector<h5::Obj> columns;
  hsize_t known_rows = 0;  // rows seen at the last refresh: readable without refreshing again
};

struct RunReader::Impl {
  fs::path path;
  h5::Obj file, root;
  std::int64_t version = 0;
  RunInfo info;
  RunLayout layout;
  std::vector<ReaderTable> tables;
  h5::Obj resume_steps, resume_times;

  // Refreshes every dataset of the table and counts its consistent rows.
  schema::TableRows rows(std::size_t index) {
    ReaderTable& t = tables[index];
    std::vector<const h5::Obj*> datasets{&t.steps};
    for (const h5::Obj& c : t.columns) datasets.push_back(&c);
    schema::TableRows r = schema::consistent_rows(datasets, true);
    t.known_rows = r.rows;
    return r;
  }

  // Throws unless `row` of the table exists (refreshing only when it was not seen before).
  void need_row(std::size_t index, std::size_t row) {
    if (row < tables[index].known_rows) return;
    const hsize_t n = rows(index).rows;
    if (row >= n)
      throw Error("no row " + std::to_string(row) + " of the " + tables[index].def.what + " in " + path.string() + ": it has " +
                      std::to_string(n),
                  "rows are numbered from 0 in the order they were logged; the steps datasets list their steps");
  }

  FloatTensor read_float_row(std::size_t index, std::size_t column, std::size_t row, std::vector<std::int64_t> shape) {
    need_row(index, row);
    FloatTensor t{std::move(shape), {}};
    t.values.resize(numel(t.shape));
    h5::read_rows(tables[index].columns[column], row, 1, H5T_NATIVE_FLOAT, t.values.data());
    return t;
  }

  FloatTensor read_float_rows(std::size_t index, std::size_t column, std::int64_t width) {
    const hsize_t n = rows(index).rows;
    FloatTensor t{to_shape({static_cast<std::int64_t>(n), width}), {}};
    t.values.resize(numel(t.shape));
    h5::read_rows(tables[index].columns[column], 0, n, H5T_NATIVE_FLOAT, t.values.data());
    return t;
  }
};

RunReader::RunReader(const fs::path& file) : RunReader(file, kVetted) {}

RunReader::RunReader(const fs::path& file, Vetting vetting) : impl_(std::make_unique<Impl>()) {
  h5::Quiet quiet;
  Impl& m = *impl_;
  m.path = file;
  const std::string name = file.string();
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (!fs::is_regular_file(st))
    throw Error("cannot read run file " + name + ": " +
                    (!fs::exists(st)        ? "no such file"
                     : fs::is_directory(st) ? "it is a directory"
                                            : "not a regular file"),
                "check the path; a run's file is <run dir>/run.h5");
  if (vetting == kVetted) vet_in_child(file);
  // HDF5's flock is off, as in RunWriter: within one process HDF5 shares an open file between its
  // handles only when their locking settings agree (a reader beside this process's writer).
  h5::Handle fapl = h5::plist(H5P_FILE_ACCESS);
  if (H5Pset_file_locking(fapl.get(), false, true) < 0) h5::fail(name, "/", "prepare to open");
  // A SWMR reader retries metadata it cannot verify yet, waiting for the writer; the default (100
  // tries with growing sleeps) hangs for a very long time on a file whose writer was killed
  // mid-write. Bounded: such an object then reads as an error instead.
  if (H5Pset_metadata_read_attempts(fapl.get(), 12) < 0) h5::fail(name, "/", "prepare to open");
  h5::Handle f(H5Fopen(name.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get()), H5Fclose);
  if (!f)
    throw Error(
        "cannot open run file " + name + ": HDF5: " + h5::hdf5_reason(),
        "is it an Ablate run file? A file whose writer died while it was not SWMR writing stays marked open: resume the run, "
        "or run `h5clear -s " +
            name + "`");
  m.file = h5::Obj{std::move(f), name, "/"};
  try {
    m.root = schema::open_root(m.file);
    m.version = schema::check_format(m.root);
    m.info = schema::read_info(m.root);
    m.layout = schema::read_layout(m.root);
    for (schema::TableDef& def : schema::tables(m.layout)) {
      ReaderTable t;
      t.steps = schema::open_path(m.root, def.steps);
      for (const schema::ColumnDef& c : def.columns) t.columns.push_back(schema::open_path(m.root, c.path));
      t.def = std::move(def);
      m.tables.push_back(std::move(t));
    }
    m.resume_steps = schema::open_path(m.root, std::string(schema::kResumes) + "/step");
    m.resume_times = schema::open_path(m.root, std::string(schema::kResumes) + "/time");
  } catch (const Error& e) {  // a value the schema refuses (a damaged attribute): name the file once
    if (std::string_view(e.what()).find(name) != std::string_view::npos) throw;
    throw Error("run file " + name + ": " + e.what(), e.hint());
  }
}

RunReader::RunReader(RunReader&&) noexcept = default;
RunReader& RunReader::operator=(RunReader&&) noexcept = default;
RunReader::~RunReader() = default;

const fs::path& RunReader::path() const { return impl_->path; }
std::int64_t RunReader::format_version() const { return impl_->version; }
const RunInfo& RunReader::info() const { return impl_->info; }
const RunLayout& RunReader::layout() const { return impl_->layout; }

RunState RunReader::state() const {
  h5::Quiet quiet;
  if (H5Orefresh(impl_->root.id()) < 0) h5::fail(impl_->path.string(), "/", "refresh");
  return schema::read_state(impl_->root);
}

std::vector<ResumeRecord> RunReader::resumes() const {
  h5::Quiet quiet;
  const std::vector<const h5::Obj*> datasets{&impl_->resume_steps, &impl_->resume_times};
  const schema::TableRows r = schema::consistent_rows(datasets, true, {}, false);
  const std::vector<std::string> times = h5::read_string_rows(impl_->resume_times, 0, r.rows);
  std::vector<ResumeRecord> out;
  for (std::size_t i = 0; i < r.rows; ++i) out.push_back({r.steps[i], times[i]});
  return out;
}

bool RunReader::records_evaluations() const {
  h5::Quiet quiet;
  return h5::has_link(impl_->root, schema::kEvals + 1);
}

std::vector<EvalRecord> RunReader::evaluations() const {
  h5::Quiet quiet;
  Impl& m = *impl_;
  if (!records_evaluations()) return {};
  const schema::EvalDatasets e = schema::open_evals(m.root);
  const schema::TableRows r = schema::consistent_rows(e.all(), true, {}, false);
  const std::vector<std::string> n = h5::read_string_rows(e.name, 0, r.rows), s = h5::read_string_rows(e.scores, 0, r.rows),
                                 t = h5::read_string_rows(e.time, 0, r.rows);
  std::vector<EvalRecord> out;
  for (std::size_t i = 0; i < r.rows; ++i) out.push_back({n[i], r.steps[i], s[i], t[i]});
  return out;
}

bool RunReader::writer_alive() const { return schema::writer_lock_held(impl_->path); }

MetricTable RunReader::metrics(MetricSplit split) const {
  h5::Quiet quiet;
  const std::size_t index = split == MetricSplit::Train ? schema::kTrainTable : schema::kEvalTable;
  schema::TableRows r = impl_->rows(index);
  MetricTable t;
  t.names = split == MetricSplit::Train ? impl_->layout.train_metrics : impl_->layout.eval_metrics;
  t.steps = std::move(r.steps);
  t.stored_rows = r.stored;
  for (const h5::Obj& c : impl_->tables[index].columns) {
    std::vector<double> v(r.rows);
    h5::read_rows(c, 0, r.rows, H5T_NATIVE_DOUBLE, v.data());
    t.columns.push_back(std::move(v));
  }
  return t;
}

std::vector<std::int64_t> RunReader::attention_steps() const {
  h5::Quiet quiet;
  return impl_->rows(schema::kAttentionTable).steps;
}

std::size_t RunReader::attention_slot(std::string_view stack, std::string_view kind, std::int64_t layer) const {
  const std::vector<AttentionSlot>& slots = impl_->layout.attention;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].stack == stack && slots[i].kind == kind && slots[i].layer == layer) return i;
  std::string known;
  for (const AttentionSlot& s : slots) known += (known.empty() ? "" : ", ") + s.path();
  throw Error("no attention slot " + std::string(stack) + "/" + std::string(kind) + "/layer_" + std::to_string(layer) + " in " +
                  impl_->path.string(),
              known.empty() ? "this run logged no attention" : "the run logged: " + known);
}

FloatTensor RunReader::attention(std::size_t slot, std::size_t log) const {
  h5::Quiet quiet;
  const RunLayout& l = impl_->layout;
  if (slot >= l.attention.size())
    throw Error("no attention slot " + std::to_string(slot) + " in " + impl_->path.string() + ": it has " +
                    std::to_string(l.attention.size()),
                "find a slot's index with attention_slot(stack, kind, layer)");
  const AttentionSlot& s = l.attention[slot];
  return impl_->read_float_row(schema::kAttentionTable, slot, log, to_shape({l.probe.examples, s.heads, s.queries, s.keys}));
}

DecodeRecord RunReader::decode(std::size_t log) const {
  h5::Quiet quiet;
  const RunLayout& l = impl_->layout;
  const DecodeLayout& d = l.decode;
  if (d.layers == 0)
    throw Error(impl_->path.string() + " has no decode logs", "decode logs are recorded for seq2seq models only");
  impl_->need_row(schema::kAttentionTable, log);
  const std::size_t first = l.attention.size();
  const std::vector<h5::Obj>& cols = impl_->tables[schema::kAttentionTable].columns;
  DecodeRecord r;
  r.tokens.resize(static_cast<std::size_t>(l.probe.examples * d.steps));
  r.lengths.resize(static_cast<std::size_t>(l.probe.examples));
  h5::read_rows(cols[first], log, 1, H5T_NATIVE_INT32, r.tokens.data());
  h5::read_rows(cols[first + 1], log, 1, H5T_NATIVE_INT32, r.lengths.data());
  for (std::int64_t i = 0; i < d.layers; ++i)
    r.cross.push_back(impl_->read_float_row(schema::kAttentionTable, first + 2 + static_cast<std::size_t>(i), log,
                                            to_shape({l.probe.examples, d.heads, d.steps, d.keys})));
  return r;
}

std::vector<std::int64_t> RunReader::stats_steps() const {
  h5::Quiet quiet;
  return impl_->rows(schema::kStatsTable).steps;
}

FloatTensor RunReader::stats(std::string_view name) const {
  h5::Quiet quiet;
  const std::vector<StatsTable>& s = impl_->layout.stats;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].name == name) return impl_->read_float_rows(schema::kStatsTable, i, static_cast<std::int64_t>(s[i].columns.size()));
  std::string known;
  for (const StatsTable& t : s) known += (known.empty() ? "" : ", ") + t.name;
  throw Error("no stats table '" + std::string(name) + "' in " + impl_->path.string(),
              known.empty() ? "this run logged no statistics" : "the run logged: " + known);
}

std::size_t RunReader::entropy_slot(std::string_view stack, std::string_view kind, std::int64_t layer) const {
  const std::vector<EntropySlot>& slots = impl_->layout.entropy;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].stack == stack && slots[i].kind == kind && slots[i].layer == layer) return i;
  std::string known;
  for (const EntropySlot& s : slots) known += (known.empty() ? "" : ", ") + s.path();
  throw Error("no attention entropy for " + std::string(stack) + "/" + std::string(kind) + "/layer_" + std::to_string(layer) +
                  " in " + impl_->path.string(),
              known.empty() ? "this run logged no attention entropy" : "the run logged: " + known);
}

FloatTensor RunReader::entropy(std::size_t slot) const {
  h5::Quiet quiet;
  const RunLayout& l = impl_->layout;
  if (slot >= l.entropy.size())
    throw Error("no entropy slot " + std::to_string(slot) + " in " + impl_->path.string() + ": it has " +
                    std::to_string(l.entropy.size()),
                "find a slot's index with entropy_slot(stack, kind, layer)");
  return impl_->read_float_rows(schema::kStatsTable, l.stats.size() + slot, l.entropy[slot].heads);
}

std::vector<std::int64_t> RunReader::sample_steps() const {
  h5::Quiet quiet;
  return impl_->rows(schema::kSamplesTable).steps;
}

SamplesRecord RunReader::samples(std::size_t row) const {
  h5::Quiet quiet;
  if (impl_->layout.samples.count == 0)
    throw Error(impl_->path.string() + " has no samples", "the run declared no decoded eval samples");
  const schema::TableRows r = impl_->rows(schema::kSamplesTable);
  impl_->need_row(schema::kSamplesTable, row);
  const std::vector<h5::Obj>& cols = impl_->tables[schema::kSamplesTable].columns;
  SamplesRecord s;
  s.step = r.steps[row];
  s.src = h5::read_string_rows(cols[0], row, 1);
  s.reference = h5::read_string_rows(cols[1], row, 1);
  s.prediction = h5::read_string_rows(cols[2], row, 1);
  return s;
}

}  // namespace ablate::results
