// `ablate inspect RUN.h5 | RUN_DIR`: what a run file holds — identity, status, the last train and
// eval metrics, and every logged tensor with its shape. `--follow` keeps printing new metric rows
// of a live run (the file is read under SWMR) until it stops. What makes no sense in a readable
// file (a spec that is not YAML, steps that go back, all-NaN metrics) is said as warnings.
#include <chrono>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <thread>

#include <algorithm>
#include <cmath>

#include "ablate/error.hpp"
#include "analysis/run_summary.hpp"
#include "cli/cli.hpp"
#include "core/text.hpp"
#include "spec/spec_tree.hpp"
#include "cli/exit_codes.hpp"
#include "results/run_file.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace {

std::string shape_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Rows `from` .. end of a metric table, one line each: "train step 120: loss 0.51 lr 0.001 ...".
void print_rows(std::ostream& out, const char* split, const results::MetricTable& t, std::size_t from) {
  for (std::size_t r = from; r < t.steps.size(); ++r) {
    out << split << " step " << t.steps[r] << ":";
    for (std::size_t c = 0; c < t.names.size(); ++c) out << " " << t.names[c] << " " << std::setprecision(5) << t.columns[c][r];
    out << "\n";
  }
}

// "  parameters 237568 (non_embedding 233472: embeddings 4096, attention 99840, ...); 2.011e+06
// training FLOPs per token, 1.389e+11 over 69049 tokens" (docs/training.md, "Compute"), and the
// model.match_parameters line when the FFN width was matched; nothing for files written before the
// counts were recorded.
void print_compute(std::ostream& out, const results::RunInfo& info, const results::MetricTable& train) {
  if (info.parameter_kinds.size() < 2 || info.parameter_kinds.size() != info.parameter_counts.size()) return;
  out << "  parameters " << info.parameter_counts[0] << " (" << info.parameter_kinds[1] << " " << info.parameter_counts[1];
  for (std::size_t k = 2; k < info.parameter_kinds.size(); ++k)
    out << (k == 2 ? ": " : ", ") << info.parameter_kinds[k] << " " << info.parameter_counts[k];
  out << ")";
  const auto* tokens = train.find("tokens");
  const auto* flops = train.find("flops");
  if (tokens && flops && !tokens->empty() && tokens->back() > 0)
    out << "; " << std::setprecision(4) << flops->back() / tokens->back() << " training FLOPs per token, " << flops->back()
        << " over " << std::setprecision(12) << tokens->back() << " tokens";
  out << "\n";
  if (!info.parameter_match.empty()) out << "  " << info.parameter_match << "\n";
}

void print_summary(std::ostream& out, const results::RunReader& run) {
  const results::RunInfo& info = run.info();
  const results::RunState state = run.state();
  const results::RunLayout& layout = run.layout();
  out << run.path().string() << "\n"
      << "  experiment " << info.experiment << ", run " << info.run_id << ", seed " << info.seed << ", backend " << info.backend
      << "\n  status " << results::to_string(state.status) << " at step " << state.step
      << (state.reason.empty() ? "" : " (" + state.reason + ")")
      << (state.status == results::RunStatus::Running && !run.writer_alive() ? " — no writer holds the file: the run died" : "")
      << (info.precision.empty() ? "" : ", precision " + info.precision) << "\n  created " << info.created
      << (state.finished.empty() ? "" : ", finished " + state.finished) << "; ablate " << info.ablate_version << " (git "
      << info.git_revision << ") on " << info.host << "\n  plugins:";
  for (const std::string& p : info.plugins) out << " " << p << ";";
  out << "\n";
  print_compute(out, info, run.metrics(results::MetricSplit::Train));
  for (const auto& [name, split] :
       {std::pair{"train", results::MetricSplit::Train}, std::pair{"eval", results::MetricSplit::Eval}}) {
    const results::MetricTable t = run.metrics(split);
    out << "  " << name << ": " << t.steps.size() << " rows";
    if (!t.steps.empty()) {
      out << ", last:\n    ";
      print_rows(out, name, t, t.steps.size() - 1);
    } else {
      out << "\n";
    }
  }
  const auto logs = run.attention_steps();
  out << "  attention: " << logs.size() << " logs"
      << (logs.empty() ? "" : " (steps " + std::to_string(logs.front()) + " .. " + std::to_string(logs.back()) + ")")
      << ", probe of " << layout.probe.examples << " examples\n";
  const auto n = static_cast<std::int64_t>(logs.size());
  for (const results::AttentionSlot& s : layout.attention)
    out << "    " << s.path() << " " << shape_text({n, layout.probe.examples, s.heads, s.queries, s.keys}) << " mask "
        << results::to_string(s.mask) << "\n";
  if (layout.decode.layers > 0)
    out << "    /attention/decode/cross/layer_0.." << layout.decode.layers - 1 << " "
        << shape_text({n, layout.probe.examples, layout.decode.heads, layout.decode.steps, layout.decode.keys}) << "\n";
  const auto stats = run.stats_steps();
  out << "  stats: " << stats.size() << " rows";
  for (const results::StatsTable& t : layout.stats)
    out << "; " << t.name << " "
        << shape_text({static_cast<std::int64_t>(stats.size()), static_cast<std::int64_t>(t.columns.size())});
  out << "; attention entropy for " << layout.entropy.size() << " attention layers\n";
  const std::vector<analysis::EvalScores> evals = analysis::evaluation_scores(run);
  out << "  evals: " << evals.size() << (evals.empty() ? " (ablate eval RUN_DIR scores the checkpoint)" : "") << "\n";
  for (const analysis::EvalScores& e : evals) {
    out << "    " << e.name << (e.step >= 0 ? " at step " + std::to_string(e.step) : std::string()) << ":";
    for (const auto& [metric, value] : e.metrics) out << " " << metric << " " << std::setprecision(5) << value;
    out << "\n";
  }
}

