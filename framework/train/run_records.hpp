// What a run leaves in its directory until the HDF5 recorder arrives: train.csv and eval.csv
// (one row per logged step, appended and flushed as training goes) and run.json (status, final
// metrics, versions), rewritten atomically at every change of state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ablate::train {

// A CSV table "step,<columns...>" appended one row at a time (flushed after each row).
class CsvLog {
 public:
  // Starts `file` with its header, or, with `resume_step`, keeps the existing rows up to and
  // including that step (rows written after the checkpoint a run resumes from are dropped, so
  // the table continues exactly where the resumed state is). Throws ablate::Error if the file
  // cannot be written, or its header differs from `columns` on resume.
  CsvLog(std::filesystem::path file, std::vector<std::string> columns, std::optional<std::int64_t> resume_step);
  // values: one per column, written with round-trip precision (NaN as "nan").
  void row(std::int64_t step, const std::vector<double>& values);
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  std::filesystem::path file_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

// Reads a CsvLog file back: column name -> values, plus "step" (for tests and tools).
std::map<std::string, std::vector<double>> read_csv_log(const std::filesystem::path& file);

// Writes `text` to `file` through a temporary file and a rename (readers never see half a file).
void write_file_atomically(const std::filesystem::path& file, const std::string& text);

// Shortest text that reads back as the same double ("0.1", "1e-05", "nan", "inf").
std::string number_text(double v);

}  // namespace ablate::train
