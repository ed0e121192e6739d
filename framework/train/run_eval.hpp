// `ablate eval`: a trained run's checkpoint scored on a whole split of its task, with every
// metric the task reports, and every prediction written beside the scores, so a researcher can
// look at what a model does after training and not only at what training logged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"
#include "train/code_identity.hpp"
#include "train/experiment.hpp"

namespace ablate::train {

enum class PredictionFormat { Tsv, Jsonl };

struct RunEvalOptions {
  Split split = Split::Test;
  // false (`ablate eval` without --split): the test split when the run's task has one, else the
  // eval split, with a note (split_for_run).
  bool split_given = true;
  // The directory the files go to; empty: RUN/evals/<split>. It must not hold an evaluation
  // already (nothing is written over).
  std::filesystem::path out_dir;
  PredictionFormat format = PredictionFormat::Tsv;
  std::int64_t limit = 0;  // > 0: only the split's first `limit` examples
  // Non-empty: score the examples of this file in the task's own format (Task::read_examples,
  // the run's vocabularies) instead of a split; the default directory is then RUN/evals/<stem>.
  std::filesystem::path data;
  std::int64_t beam = 1;        // > 1: predictions by beam search with this many hypotheses (seq2seq)
  double length_penalty = 1.0;  // beam search's alpha (beam_search.hpp)
  // > 0: score the average of the run's last N kept checkpoints (train.keep_checkpoints) instead
  // of checkpoint.bin; the default directory is then RUN/evals/<split>-avgN.
  std::int64_t average_last = 0;
  // Score the run's average of its weights (train.ema: RUN/ema-STEP.bin of checkpoint.bin's step)
  // instead of checkpoint.bin; the default directory is then RUN/evals/<split>-ema.
  bool ema = false;
};

struct RunEvalResult {
  std::map<std::string, double> metrics;
  std::int64_t examples = 0;                  // examples scored
  std::int64_t step = 0;                      // the checkpoint's training step (averaged: the last one's)
  std::vector<std::int64_t> averaged_steps;   // --average-last: the steps of the averaged checkpoints
  std::filesystem::path predictions, scores;  // the files written (predictions empty: no decoding)
  std::string record;                         // its name in run.h5's /evals; empty: not recorded (a file older than /evals)
};

// The checkpoint of the run in `run_dir` (checkpoint.bin; its resolved spec is in the file).
// Throws UsageError when there is none.
std::filesystem::path run_checkpoint(const std::filesystem::path& run_dir);
// The id of the run whose checkpoint `run_dir` holds, from the spec the checkpoint stores as that
// run's build wrote it (run_id_of_identity): a spec key added since does not change it.
std::string trained_run_id(const std::filesystem::path& run_dir);

// Throws UsageError when `run_dir`'s run.h5 records another run than `spec` (its checkpoint's):
// a checkpoint or run file copied in from another run; or when a data file the run read has
// changed since and the command cannot `use` it (check_data_unchanged; its warnings go to
// `warnings`). Without run.h5 there is nothing to check. The checks `ablate run --resume` makes
// (RunDirectory), for the commands that use a trained run. Returns the run's id
// (trained_run_id), empty without run.h5.
std::string check_one_run(const std::filesystem::path& run_dir, const spec::ExperimentSpec& spec, DataUse use,
                          std::ostream& warnings);

// A trained run's model with its checkpoint's weights loaded: what `ablate eval`, `export`,
// `translate` and `generate` start from. `spec` is the checkpoint's spec, loaded and checked
// against `registry`; checked first to be the run of run.h5 (check_one_run, reading text only:
// its warnings go to `warnings`).
struct TrainedRun {
  std::unique_ptr<Experiment> experiment;
  std::int64_t step = 0;  // the checkpoint's training step
  std::string run_id;     // the id the run recorded (trained_run_id)
};
TrainedRun open_trained_run(const std::filesystem::path& run_dir, const spec::ExperimentSpec& spec,
                            const PluginRegistry& registry, std::ostream& warnings);

// Scores the weights of `run_dir`'s checkpoint on `options.split` of the task, every example of it
// (or the first `limit`), with spec.eval.metrics as applicable (exact_match brings the task's
// scores, e.g. BLEU, of greedy-decoded predictions). `spec` is the checkpoint's spec as loaded and
// checked against `registry` (the CLI reads it with run_checkpoint and read_checkpoint). Writes
// predictions.tsv or .jsonl (index, source, reference, prediction: text where the task has text,
// else token ids) when the model decodes, and scores.json (metrics, split, examples, step, run
// id, the code that evaluated), into the output directory, which it creates and which must not
// hold an evaluation already; then records scores.json in run.h5 under /evals, named by the
// output directory (RunWriter::record_evaluation: SWMR, readers undisturbed). Throws UsageError
// for an empty split, an occupied directory, a name run.h5 records already, or a run being
// written now (before anything is written); when the record fails, the files written go too.
RunEvalResult evaluate_run(const std::filesystem::path& run_dir, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                           const RunEvalOptions& options, std::ostream& out);

// `options` with the split an evaluation of `run_dir` scores: as given, or (split_given false, no
// --data) the test split when the run's task has one (its run file records test_ columns), else
// the eval split, said in a note to `out` (when not null).
RunEvalOptions split_for_run(const std::filesystem::path& run_dir, RunEvalOptions options, std::ostream* out);

// Throws UsageError for options no evaluation can run with: limit < 0, beam < 1, a --data file
// that does not exist. evaluate_run checks them first; the CLI checks once before any run.
void check_eval_options(const RunEvalOptions& options);

// "eval" / "test" / "train": the split's name in files and directories.
const char* split_name(Split split);
// What an evaluation is called (its directory under RUN/evals/): the --data file's stem, else the split's name.
std::string eval_name(const RunEvalOptions& options);

}  // namespace ablate::train
