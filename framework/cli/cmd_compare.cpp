// `ablate compare DIR...`: reads every run.h5 under the directories, groups the runs into arms by
// the spec keys that vary, reduces each run to one value (--summary), tests each arm against the
// baseline and fits the factorial model; prints the tables and writes the reports
// (framework/analysis/report_files does the work; this file parses the command line).
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>

#include "ablate/error.hpp"
#include "analysis/report.hpp"
#include "analysis/report_files.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "core/text.hpp"
#include "sweep/manifest.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

// What the sweep directories' manifests say about comparing their runs: the base configuration,
// when every given sweep directory agrees on one (run files given directly say nothing), and the
// keys tuned per arm (sweep.tune), which are no arm axes.
struct SweepDefaults {
  std::string baseline;
  std::vector<std::string> tuned_keys;
};
SweepDefaults sweep_defaults(const std::vector<std::string>& dirs, std::ostream& err) {
  SweepDefaults found;
  bool agree = true;
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir) || !fs::exists(fs::path(dir) / sweep::kManifestFile)) continue;
    sweep::Manifest m;
    try {
      m = sweep::read_manifest(dir);
    } catch (const Error& e) {  // the runs can still be compared: only the defaults are lost
      err << "ablate compare: warning: " << e.what() << "; the first arm is the baseline unless --baseline names one\n";
      return {};
    }
    for (const std::string& k : m.tuned_keys)
      if (std::find(found.tuned_keys.begin(), found.tuned_keys.end(), k) == found.tuned_keys.end()) found.tuned_keys.push_back(k);
    agree = agree && !m.baseline.empty() && (found.baseline.empty() || found.baseline == m.baseline);
    found.baseline = m.baseline;
  }
  if (!agree) found.baseline.clear();
  return found;
}

}  // namespace

void print_analysis(const analysis::Analysis& a, const std::string& format, const char* command, std::ostream& out,
                    std::ostream& err) {
  // Labels and notes may quote a damaged run file's bytes: printed as valid UTF-8.
  out << valid_utf8(format == "latex" ? analysis::format_latex(a.comparison) : analysis::format_table(a.comparison)) << "\n";
  for (const fs::path& file : a.written) out << "wrote " << file.string() << "\n";
  for (const auto& note : a.notes) err << command << ": " << valid_utf8(note) << "\n";
}

int cmd_compare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate compare DIR... [options]\n\n"
      "Reads every run.h5 under the directories (or run files given directly), groups the runs into\n"
      "arms by the spec keys that vary between them (train.seed is a replicate), reduces each run to\n"
      "one value (--summary), and prints per arm mean ± sd, the difference to the baseline with its\n"
      "confidence interval, p (Welch, or paired by seed when every arm ran the same seeds) with Holm's\n"
      "correction, and the seeds that would detect the observed difference; for a grid of two or more\n"
      "keys, each key's main effect and the two-way interactions from one linear model over all runs.\n"
      "Writes report.md, report.html (figures inline), summary.csv, summary.json and table.tex into --out.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("dirs", po::value<std::vector<std::string>>()->composing(), "run directories or run files (positional)")
      ("baseline,b", po::value<std::string>(),
       "the baseline arm, KEY=VALUE[,KEY=VALUE] (default: the sweep's base configuration, from its sweep.yaml; "
       "else the first arm)")
      ("metric,m", po::value<std::string>(),
       "eval metric to compare (default: the early-stopping metric the runs share, else exact_match if recorded, "
       "else loss)")
      ("summary,s", po::value<std::string>(),
       "how a run becomes one value: final | best | last:K | auc | steps_to:TARGET | time_to:TARGET (default: "
       "steps_to:TARGET when the runs early-stop on the metric at one target, else final)")
      ("scale", po::value<std::string>(),
       "KEY[,KEY]: the keys that set the model's size (e.g. model.d_model,model.layers, swept together with "
       "sweep.zip): per series of arms that differ only in them, the value against non-embedding parameters N, fitted "
       "as E + A N^-alpha, and whether the ranking changes with size (docs/analysis.md, \"Across model sizes\")")
      ("cost-tolerance", po::value<double>()->default_value(0.05, "0.05"),
       "a note when arms differ by more than this fraction in non-embedding parameters or training FLOPs per "
       "token (docs/training.md, \"Compute\")")
      ("format,f", po::value<std::string>()->default_value("text"), "what to print: text | latex")
      ("out,o", po::value<std::string>(), "where to write the reports (default: the first DIR)");
  // clang-format on
  add_curve_axis_option(options);
  po::variables_map vm;
  if (!parse_command("compare", options, args, {"dirs", -1}, vm, out)) return kExitOk;  // --help
  if (!vm.count("dirs"))
    throw UsageError("ablate compare: no run directory given",
                     "usage: ablate compare DIR... [--baseline key=value] [--metric M]");
  const std::vector<std::string> dirs = vm["dirs"].as<std::vector<std::string>>();
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "latex")
    throw UsageError("ablate compare: unknown --format '" + format + "'", "allowed: text, latex");

  analysis::CompareOptions opts;
  if (vm.count("metric")) opts.metric = vm["metric"].as<std::string>();
  const SweepDefaults defaults = sweep_defaults(dirs, err);
  opts.baseline = vm.count("baseline") ? vm["baseline"].as<std::string>() : defaults.baseline;
  opts.tuned_keys = defaults.tuned_keys;
  opts.baseline_is_default = !vm.count("baseline");
  if (vm.count("summary")) opts.summary = analysis::parse_run_value(vm["summary"].as<std::string>());
  if (vm.count("scale")) {
    std::istringstream keys(vm["scale"].as<std::string>());
    for (std::string key; std::getline(keys, key, ',');)
      if (!key.empty()) opts.scale_keys.push_back(key);
  }
  opts.cost_tolerance = vm["cost-tolerance"].as<double>();
  if (!(opts.cost_tolerance >= 0) || !std::isfinite(opts.cost_tolerance))
    throw UsageError("ablate compare: --cost-tolerance " + number_text(opts.cost_tolerance) + " is not a fraction >= 0",
                     "e.g. --cost-tolerance 0.05 (5%)");

  const fs::path out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path(dirs.front());
  const analysis::CurveAxis curves_x = curve_axis(vm, "compare");
  const analysis::Analysis a =
      analysis::analyse(std::vector<fs::path>(dirs.begin(), dirs.end()), opts, out_dir, std::nullopt, curves_x);
  print_analysis(a, format, "ablate compare", out, err);
  return kExitOk;
}

}  // namespace ablate::cli
