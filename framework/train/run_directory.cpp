// RunDirectory (run_directory.hpp): the checks of a run directory before training, with the
// messages that say which record disagrees and how.
#include "train/run_directory.hpp"

#include <sstream>

#include "ablate/error.hpp"
#include "train/checkpoint.hpp"
#include "train/code_identity.hpp"
#include "train/runner.hpp"
#include "train/tokenizer_store.hpp"

namespace ablate::train {
namespace fs = std::filesystem;
namespace {

// The first line where two texts differ, for "the spec changed" messages.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(ia, la)), hb = static_cast<bool>(std::getline(ib, lb));
    if (!ha && !hb) return "";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + " of the resolved spec: checkpoint has '" + (ha ? la : "") + "', now '" +
             (hb ? lb : "") + "'";
  }
}

}  // namespace

RunDirectory::RunDirectory(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
                           const std::string& identity, const std::string& run_id)
    : dir_(options.out_dir) {
  if (fs::exists(run_file())) recorded_ = results::RunReader(run_file()).state();
  has_checkpoint_ = fs::exists(checkpoint_file());
  if (!options.resume && recorded_)
    throw UsageError("results already exist in " + dir_.string() + " (status " + results::to_string(recorded_->status) + ")",
                     "continue that run with --resume, or choose another directory with --out");
  if (!options.resume) return;
  if (!has_checkpoint_ && !recorded_)
    throw UsageError("nothing to resume in " + dir_.string() + ": no checkpoint.bin and no run.h5",
                     "start the run without --resume (or point --out at the run's directory)");
  // The run file, the checkpoint and the spec must be one run; checked before anything is touched.
  const std::string hint = "resume with the same spec and --set options, or start a new run in another directory";
  const std::string code_hint =
      "a run continues only with the code that started it: start it afresh in another directory "
      "(ablate sweep reruns such runs and keeps the old folder under .attempts/)";
  const std::optional<results::RunInfo> info =
      recorded_ ? std::optional<results::RunInfo>(results::RunReader(run_file()).info()) : std::nullopt;
  const CodeIdentity code = code_identity(spec, registry);
  const bool other_code = info && info->code_id != code.id;
  if (has_checkpoint_) {
    const std::string started = read_checkpoint(checkpoint_file()).spec_yaml;
    if (started != identity && other_code)  // the likely cause first: a spec key an older Ablate did not have
      throw UsageError("cannot resume " + dir_.string() +
                           ": the run was made by other code (another Ablate build or "
                           "changed plugins), and its spec differs from this one (" +
                           first_difference(started, identity) + "); code now: " + code_difference(info->plugin_code, code.parts),
                       code_hint);
    if (started != identity)
      throw UsageError("cannot resume " + dir_.string() + ": the spec differs from the one the run started with (" +
                           first_difference(started, identity) + ")",
                       hint);
  }
  if (info && info->run_id != run_id)
    throw UsageError("cannot resume " + dir_.string() + ": its run file belongs to run " + info->run_id + " (seed " +
                         std::to_string(info->seed) + "), this spec is run " + run_id + " (seed " +
                         std::to_string(spec.train.seed) + ")",
                     hint);
  if (info)
    check_data_unchanged(info->data_files, spec, "cannot resume " + dir_.string(), DataUse::Examples, run_tokenizer_files(dir_));
  if (other_code)
    throw UsageError("cannot resume " + dir_.string() +
                         ": the run was made by other code; now: " + code_difference(info->plugin_code, code.parts),
                     code_hint);
}

void RunDirectory::prepare() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw UsageError("cannot create the run directory " + dir_.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(dir_)) {  // temp files of a writer killed mid-write
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.find(".creating.") != std::string::npos) fs::remove(entry.path(), ec);
  }
}

}  // namespace ablate::train
