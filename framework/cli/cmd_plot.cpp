// `ablate plot DIR...`: the figures of a sweep, from its run files. The figures themselves are
// analysis::draw_figures (analysis/figures.hpp); this is the command line around it: options,
// finding the run files, printing what was written and the notes.
#include <ostream>

#include "ablate/error.hpp"
#include "analysis/figures.hpp"
#include "analysis/run_summary.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "core/text.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

int cmd_plot(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate plot DIR... [options]\n\n"
      "Draws the figures of the runs under the directories (arms: the runs grouped by the spec keys that vary,\n"
      "seeds are replicates; legends name each arm by its values, the subtitle names the keys):\n"
      "  curves_<metric>, curves_train_loss  each eval metric and the train loss per arm (mean over seeds, min–max band)\n"
      "  attention_<stack>_<kind>            one run's attention on probe example 0, layers × heads (--run, --step)\n"
      "  decode_cross                        that run's decode-step × source cross-attention (seq2seq)\n"
      "  entropy                             final attention entropy per head, mean ± std over seeds per arm\n"
      "  head_scores                         heads × arms: diagonal, previous-token, first-token, induction (where the\n"
      "                                      probe repeats tokens), normalized distance and entropy; mean over seeds\n"
      "  head_differences                    the heads whose maps differ most (Jensen–Shannon distance) between the\n"
      "                                      baseline arm and the arm most different from it, side by side\n"
      "  rollout_<stack>                     attention rollout through each stack's self-attention, one panel per arm\n"
      "The head figures use each run's last attention log (see docs/analysis.md).\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("dirs", po::value<std::vector<std::string>>()->composing(), "run directories or run files (positional)")
      ("out,o", po::value<std::string>(), "where to write the figures (default: <first DIR>/figures)")
      ("run,r", po::value<std::string>(), "the run whose attention to draw: its directory or run.h5 (default: the first run found)")
      ("step", po::value<std::int64_t>(), "the attention log to draw, by training step (default: the last logged)")
      ("baseline,b", po::value<std::string>(), "the baseline arm of head_differences, KEY=VALUE[,KEY=VALUE] (default: the first arm)")
      ("format,f", po::value<std::string>()->default_value("png"), "figure format: png | svg");
  // clang-format on
  add_curve_axis_option(options);
  po::variables_map vm;
  if (!parse_command("plot", options, args, {"dirs", -1}, vm, out)) return kExitOk;  // --help
  if (!vm.count("dirs"))
    throw UsageError("ablate plot: no run directory given", "usage: ablate plot DIR... [--out DIR] [--run RUN]");
  const std::vector<std::string> dirs = vm["dirs"].as<std::vector<std::string>>();

  analysis::FigureOptions opts;
  opts.format = vm["format"].as<std::string>();
  if (opts.format != "png" && opts.format != "svg")
    throw UsageError("ablate plot: unknown --format '" + opts.format + "'", "allowed: png, svg");
  opts.out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path(dirs.front()) / "figures";
  if (vm.count("run")) opts.attention_run = fs::path(vm["run"].as<std::string>());
  if (vm.count("step")) opts.attention_step = vm["step"].as<std::int64_t>();
  if (vm.count("baseline")) opts.baseline = vm["baseline"].as<std::string>();
  opts.x = curve_axis(vm, "plot");

  const std::vector<fs::path> files = analysis::find_runs(std::vector<fs::path>(dirs.begin(), dirs.end()));
  if (files.empty())
    throw UsageError("ablate plot: no run.h5 under " + join(dirs, ", "),
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");
  analysis::FigureReport report;
  try {
    report = analysis::draw_figures(files, opts);
  } catch (const UsageError& e) {
    throw UsageError(std::string("ablate plot: ") + e.what(), e.hint());
  }
  for (const std::string& note : report.notes) err << "ablate plot: " << valid_utf8(note) << "\n";
  for (const fs::path& f : report.written) out << "wrote " << f.string() << "\n";
  return kExitOk;
}

}  // namespace ablate::cli
