// The run directory before training starts (`ablate run`, runner.hpp): what it holds already,
// and the checks that keep a run from writing over another run's results or continuing one that
// is not the same run (spec, seed, code). The training loop (runner.cpp) starts from what it found.
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
  RunDirectory(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
               const std::string& identity, const std::string& run_id);

  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path checkpoint_file() const { return dir_ / "checkpoint.bin"; }
  std::filesystem::path run_file() const { return dir_ / "run.h5"; }
  bool has_checkpoint() const { return has_checkpoint_; }
  // A resume of a run whose file says completed: nothing to do.
  bool completed() const { return recorded_ && recorded_->status == results::RunStatus::Completed; }

  // Creates the directory and removes the temporary files of a writer killed mid-write.
  void prepare() const;

 private:
  std::filesystem::path dir_;
  std::optional<results::RunState> recorded_;  // the state in run.h5, if there is one
  bool has_checkpoint_ = false;
};

}  // namespace ablate::train
