// The training runner behind `ablate run`: trains an experiment to its stopping condition,
// evaluates on the held-out split, checkpoints, resumes, and records the run in its directory.
// A run ends completed, diverged (NaN/Inf loss or gradient, with the step), interrupted
// (resumable), or failed (an error).
// The run directory holds run.h5 (framework/results/run_file.hpp: identity, metrics, attention,
// per-layer statistics, live-readable) and checkpoint.bin.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include "plugin_host/plugin_registry.hpp"
#include "results/run_file.hpp"
#include "spec/experiment_spec.hpp"
#include "train/progress.hpp"

namespace ablate::train {

using results::RunStatus;  // running | completed | failed | diverged | interrupted (results::to_string)

struct RunOptions {
  std::filesystem::path out_dir;  // the run's directory (created; must not hold another run)
  std::string spec_text;          // the spec file as written (recorded beside the resolved spec)
  bool resume = false;            // continue the run in out_dir from its checkpoint
  ProgressMode progress = ProgressMode::Lines;
  std::int64_t stop_after = 0;  // > 0: stop as interrupted (checkpointed) after this many steps in this call
  std::int64_t stop_at = 0;     // > 0: stop as interrupted (checkpointed) at this step of the run (a tuning rung)
  bool profile = false;         // time every backend op of the training steps; print the table at the end
  // Non-empty: write this new file, the run's initial parameters and per-step batches and losses
  // for checking another implementation against the run (train/reference_dump.hpp). Not with resume.
  std::filesystem::path dump_reference;
};

struct RunResult {
  RunStatus status = RunStatus::Running;
  std::int64_t step = 0;               // optimizer steps completed
  std::string reason;                  // why it stopped ("reached train.steps", "loss is nan at step 12", ...)
  std::map<std::string, double> eval;  // the last evaluation
};

// The stable id of a run: 12 hex digits of a hash of its resolved spec (sweep section excluded),
// so the same configuration always maps to the same results folder.
std::string run_id(const spec::ExperimentSpec& spec);
// The same of a spec's identity YAML as a run wrote it (its checkpoint's spec): the id that run
// recorded, also when this build resolves specs with keys that build did not have.
std::string run_id_of_identity(const std::string& identity_yaml);

// The resolved spec a run records (RunInfo::resolved_spec_yaml): every value, execution keys
// included, the sweep left out.
std::string resolved_run_yaml(spec::ExperimentSpec spec);

// Trains `spec` (validated, plugin options resolved) with plugins from `registry`, printing
// progress and evaluations to `out`. Throws UsageError before training starts for a problem of
// the spec or of out_dir (results present without --resume, resume of another spec); errors
// during training end the run as failed (recorded in run.h5) and are rethrown.
RunResult run_experiment(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
                         std::ostream& out);

// Asks a running run_experiment to stop after its current step, checkpointed and resumable
// (async-signal-safe: the CLI calls it from its SIGINT/SIGTERM handler).
void request_stop();

}  // namespace ablate::train
