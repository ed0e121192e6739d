// `ablate eval RUN`: scores a trained run's checkpoint on a whole split of its task (every metric
// the task reports, greedy-decoded predictions written out), adding the scores to run.h5's /evals
// without touching the training record: what `fairseq-generate` or `marian-decoder` give a researcher.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "analysis/run_summary.hpp"
#include "cli/spec_loading.hpp"
#include "results/run_file.hpp"
#include "core/text.hpp"
#include "train/run_eval.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

namespace {
namespace fs = std::filesystem;

po::options_description eval_options() {
  po::options_description options(
      "ablate eval RUN_DIR|DIR [options]\n\n"
      "Scores the weights of a run's checkpoint (RUN_DIR/checkpoint.bin: a finished or interrupted run) on\n"
      "every example of a split of its task: the spec's eval.metrics (with exact_match, the task's scores of\n"
      "greedy-decoded predictions, such as BLEU; --beam N decodes by beam search). Writes scores.json and,\n"
      "where the model decodes,\n"
      "predictions.tsv (index, source, reference, prediction) or .jsonl into RUN_DIR/evals/SPLIT (or --out),\n"
      "which must not hold an evaluation already, and records scores.json in RUN_DIR/run.h5 under /evals, named\n"
      "by that directory (the training record is not touched; live readers may stay open). Given a directory of\n"
      "runs (a sweep), it evaluates every completed run not evaluated on that split yet, each into its own evals/.\n"
      "Exit 0 done, 2 bad arguments (no checkpoint, an occupied --out or name, an empty split, a run training\n"
      "now, a checkpoint and run.h5 of two runs), 1 the record could not be written (its files are removed) or,\n"
      "for a directory of runs, some runs could not be evaluated (the others are; each listed), 3 plugin error.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("split", po::value<std::string>(), "eval or test: the task's split to score (default: test when the task has one, else eval)")
      ("limit", po::value<std::int64_t>()->default_value(0), "score only the split's first N examples (0: all)")
      ("data", po::value<std::string>(), "score a new file in the task's format (the run's vocabularies) instead of a split")
      ("format", po::value<std::string>()->default_value("tsv"), "predictions as tsv or jsonl")
      ("beam", po::value<std::int64_t>()->default_value(1), "beam search with N hypotheses (encoder-decoder; 1: greedy)")
      ("length-penalty", po::value<double>()->default_value(1.0), "beam search: score = log p / length^A")
      ("average-last", po::value<std::int64_t>()->default_value(0),
       "score the average of the run's last N kept checkpoints (train.keep_checkpoints; default name SPLIT-avgN)")
      ("ema", "score the run's moving average of its weights (train.ema; default name SPLIT-ema)")
      ("out,o", po::value<std::string>(), "output directory (default RUN_DIR/evals/SPLIT)");
  // clang-format on
  add_spec_options(options, kExecutionKeysHelp);
  return options;
}

train::RunEvalOptions read_eval_options(const po::variables_map& vm) {
  train::RunEvalOptions eval;
  eval.split_given = vm.count("split") > 0;
  const std::string split = eval.split_given ? vm["split"].as<std::string>() : "test";
  if (split == "test")
    eval.split = Split::Test;
  else if (split == "eval")
    eval.split = Split::Eval;
  else
    throw UsageError("ablate eval: --split " + split + ": expected eval or test");
  const std::string format = vm["format"].as<std::string>();
  if (format == "tsv")
    eval.format = train::PredictionFormat::Tsv;
  else if (format == "jsonl")
    eval.format = train::PredictionFormat::Jsonl;
  else
    throw UsageError("ablate eval: --format " + format + ": expected tsv or jsonl");
  eval.limit = vm["limit"].as<std::int64_t>();
  eval.beam = vm["beam"].as<std::int64_t>();
  eval.length_penalty = vm["length-penalty"].as<double>();
  eval.average_last = vm["average-last"].as<std::int64_t>();
  eval.ema = vm.count("ema") > 0;
  if (vm.count("out")) eval.out_dir = vm["out"].as<std::string>();
  if (vm.count("data")) eval.data = vm["data"].as<std::string>();
  if (vm.count("data") && eval.split_given)
    throw UsageError("ablate eval: --data and --split " + split + " name two things to score",
                     "--data scores the file's examples, --split one of the task's splits: give one of them");
  train::check_eval_options(eval);  // before any run is looked at (a directory of runs may skip them all)
  return eval;
}

// Why one run of a directory is not evaluated ("" = evaluate it): not completed, or evaluated
// under this name already.
std::string skip_reason(const fs::path& file, const std::string& name) {
  const fs::path run = file.parent_path();
  const results::RunReader reader(file);  // closed before evaluate_run records into the file
  const results::RunStatus status = reader.state().status;
  if (status != results::RunStatus::Completed) return results::to_string(status);
  // scores.json is the record only in files older than /evals; else one without a record is an
  // interrupted evaluation's leftover, which evaluate_run replaces
  bool evaluated_already = !reader.records_evaluations() && fs::exists(run / "evals" / name / "scores.json");
  for (const results::EvalRecord& r : reader.evaluations()) evaluated_already = evaluated_already || r.name == name;
  return evaluated_already ? "evaluated already (evals/" + name + ")" : "";
}

// A directory of runs (a sweep, an experiment folder): every completed run, each into its own
// RUN/evals/SPLIT; runs evaluated there already, and runs not completed, are skipped with a note.
int evaluate_directory(const fs::path& dir, const train::RunEvalOptions& eval, const SpecOptions& spec_opts, std::ostream& out,
                       std::ostream& err) {
  if (!eval.out_dir.empty())
    throw UsageError("ablate eval: --out names one run's output; a directory of runs writes each run's own evals/",
                     "drop --out, or evaluate one run");
  const std::vector<fs::path> runs = analysis::find_runs({dir});
  if (runs.empty())
    throw UsageError("no checkpoint in " + dir.string() + " (checkpoint.bin is missing), and no runs below it",
                     "give the directory `ablate run` trained into, or a directory of runs (a sweep's)");
  int evaluated = 0;
  std::vector<std::string> failed;  // "RUN: why", each run that could not be evaluated
  for (const fs::path& file : runs) {
    const fs::path run = file.parent_path();
    try {
      if (const std::string why = skip_reason(file, train::eval_name(train::split_for_run(run, eval, nullptr))); !why.empty()) {
        out << "skipped " << run.string() << ": " << why << "\n";
        continue;
      }
      LoadedSpec loaded = validation::load_run_spec(run, spec_opts, err);
      const train::RunEvalResult r = train::evaluate_run(run, loaded.spec, *loaded.registry, eval, out);
      out << " ";
      for (const auto& [name, value] : r.metrics) out << " " << name << " " << number_text(value);
      out << "\n";
      ++evaluated;
    } catch (const Error& e) {  // one run's problem: the others are still evaluated
      failed.push_back(run.string() + ": " + e.what());
      err << "ablate eval: not evaluated: " << failed.back() << "\n";
    }
  }
  out << evaluated << " run(s) evaluated\n";
  if (failed.empty()) return kExitOk;
  err << "ablate eval: " << failed.size() << " run(s) could not be evaluated:\n";
  for (const std::string& f : failed) err << "  " << f << "\n";
  return kExitRunFailed;
}

}  // namespace

int cmd_eval(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options = eval_options();
  add_run_argument(options);
  po::variables_map vm;
  if (!parse_command("eval", options, args, kRunArgument, vm, out)) return kExitOk;  // --help
  const fs::path dir = run_argument(vm, "eval", "usage: ablate eval RUN_DIR [--split test|eval]");
  const train::RunEvalOptions eval = read_eval_options(vm);
  if (!fs::exists(dir / "checkpoint.bin") && !fs::exists(dir / "run.h5") && fs::is_directory(dir))
    return evaluate_directory(dir, eval, spec_options(vm), out, err);
  // The model is the one the checkpoint holds: its own spec, execution keys aside.
  LoadedSpec loaded = validation::load_run_spec(dir, spec_options(vm), err);
  const train::RunEvalResult r = train::evaluate_run(dir, loaded.spec, *loaded.registry, eval, out);
  for (const auto& [name, value] : r.metrics) out << "  " << name << " " << number_text(value) << "\n";
  if (!r.predictions.empty()) out << "predictions: " << r.predictions.string() << "\n";
  out << "scores: " << r.scores.string() << "\n";
  if (!r.record.empty()) out << "recorded: " << (dir / "run.h5").string() << " /evals '" << r.record << "'\n";
  return kExitOk;
}

}  // namespace ablate::cli
