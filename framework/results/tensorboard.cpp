// TensorBoard event files (tensorboard.hpp): TFRecord framing, the few protobuf messages an
// event needs (Event, Summary, SummaryMetadata, TensorProto, SessionLog) encoded by hand, and
// the tags a run's metrics, statistics, samples and spec get.
#include "results/tensorboard.hpp"

#include <unistd.h>

#include <system_error>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <utility>

#include "ablate/error.hpp"

namespace ablate::results {
namespace fs = std::filesystem;

// ---- CRC-32C -------------------------------------------------------------------------------
std::uint32_t crc32c(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli polynomial
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes) crc = table[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(std::string_view bytes) {
  const std::uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

// ---- protobuf wire format ------------------------------------------------------------------
namespace {

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire_type) { varint(out, static_cast<std::uint64_t>(field << 3 | wire_type)); }
void bytes_field(std::string& out, int field, std::string_view value) {
  key(out, field, 2);
  varint(out, value.size());
  out.append(value);
}
void varint_field(std::string& out, int field, std::uint64_t v) {
  key(out, field, 0);
  varint(out, v);
}
template <class T>
void fixed_field(std::string& out, int field, T v) {  // float: wire type 5; double: wire type 1 (little-endian hosts)
  key(out, field, sizeof(T) == 4 ? 5 : 1);
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.append(raw, sizeof(T));
}

// Event { wall_time = 1; step = 2; file_version = 3 | summary = 5 | session_log = 7 }
std::string event(double wall_time, std::int64_t step) {
  std::string e;
  fixed_field(e, 1, wall_time);
  if (step != 0) varint_field(e, 2, static_cast<std::uint64_t>(step));
  return e;
}

// Summary { repeated Value value = 1 }, Value { tag = 1; simple_value = 2 | tensor = 8; metadata = 9 }
std::string summary_event(double wall_time, std::int64_t step, const std::string& value) {
  std::string summary;
  bytes_field(summary, 1, value);
  std::string e = event(wall_time, step);
  bytes_field(e, 5, summary);
  return e;
}

// The step of an encoded Event (field 2); 0 when absent; -1 when the bytes do not parse.
std::int64_t event_step(std::string_view e) {
  std::size_t i = 0;
  auto read_varint = [&](std::uint64_t& v) {
    v = 0;
    for (int shift = 0; i < e.size() && shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(e[i++]);
      v |= std::uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  std::int64_t step = 0;
  while (i < e.size()) {
    std::uint64_t k = 0, v = 0;
    if (!read_varint(k)) return -1;
    switch (k & 7) {
      case 0:
        if (!read_varint(v)) return -1;
        if ((k >> 3) == 2) step = static_cast<std::int64_t>(v);
        break;
      case 1: i += 8; break;
      case 5: i += 4; break;
      case 2:
        if (!read_varint(v) || v > e.size() - i) return -1;
        i += v;
        break;
      default: return -1;
    }
  }
  return i == e.size() ? step : -1;
}

// How many leading bytes of an event file hold whole, intact records of steps <= `step`.
std::size_t records_through(std::string_view data, std::int64_t step) {
  std::size_t at = 0;
  while (data.size() - at >= 12) {
    std::uint64_t n = 0;
    std::uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&n, data.data() + at, 8);
    std::memcpy(&len_crc, data.data() + at + 8, 4);
    if (len_crc != masked_crc32c(data.substr(at, 8)) || n > data.size() - at - 16) break;
    const std::string_view e = data.substr(at + 12, n);
    std::memcpy(&data_crc, data.data() + at + 12 + n, 4);
    const std::int64_t s = event_step(e);
    if (data_crc != masked_crc32c(e) || s < 0 || s > step) break;
    at += 16 + n;
  }
  return at;
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (const char ch : s) out += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string(" ") : std::string(1, ch);
  return out.empty() ? " " : out;
}

}  // namespace

double wall_time_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// ---- EventFile -----------------------------------------------------------------------------
EventFile::EventFile(fs::path path, std::FILE* f, fs::path partial)
    : path_(std::move(path)), partial_(std::move(partial)), file_(f) {}
EventFile::EventFile(EventFile&& o) noexcept
    : path_(std::move(o.path_)), partial_(std::exchange(o.partial_, {})), file_(std::exchange(o.file_, nullptr)) {}
EventFile& EventFile::operator=(EventFile&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    partial_ = std::exchange(o.partial_, {});
    file_ = std::exchange(o.file_, nullptr);
  }
  return *this;
}
EventFile::~EventFile() { close(); }

void EventFile::close() noexcept {
  if (file_) std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  if (!partial_.empty()) fs::remove(partial_, ec);  // never published: no half file under an event file's name
  partial_.clear();
}

EventFile EventFile::create(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const double now = wall_time_now();
  const std::string tail = std::to_string(static_cast<std::int64_t>(now)) + "." + host_name() + "." + std::to_string(::getpid());
  const fs::path path = dir / ("events.out.tfevents." + tail);
  // Written first under a name TensorBoard does not read ("tfevents" is what it looks for).
  const fs::path partial = dir / (".events-partial." + tail);
  if (!ec && fs::exists(path, ec)) ec = std::make_error_code(std::errc::file_exists);
  std::FILE* f = ec ? nullptr : std::fopen(partial.c_str(), "wbx");  // x: never over an existing file
  if (!f)
    throw Error("cannot create the TensorBoard event file " + path.string() + ": " +
                    (ec ? ec.message() : std::string(std::strerror(errno))),
                "check that the directory is writable");
  EventFile file(path, f, partial);
  std::string version = event(now, 0);
  bytes_field(version, 3, "brain.Event:2");
  file.record(version);
  file.flush();
  return file;
}

EventFile EventFile::resume(const fs::path& dir, std::int64_t step) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) found.push_back(entry.path());
  if (found.empty()) {
    EventFile fresh = create(dir);
    fresh.publish();
    return fresh;
  }
  // The newest: names start with the creation second (same width for centuries).
  const fs::path path = *std::max_element(found.begin(), found.end());
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  if (!f)
    throw Error("cannot reopen the TensorBoard event file " + path.string() + ": " + std::strerror(errno),
                "check that the run's folder is writable");
  EventFile file(path, f, {});
  std::string data;
  char buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) data.append(buf, n);
  const std::size_t keep = records_through(data, step);
  if (::ftruncate(::fileno(f), static_cast<off_t>(keep)) != 0 || std::fseek(f, 0, SEEK_END) != 0)
    throw Error("cannot cut the TensorBoard event file " + path.string() + " back to step " + std::to_string(step) + ": " +
                    std::strerror(errno),
                "check that the run's folder is writable");
  return file;
}

