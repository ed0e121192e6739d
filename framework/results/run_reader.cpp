// RunReader (run_file.hpp): opens a run file read-only in SWMR mode (finished, live, or left by a
// killed writer) and reads tables with consistent row counts, refreshing metadata as it goes.
#include <algorithm>

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
      throw Error(
          "no row " + std::to_string(row) + " of the " + tables[index].def.what + " in " + path.string() + ": it has " + std::to_string(n),
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

RunReader::RunReader(const fs::path& file) : impl_(std::make_unique<Impl>()) {
  h5::Quiet quiet;
  Impl& m = *impl_;
  m.path = file;
  const std::string name = file.string();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error("cannot read run file " + name + ": no such file", "check the path; a run's file is <run dir>/run.h5");
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
    throw Error("cannot open run file " + name + ": HDF5: " + h5::hdf5_reason(),
                "is it an Ablate run file? A file whose writer died while it was not SWMR writing stays marked open: resume the run, "
                "or run `h5clear -s " +
                    name + "`");
  m.file = h5::Obj{std::move(f), name, "/"};
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
  const schema::TableRows r = schema::consistent_rows(datasets, true);
  const std::vector<std::string> times = h5::read_string_rows(impl_->resume_times, 0, r.rows);
  std::vector<ResumeRecord> out;
  for (std::size_t i = 0; i < r.rows; ++i) out.push_back({r.steps[i], times[i]});
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
    throw Error(
        "no attention slot " + std::to_string(slot) + " in " + impl_->path.string() + ": it has " + std::to_string(l.attention.size()),
        "find a slot's index with attention_slot(stack, kind, layer)");
  const AttentionSlot& s = l.attention[slot];
  return impl_->read_float_row(schema::kAttentionTable, slot, log, to_shape({l.probe.examples, s.heads, s.queries, s.keys}));
}

DecodeRecord RunReader::decode(std::size_t log) const {
  h5::Quiet quiet;
  const RunLayout& l = impl_->layout;
  const DecodeLayout& d = l.decode;
  if (d.layers == 0) throw Error(impl_->path.string() + " has no decode logs", "decode logs are recorded for seq2seq models only");
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
  throw Error("no attention entropy for " + std::string(stack) + "/" + std::string(kind) + "/layer_" + std::to_string(layer) + " in " +
                  impl_->path.string(),
              known.empty() ? "this run logged no attention entropy" : "the run logged: " + known);
}

FloatTensor RunReader::entropy(std::size_t slot) const {
  h5::Quiet quiet;
  const RunLayout& l = impl_->layout;
  if (slot >= l.entropy.size())
    throw Error("no entropy slot " + std::to_string(slot) + " in " + impl_->path.string() + ": it has " + std::to_string(l.entropy.size()),
                "find a slot's index with entropy_slot(stack, kind, layer)");
  return impl_->read_float_rows(schema::kStatsTable, l.stats.size() + slot, l.entropy[slot].heads);
}

std::vector<std::int64_t> RunReader::sample_steps() const {
  h5::Quiet quiet;
  return impl_->rows(schema::kSamplesTable).steps;
}

SamplesRecord RunReader::samples(std::size_t row) const {
  h5::Quiet quiet;
  if (impl_->layout.samples.count == 0) throw Error(impl_->path.string() + " has no samples", "the run declared no decoded eval samples");
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
