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

int cmd_eval(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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
      ("split", po::value<std::string>()->default_value("test"), "eval or test: the task's split to score")
      ("limit", po::value<std::int64_t>()->default_value(0), "score only the split's first N examples (0: all)")
      ("data", po::value<std::string>(), "score a new file in the task's format (the run's vocabularies) instead of a split")
      ("format", po::value<std::string>()->default_value("tsv"), "predictions as tsv or jsonl")
      ("beam", po::value<std::int64_t>()->default_value(1), "beam search with N hypotheses (encoder-decoder; 1: greedy)")
      ("length-penalty", po::value<double>()->default_value(1.0), "beam search: score = log p / length^A")
      ("out,o", po::value<std::string>(), "output directory (default RUN_DIR/evals/SPLIT)");
  // clang-format on
  add_spec_options(options, kExecutionKeysHelp);
  po::positional_options_description positional;
  add_run_argument(options, positional);
  const po::variables_map vm = parse_command("eval", options, args, positional);
  if (vm.count("help")) {
    out << options << "\n";
    return kExitOk;
  }
  const std::filesystem::path dir = run_argument(vm, "eval", "usage: ablate eval RUN_DIR [--split test]");

  train::RunEvalOptions eval;
  const std::string split = vm["split"].as<std::string>();
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
  if (vm.count("out")) eval.out_dir = vm["out"].as<std::string>();
  if (vm.count("data")) eval.data = vm["data"].as<std::string>();
  if (vm.count("data") && !vm["split"].defaulted())
    throw UsageError("ablate eval: --data and --split " + split + " name two things to score",
                     "--data scores the file's examples, --split one of the task's splits: give one of them");
  train::check_eval_options(eval);  // before any run is looked at (a directory of runs may skip them all)

  // A directory of runs (a sweep, an experiment folder): every completed run, each into its own
  // RUN/evals/SPLIT; runs evaluated there already, and runs not completed, are skipped with a note.
  if (!std::filesystem::exists(dir / "checkpoint.bin") && !std::filesystem::exists(dir / "run.h5") &&
      std::filesystem::is_directory(dir)) {
    if (!eval.out_dir.empty())
      throw UsageError("ablate eval: --out names one run's output; a directory of runs writes each run's own evals/",
                       "drop --out, or evaluate one run");
    const std::vector<std::filesystem::path> runs = analysis::find_runs({dir});
    if (runs.empty())
      throw UsageError("no checkpoint in " + dir.string() + " (checkpoint.bin is missing), and no runs below it",
                       "give the directory `ablate run` trained into, or a directory of runs (a sweep's)");
    int evaluated = 0;
    std::vector<std::string> failed;  // "RUN: why", each run that could not be evaluated
    for (const std::filesystem::path& file : runs) {
      const std::filesystem::path run = file.parent_path();
      const std::string name = train::eval_name(eval);
      try {
        bool evaluated_already = false;
        results::RunStatus status;
        {
          const results::RunReader reader(file);  // closed before evaluate_run records into the file
          status = reader.state().status;
          // scores.json is the record only in files older than /evals; else one without a record is
          // an interrupted evaluation's leftover, which evaluate_run replaces
          evaluated_already = !reader.records_evaluations() && std::filesystem::exists(run / "evals" / name / "scores.json");
          for (const results::EvalRecord& r : reader.evaluations()) evaluated_already = evaluated_already || r.name == name;
        }
        if (status != results::RunStatus::Completed) {
          out << "skipped " << run.string() << ": " << results::to_string(status) << "\n";
          continue;
        }
        if (evaluated_already) {
          out << "skipped " << run.string() << ": evaluated already (evals/" << name << ")\n";
          continue;
        }
        LoadedSpec loaded = validation::load_run_spec(run, spec_options(vm), err);
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
