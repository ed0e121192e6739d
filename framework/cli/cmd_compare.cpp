// `ablate compare DIR...`: reads every run.h5 under the directories, groups the runs into arms by
// the spec keys that vary, aggregates seeds and tests each arm against a baseline; prints the
// table and writes report.md, summary.csv and summary.json (framework/analysis does the work).
#include <ostream>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"
#include "analysis/report.hpp"
#include "analysis/run_summary.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;


int cmd_compare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options("ablate compare DIR... [options]\n\n"
                                  "Reads every run.h5 under the directories (or run files given directly), groups the\n"
                                  "runs into arms by the spec keys that vary between them (train.seed is a replicate),\n"
                                  "and prints mean ± std (n) of the metric per arm, the difference to the baseline arm\n"
                                  "with Welch's t-test, diverged/failed counts, steps-to-threshold and tokens/s.\n"
                                  "Writes report.md, summary.csv and summary.json into --out.\n\nOptions");
  options.add_options()
      ("help,h", "show this help")
      ("dirs", po::value<std::vector<std::string>>()->composing(), "run directories or run files (positional)")
      ("baseline,b", po::value<std::string>(), "the baseline arm, KEY=VALUE[,KEY=VALUE] (default: the first arm)")
      ("metric,m", po::value<std::string>(), "eval metric to compare (default: exact_match if recorded, else loss)")
      ("threshold,t", po::value<double>(), "report the first eval step at which the metric reaches this value")
      ("out,o", po::value<std::string>(), "where to write report.md, summary.csv, summary.json (default: the first DIR)");
  po::positional_options_description positional;
  positional.add("dirs", -1);
  const po::variables_map vm = parse_command("compare", options, args, positional);
  if (vm.count("help")) {
    out << options << "\n";
    return kExitOk;
  }
  if (!vm.count("dirs"))
    throw UsageError("ablate compare: no run directory given", "usage: ablate compare DIR... [--baseline key=value] [--metric M]");
  const std::vector<std::string> dirs = vm["dirs"].as<std::vector<std::string>>();

  const std::vector<fs::path> files = analysis::find_runs(std::vector<fs::path>(dirs.begin(), dirs.end()));
  results::vet_run_files(files);  // one child reads them all first: a damaged file cannot crash this process
  std::vector<analysis::RunSummary> runs;
  std::vector<std::string> unreadable;  // left out, and said so in the table's notes and the report
  for (const fs::path& file : files) {
    try {
      runs.push_back(analysis::summarize(results::RunReader(file)));
    } catch (const std::exception& e) {
      err << "ablate compare: warning: skipping unreadable run file " << file.string() << ": " << e.what() << "\n";
      unreadable.push_back(e.what());
    }
  }
  if (runs.empty()) {
    throw UsageError("ablate compare: no readable run.h5 under " + join(dirs, ", ") +
                         (files.empty() ? "" : " (" + std::to_string(files.size()) + " found, none readable)"),
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");
  }

  analysis::CompareOptions opts;
  if (vm.count("metric")) opts.metric = vm["metric"].as<std::string>();
  if (vm.count("baseline")) opts.baseline = vm["baseline"].as<std::string>();
  if (vm.count("threshold")) opts.threshold = vm["threshold"].as<double>();
  analysis::Comparison comparison;
  try {
    comparison = analysis::compare(runs, opts);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // A metric or baseline that matches nothing is a command-line mistake.
    throw UsageError(std::string("ablate compare: ") + e.what(), e.hint());
  }
  if (!unreadable.empty())
    comparison.notes.push_back(std::to_string(unreadable.size()) + " unreadable run file(s) left out of every arm: " +
                               join(unreadable, "; "));
  out << analysis::format_table(comparison);

  const fs::path out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path(dirs.front());
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("cannot create " + out_dir.string() + ": " + ec.message(), "pass a writable directory with --out");
  const fs::path md = out_dir / "report.md", csv = out_dir / "summary.csv", json = out_dir / "summary.json";
  write_file_atomically(md, analysis::report_markdown(comparison));
  write_file_atomically(csv, analysis::summary_csv(comparison));
  write_file_atomically(json, analysis::summary_json(comparison));
  out << "\nwrote " << md.string() << "\nwrote " << csv.string() << "\nwrote " << json.string() << "\n";
  return kExitOk;
}

}  // namespace ablate::cli
