// CSV metric tables and atomic small-file writes (run_records.hpp).
#include "train/run_records.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::train {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  return out;
}

std::string header_of(const std::vector<std::string>& columns) { return "step," + join(columns, ","); }

}  // namespace

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

CsvLog::CsvLog(std::filesystem::path file, std::vector<std::string> columns, std::optional<std::int64_t> resume_step)
    : file_(std::move(file)), columns_(std::move(columns)) {
  const std::string header = header_of(columns_);
  std::string kept = header + "\n";
  if (resume_step && std::filesystem::exists(file_)) {
    std::ifstream in(file_);
    std::string line;
    std::getline(in, line);
    if (line != header)
      throw Error("cannot resume " + file_.string() + ": its columns are '" + line + "', this run writes '" + header + "'",
                  "the spec's eval.metrics changed since the run started; resume with the same spec or start a new run");
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const std::int64_t step = std::stoll(line.substr(0, line.find(',')));
      if (step <= *resume_step) kept += line + "\n";
    }
  }
  write_file_atomically(file_, kept);
  out_.open(file_, std::ios::app);
  if (!out_) throw Error("cannot append to " + file_.string() + ": " + std::strerror(errno));
}

void CsvLog::row(std::int64_t step, const std::vector<double>& values) {
  std::string line = std::to_string(step);
  for (double v : values) line.append(",").append(number_text(v));
  out_ << line << "\n";
  out_.flush();
  if (!out_) throw Error("cannot write to " + file_.string() + ": " + std::strerror(errno), "is the disk full?");
}

std::map<std::string, std::vector<double>> read_csv_log(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> names = split_csv(line);
  std::map<std::string, std::vector<double>> out;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split_csv(line);
    for (std::size_t i = 0; i < names.size() && i < cells.size(); ++i) out[names[i]].push_back(std::strtod(cells[i].c_str(), nullptr));
  }
  return out;
}

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw Error("cannot write " + file.string() + ": " + why, "check the output directory exists and is writable");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw Error("cannot write " + file.string() + ": " + ec.message());
}

}  // namespace ablate::train