void EventFile::record(const std::string& event) {
  // TFRecord: uint64 length, masked CRC-32C of the length's bytes, the data, masked CRC-32C of it.
  std::string r;
  const std::uint64_t n = event.size();
  r.append(reinterpret_cast<const char*>(&n), 8);
  const std::uint32_t len_crc = masked_crc32c(std::string_view(r.data(), 8));
  r.append(reinterpret_cast<const char*>(&len_crc), 4);
  r += event;
  const std::uint32_t data_crc = masked_crc32c(event);
  r.append(reinterpret_cast<const char*>(&data_crc), 4);
  if (std::fwrite(r.data(), 1, r.size(), file_) != r.size())
    throw Error("cannot write the TensorBoard event file " + path_.string() + ": " + std::strerror(errno),
                "check the disk space");
}

void EventFile::scalar(std::int64_t step, const std::string& tag, float value, double wall_time) {
  std::string v;
  bytes_field(v, 1, tag);
  fixed_field(v, 2, value);
  record(summary_event(wall_time, step, v));
}

void EventFile::text(std::int64_t step, const std::string& tag, const std::string& markdown, double wall_time) {
  std::string tensor;  // TensorProto { dtype = 1: DT_STRING (7); tensor_shape = 2: scalar; string_val = 8 }
  varint_field(tensor, 1, 7);
  bytes_field(tensor, 2, "");
  bytes_field(tensor, 8, markdown);
  std::string plugin;  // SummaryMetadata { plugin_data = 1 { plugin_name = 1: "text" } }
  bytes_field(plugin, 1, "text");
  std::string metadata;
  bytes_field(metadata, 1, plugin);
  std::string v;
  bytes_field(v, 1, tag);
  bytes_field(v, 8, tensor);
  bytes_field(v, 9, metadata);
  record(summary_event(wall_time, step, v));
}

void EventFile::flush() {
  if (std::fflush(file_) != 0)
    throw Error("cannot write the TensorBoard event file " + path_.string() + ": " + std::strerror(errno),
                "check the disk space");
}

void EventFile::publish() {
  if (partial_.empty()) return;
  flush();
  std::error_code ec;
  fs::rename(partial_, path_, ec);
  if (ec)
    throw Error("cannot write the TensorBoard event file " + path_.string() + ": " + ec.message(),
                "check that the directory is writable");
  partial_.clear();
}

// ---- a run's rows --------------------------------------------------------------------------
void tensorboard_metrics(EventFile& f, std::string_view split, const std::vector<std::string>& names, std::int64_t step,
                         std::span<const double> values, double wall_time) {
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
    if (std::isfinite(values[i])) f.scalar(step, std::string(split) + "/" + names[i], static_cast<float>(values[i]), wall_time);
}

void tensorboard_metrics(EventFile& f, std::string_view split, const std::map<std::string, double>& values, std::int64_t step,
                         double wall_time) {
  for (const auto& [name, value] : values)
    if (std::isfinite(value)) f.scalar(step, std::string(split) + "/" + name, static_cast<float>(value), wall_time);
}

