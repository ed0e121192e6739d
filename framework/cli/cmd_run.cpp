// `ablate run SPEC.yaml`: validates the spec like `ablate validate`, then trains it with the
// runner (framework/train/runner.hpp) into its run directory, printing progress. Ctrl-C stops
// after the current step with a checkpoint; `--resume` continues.
#include <fstream>
#include <iterator>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "train/runner.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace {

extern "C" void on_stop_signal(int) { train::request_stop(); }

}  // namespace

int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate run SPEC.yaml [options]\n\n"
      "Trains the experiment a spec describes (its base configuration: a sweep runs with\n"
      "`ablate sweep`) and writes the run directory: run.h5 (docs/results-format.md) and\n"
      "checkpoint.bin. Ctrl-C stops after the current step with a checkpoint;\n"
      "--resume continues it. Exit 0 completed, 1 failed, 2 spec error, 3 plugin error (a plugin\n"
      "could not be created, or threw: the run file says failed and why),\n"
      "4 diverged (NaN/Inf, step recorded), 130 interrupted.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("spec", po::value<std::string>(), "the spec file (positional)")
      ("out,o", po::value<std::string>(), "run directory (default: results/<name>/<run id>)")
      ("resume", "continue the run in the run directory from its checkpoint")
      ("progress", po::value<std::string>()->default_value("auto"),
       "auto (a bar on a terminal, lines otherwise or when CI is set), bar, lines, quiet")
      ("stop-after", po::value<std::int64_t>()->default_value(0),
       "stop (checkpointed, resumable, exit 0) after this many steps of this invocation")
      ("stop-at", po::value<std::int64_t>()->default_value(0),
       "stop (checkpointed, resumable, exit 0) once the run has reached this step (a sweep's tuning rung)")
      ("profile", "time every backend op of the training steps and print where a step's time goes (docs/training.md)")
      ("dump-reference", po::value<std::string>(),
       "write FILE.h5 (new): initial parameters, every step's batch and loss, for checking another implementation (bench/)");
  // clang-format on
  add_spec_options(options, kOverridesHelp);
  po::variables_map vm;
  if (!parse_command("run", options, args, {"spec", 1}, vm, out)) return kExitOk;  // --help
  if (!vm.count("spec")) throw UsageError("ablate run: no spec file given", "usage: ablate run SPEC.yaml [--set k=v ...]");
  const std::string file = vm["spec"].as<std::string>();
  LoadedSpec loaded = validation::load_validated_spec(file, spec_options(vm), err);
  if (!loaded.spec.sweep.empty()) out << "note: " << file << " has a sweep; `ablate run` trains its base configuration only\n";

  train::RunOptions run;
  {
    std::ifstream in(file, std::ios::binary);
    run.spec_text.assign(std::istreambuf_iterator<char>(in), {});
  }
  run.out_dir = vm.count("out") ? std::filesystem::path(vm["out"].as<std::string>())
                                : std::filesystem::path("results") / loaded.spec.name / train::run_id(loaded.spec);
  run.resume = vm.count("resume") > 0;
  run.progress = progress_mode("run", vm["progress"].as<std::string>());
  run.stop_after = vm["stop-after"].as<std::int64_t>();
  run.profile = vm.count("profile") > 0;
  if (vm.count("dump-reference")) run.dump_reference = vm["dump-reference"].as<std::string>();
  run.stop_at = vm["stop-at"].as<std::int64_t>();
  if (run.stop_after < 0) throw UsageError("ablate run: --stop-after must be >= 0");
  if (run.stop_at < 0) throw UsageError("ablate run: --stop-at must be >= 0");

  StopSignals signals(on_stop_signal);
  const train::RunResult result = train::run_experiment(loaded.spec, *loaded.registry, run, out);
  switch (result.status) {
    case results::RunStatus::Completed: return kExitOk;
    case results::RunStatus::Diverged: return kExitDiverged;
    case results::RunStatus::Interrupted:
      return result.reason.starts_with("--stop-after") || result.reason.starts_with("--stop-at") ? kExitOk : kExitInterrupted;
    default: return kExitRunFailed;
  }
}

}  // namespace ablate::cli