// What in a readable run file makes no sense (a resolved spec that is not YAML, a step outside
// the run, steps that go back, a metric that is NaN in every row): one line each, for the reader.
std::vector<std::string> implausible(const results::RunReader& run) {
  std::vector<std::string> out;
  const results::RunInfo& info = run.info();
  const results::RunState state = run.state();
  std::int64_t steps = -1;
  try {
    const spec::SpecTree tree = spec::parse_yaml(info.resolved_spec_yaml, "resolved_spec_yaml");
    if (!tree.is_map()) throw UsageError("it is not a YAML map");
    const auto flat = analysis::flatten_spec(info.resolved_spec_yaml);
    if (const auto it = flat.find("train.steps"); it != flat.end()) steps = std::stoll(it->second);
  } catch (const std::exception& e) {
    out.push_back("the resolved spec (attribute resolved_spec_yaml) is not a readable spec: " + std::string(e.what()));
  }
  if (state.step < 0 || (steps >= 0 && state.step > steps))
    out.push_back("the run's step " + std::to_string(state.step) + " is outside 0.." +
                  (steps >= 0 ? std::to_string(steps) + " (train.steps)" : std::string("train.steps")));
  for (const auto& [name, split] :
       {std::pair{"train", results::MetricSplit::Train}, std::pair{"eval", results::MetricSplit::Eval}}) {
    const results::MetricTable t = run.metrics(split);
    if (t.stored_rows > t.steps.size() && state.status != results::RunStatus::Running)
      out.push_back(std::string(name) + " metrics: " + std::to_string(t.stored_rows - t.steps.size()) + " of " +
                    std::to_string(t.stored_rows) + " stored rows are left out: after row " + std::to_string(t.steps.size()) +
                    " the steps do not increase (or are negative or beyond the run)");
    if (!t.steps.empty() && (t.steps.back() > state.step || t.steps.front() < 0) && state.status != results::RunStatus::Running)
      out.push_back(std::string(name) + " metrics: steps " + std::to_string(t.steps.front()) + ".." +
                    std::to_string(t.steps.back()) + " reach beyond the run's step " + std::to_string(state.step));
    for (std::size_t c = 0; c < t.names.size(); ++c)
      if (!t.steps.empty() && std::all_of(t.columns[c].begin(), t.columns[c].end(), [](double v) { return std::isnan(v); }))
        out.push_back(std::string(name) + " metric " + t.names[c] + " is NaN in all " + std::to_string(t.steps.size()) + " rows");
  }
  return out;
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options(
      "ablate inspect RUN.h5|RUN_DIR [options]\n\n"
      "Summarises a run file: identity, status, last metrics, logged tensors and their shapes.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("run", po::value<std::string>(), "the run file or its directory (positional)")
      ("follow,f", "keep printing new metric rows while the run is live (until it stops)")
      ("interval", po::value<double>()->default_value(2.0), "seconds between reads with --follow");
  // clang-format on
  po::variables_map vm;
  if (!parse_command("inspect", options, args, {"run", 1}, vm, out)) return kExitOk;  // --help
  if (!vm.count("run")) throw UsageError("ablate inspect: no run file given", "usage: ablate inspect RUN.h5 [--follow]");
  std::filesystem::path file = vm["run"].as<std::string>();
  if (std::filesystem::is_directory(file) && file.filename() != "run.h5") file /= "run.h5";
  if (!std::filesystem::exists(file))
    throw UsageError("ablate inspect: " + file.string() + " does not exist", "give a run.h5 file or a run directory");
  if (std::filesystem::is_directory(file))
    throw UsageError("ablate inspect: " + file.string() + " is a directory, not a run file",
                     "give a run.h5 file or a run directory");
  const double seconds = vm["interval"].as<double>();
  if (!(seconds >= 0.05 && seconds <= 3600))  // NaN fails too
    throw UsageError("ablate inspect: --interval " + number_text(seconds) + " is out of range; expected seconds in [0.05, 3600]",
                     "e.g. --interval 2");
  const results::RunReader run(file);
  std::ostringstream summary;  // its names and texts come from the file: printed as valid UTF-8
  print_summary(summary, run);
  for (const std::string& problem : implausible(run)) summary << "  warning: " << problem << "\n";
  out << valid_utf8(summary.str());
  if (!vm.count("follow")) return kExitOk;

  const auto interval = std::chrono::duration<double>(seconds);
  std::size_t train_seen = run.metrics(results::MetricSplit::Train).steps.size();
  std::size_t eval_seen = run.metrics(results::MetricSplit::Eval).steps.size();
  for (;;) {
    const results::RunState state = run.state();
    const results::MetricTable train = run.metrics(results::MetricSplit::Train), eval = run.metrics(results::MetricSplit::Eval);
    print_rows(out, "train", train, train_seen);
    print_rows(out, "eval", eval, eval_seen);
    train_seen = train.steps.size();
    eval_seen = eval.steps.size();
    out.flush();
    if (state.status != results::RunStatus::Running || !run.writer_alive()) {
      out << "run " << results::to_string(state.status) << " at step " << state.step
          << (state.reason.empty() ? "" : ": " + state.reason) << "\n";
      return kExitOk;
    }
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace ablate::cli