void tensorboard_stats(EventFile& f, const RunLayout& layout, std::int64_t step, const StatsLog& log, double wall_time) {
  for (std::size_t t = 0; t < layout.stats.size() && t < log.tables.size(); ++t)
    for (std::size_t c = 0; c < layout.stats[t].columns.size() && c < log.tables[t].size(); ++c)
      if (std::isfinite(log.tables[t][c]))
        f.scalar(step, "stats/" + layout.stats[t].name + "/" + layout.stats[t].columns[c], log.tables[t][c], wall_time);
  for (std::size_t s = 0; s < layout.entropy.size() && s < log.entropy.size(); ++s) {
    const EntropySlot& e = layout.entropy[s];
    const std::string tag = "attention_entropy/" + e.stack + "." + e.kind + ".layer_" + std::to_string(e.layer) + "/head_";
    for (std::size_t h = 0; h < log.entropy[s].size(); ++h)
      if (std::isfinite(log.entropy[s][h])) f.scalar(step, tag + std::to_string(h), log.entropy[s][h], wall_time);
  }
}

void tensorboard_samples(EventFile& f, std::int64_t step, const SamplesLog& log, double wall_time) {
  if (log.prediction.empty()) return;
  const bool src = !log.src.empty();
  std::string md = src ? "| source | reference | prediction |\n|---|---|---|\n" : "| reference | prediction |\n|---|---|\n";
  for (std::size_t i = 0; i < log.prediction.size(); ++i) {
    md += "| ";
    if (src) md += markdown_cell(i < log.src.size() ? log.src[i] : "") + " | ";
    md += markdown_cell(i < log.reference.size() ? log.reference[i] : "") + " | " + markdown_cell(log.prediction[i]) + " |\n";
  }
  f.text(step, "samples", md, wall_time);
}

void tensorboard_spec(EventFile& f, const RunInfo& info, double wall_time) {
  std::string md = "run " + info.run_id + " · " + info.experiment + " · seed " + std::to_string(info.seed) + " · " +
                   info.backend + " · code " + (info.code_id.empty() ? std::string("(not recorded)") : info.code_id) + "\n\n";
  std::size_t start = 0;  // the resolved spec as a Markdown code block: every line indented by four
  const std::string& y = info.resolved_spec_yaml;
  while (start < y.size()) {
    const std::size_t end = y.find('\n', start);
    md += "    " + y.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  f.text(0, "spec", md, wall_time);
}

fs::path export_tensorboard(const RunReader& run, const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().filename().string().find("tfevents") != std::string::npos)
        throw UsageError("ablate export: " + dir.string() + " already holds a TensorBoard event file (" +
                             entry.path().filename().string() + ")",
                         "a run is exported once (TensorBoard would show its rows twice): name another folder with --out");
  const RunInfo& info = run.info();
  const RunLayout& layout = run.layout();
  const double start = iso8601_seconds(info.created);
  const MetricTable train = run.metrics(MetricSplit::Train), eval = run.metrics(MetricSplit::Eval);
  const std::vector<double>* elapsed = train.find("elapsed_s");
  // A row's wall time: the start plus the elapsed seconds of the last train row at or before it
  // (train steps increase strictly).
  auto wall = [&](std::int64_t step) {
    const auto after = std::upper_bound(train.steps.begin(), train.steps.end(), step);
    if (!elapsed || after == train.steps.begin()) return start;
    const double e = (*elapsed)[static_cast<std::size_t>(after - train.steps.begin() - 1)];
    return std::isfinite(e) ? start + e : start;
  };

  EventFile f = EventFile::create(dir);
  tensorboard_spec(f, info, start);
  for (const MetricSplit split : {MetricSplit::Train, MetricSplit::Eval}) {
    const MetricTable& table = split == MetricSplit::Train ? train : eval;
    std::vector<double> row(table.names.size());
    for (std::size_t r = 0; r < table.steps.size(); ++r) {
      for (std::size_t c = 0; c < table.names.size(); ++c) row[c] = table.columns[c][r];
      tensorboard_metrics(f, split == MetricSplit::Train ? "train" : "eval", table.names, table.steps[r], row,
                          wall(table.steps[r]));
    }
  }
  const std::vector<std::int64_t> stats_steps = run.stats_steps();
  std::vector<FloatTensor> tables, entropy;
  for (const StatsTable& t : layout.stats) tables.push_back(run.stats(t.name));
  for (std::size_t s = 0; s < layout.entropy.size(); ++s) entropy.push_back(run.entropy(s));
  for (std::size_t r = 0; r < stats_steps.size(); ++r) {
    StatsLog log;
    auto row = [r](const FloatTensor& t) {
      const auto n = static_cast<std::size_t>(t.shape.size() == 2 ? t.shape[1] : 0);
      return r * n + n <= t.values.size() ? std::span<const float>(t.values.data() + r * n, n) : std::span<const float>();
    };
    for (const auto& t : tables) log.tables.push_back(row(t));
    for (const auto& e : entropy) log.entropy.push_back(row(e));
    tensorboard_stats(f, layout, stats_steps[r], log, wall(stats_steps[r]));
  }
  const std::vector<std::int64_t> sample_steps = run.sample_steps();
  for (std::size_t r = 0; r < sample_steps.size(); ++r) {
    SamplesRecord s = run.samples(r);
    tensorboard_samples(f, s.step, {std::move(s.src), std::move(s.reference), std::move(s.prediction)}, wall(s.step));
  }
  f.publish();
  return f.path();
}

}  // namespace ablate::results
