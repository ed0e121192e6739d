// The comparison as files (see report_files.hpp): loading runs, comparing, writing the reports
// atomically so that an interrupted write never leaves half a report.
#include "analysis/report_files.hpp"

#include "ablate/error.hpp"
#include "analysis/report.hpp"
#include "analysis/run_summary.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"

namespace ablate::analysis {
namespace fs = std::filesystem;

LoadedRuns load_runs(const std::vector<fs::path>& paths) {
  const std::vector<fs::path> files = find_runs(paths);
  results::vet_run_files(files);  // one child reads them all first: a damaged file cannot crash this process
  LoadedRuns out;
  for (const fs::path& file : files) {
    try {
      out.runs.push_back(summarize(results::RunReader(file)));
    } catch (const std::exception& e) {
      out.unreadable.push_back(file.string() + ": " + e.what());
    }
  }
  if (out.runs.empty()) {
    std::vector<std::string> names;
    for (const auto& p : paths) names.push_back(p.string());
    throw UsageError("no readable run.h5 under " + join(names, ", ") +
                         (files.empty() ? "" : " (" + std::to_string(files.size()) + " found, none readable)"),
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");
  }
  return out;
}

Comparison compare_runs(const LoadedRuns& loaded, const CompareOptions& options) {
  Comparison c;
  try {
    c = compare(loaded.runs, options);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what(), e.hint());  // a metric or baseline that matches nothing is a command-line mistake
  }
  if (!loaded.unreadable.empty())
    c.notes.push_back(std::to_string(loaded.unreadable.size()) + " unreadable run file(s) left out of every arm: " +
                      join(loaded.unreadable, "; "));
  return c;
}

std::vector<fs::path> write_reports(const Comparison& c, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("cannot create " + out_dir.string() + ": " + ec.message(), "pass a writable directory with --out");
  std::vector<fs::path> written;
  const auto put = [&](const char* name, const std::string& text) {
    write_file_atomically(out_dir / name, text);
    written.push_back(out_dir / name);
  };
  put("report.md", report_markdown(c));
  put("report.html", report_html(c, {}, {}));
  put("summary.csv", summary_csv(c));
  put("summary.json", summary_json(c));
  put("table.tex", format_latex(c));
  return written;
}

}  // namespace ablate::analysis
