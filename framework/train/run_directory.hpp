// The run directory before training starts (`ablate run`, runner.hpp): what it holds already,
// and the checks that keep a run from writing over another run's results or continuing one that
// is not the same run (spec, seed, code), or branching from one it does not continue
// (train.branch_from). The training loop (runner.cpp) starts from what it found.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "plugin_host/plugin_registry.hpp"
#include "results/run_file.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::train {

struct RunOptions;

class RunDirectory {
 public:
  // Reads `options.out_dir` and refuses (UsageError, nothing touched): results without --resume,
  // --resume with nothing to resume, and a resume whose checkpoint holds another spec (`identity`:
  // spec::identity_yaml), whose run file belongs to another run id or was made by other code.
  // A run that starts from train.branch_from's branch point (not a resume from its own
  // checkpoint) is refused unless that run kept the point, its spec is this one but for
  // train.steps, train.schedule, name and description, this schedule gives its learning rates
  // up to the point, the same code made it and its data files are unchanged.
  RunDirectory(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
               const std::string& identity, const std::string& run_id);

  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path checkpoint_file() const { return dir_ / "checkpoint.bin"; }
  std::filesystem::path run_file() const { return dir_ / "run.h5"; }
  bool has_checkpoint() const { return has_checkpoint_; }
  // The branch point training starts from (train.branch_from, when not resuming from checkpoint.bin),
  // RUN/branch-points/step-STEP.bin, and the run that kept it.
  const std::optional<std::filesystem::path>& branch_point() const { return branch_point_; }
  std::filesystem::path branch_run() const {
    return branch_point_ ? branch_point_->parent_path().parent_path() : std::filesystem::path();
  }
  // Where the run's tokenizers are read from: this folder on resume, the branched-from run's
  // folder for a branch (its token ids are the ones trained), else none (the task makes them).
  std::filesystem::path tokenizer_dir(bool resume) const;
  // A resume of a run whose file says completed: nothing to do.
  bool completed() const { return recorded_ && recorded_->status == results::RunStatus::Completed; }

  // Creates the directory and removes the temporary files of a writer killed mid-write.
  void prepare() const;

 private:
  void check_resume(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const std::string& identity,
                    const std::string& run_id) const;
  void check_branch(const spec::ExperimentSpec& spec, const PluginRegistry& registry);

  std::filesystem::path dir_;
  std::optional<results::RunState> recorded_;  // the state in run.h5, if there is one
  bool has_checkpoint_ = false;
  std::optional<std::filesystem::path> branch_point_;
};

// The first line where two resolved specs differ ("line N of the resolved spec: checkpoint has
// 'A', now 'B'"), for the messages that refuse a checkpoint of another spec; "" when equal.
std::string first_difference(const std::string& checkpoint_yaml, const std::string& now_yaml);

}  // namespace ablate::train
