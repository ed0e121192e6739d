// RunDirectory (run_directory.hpp): the checks of a run directory before training, with the
// messages that say which record disagrees and how.
#include "train/run_directory.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/schedule.hpp"
#include "plugin_host/plugin_call.hpp"
#include "train/checkpoint.hpp"
#include "train/code_identity.hpp"
#include "train/runner.hpp"
#include "train/tokenizer_store.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

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

RunDirectory::RunDirectory(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
                           const std::string& identity, const std::string& run_id)
    : dir_(options.out_dir) {
  if (fs::exists(run_file())) recorded_ = results::RunReader(run_file()).state();
  has_checkpoint_ = fs::exists(checkpoint_file());
  if (!options.resume && recorded_)
    throw UsageError("results already exist in " + dir_.string() + " (status " + results::to_string(recorded_->status) + ")",
                     "continue that run with --resume, or choose another directory with --out");
  if (options.resume) check_resume(spec, registry, identity, run_id);
  if (spec.train.branch_from && !(options.resume && has_checkpoint_)) check_branch(spec, registry);
}

void RunDirectory::check_resume(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const std::string& identity,
                                const std::string& run_id) const {
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

namespace {

// `spec` given `parent`'s length, schedule and names, as an identity: equal to `parent`'s when
// `spec` only continues it (train.branch_from).
std::string identity_as_branch_of(spec::ExperimentSpec spec, const spec::ExperimentSpec& parent) {
  spec.name = parent.name;
  spec.description = parent.description;
  spec.train.steps = parent.train.steps;
  spec.train.schedule = parent.train.schedule;
  spec.train.branch_from = parent.train.branch_from;
  return spec::identity_yaml(spec);
}

spec::ExperimentSpec spec_of_run(const fs::path& run_dir) {
  const fs::path file = run_dir / "run.h5";
  return spec::parse_spec(spec::upgraded_run_yaml(results::RunReader(file).info().resolved_spec_yaml), file.string());
}

// train.branch_from.run: a run's directory, or a folder of runs (a sweep's) holding the one run of
// this seed that the spec continues and that kept the branch point.
fs::path find_branch_run(const spec::ExperimentSpec& spec, const std::string& doing) {
  const fs::path named = spec.train.branch_from->run;
  std::error_code ec;
  if (fs::exists(named / "run.h5", ec)) return named;
  if (!fs::is_directory(named, ec))
    throw UsageError(doing + ": " + named.string() + " is not a directory",
                     "train.branch_from.run names the run's directory (the one with run.h5), or a folder of runs");
  std::vector<fs::path> runs, matching;
  for (auto it = fs::recursive_directory_iterator(named, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory(ec) || name.starts_with(".")) {  // a sweep's .attempts/ are runs it replaced
      if (name.starts_with(".")) it.disable_recursion_pending();
      continue;
    }
    if (!fs::exists(it->path() / "run.h5", ec)) continue;
    it.disable_recursion_pending();
    runs.push_back(it->path());
    if (!fs::exists(branch_point_file(it->path(), spec.train.branch_from->step), ec)) continue;
    try {
      const spec::ExperimentSpec parent = spec_of_run(it->path());
      if (parent.train.seed == spec.train.seed && identity_as_branch_of(spec, parent) == spec::identity_yaml(parent))
        matching.push_back(it->path());
    } catch (const Error&) {  // a run file this build cannot read (damaged, another version): not the run
    }
  }
  if (matching.size() == 1) return matching.front();
  if (matching.empty())
    throw UsageError(doing + ": none of the " + std::to_string(runs.size()) + " runs in " + named.string() + " has seed " +
                         std::to_string(spec.train.seed) +
                         ", this spec but for train.steps and train.schedule, and a branch point at step " +
                         std::to_string(spec.train.branch_from->step),
                     "train that run first (train.branch_points), or name its directory");
  throw UsageError(doing + ": " + matching[0].string() + " and " + matching[1].string() + " both have seed " +
                       std::to_string(spec.train.seed) + " and this spec",
                   "name the run's directory itself");
}

}  // namespace

void RunDirectory::check_branch(const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  const spec::BranchSpec& from = *spec.train.branch_from;
  const std::string doing = "train.branch_from: cannot start from " + from.run + " at step " + std::to_string(from.step);
  const fs::path parent_dir = find_branch_run(spec, doing);
  const fs::path file = branch_point_file(parent_dir, from.step);
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    std::string kept;
    for (std::int64_t step : branch_point_steps(parent_dir)) kept += (kept.empty() ? "" : ", ") + std::to_string(step);
    throw UsageError(doing + ": " + file.string() + " does not exist (" +
                         (kept.empty() ? "the run keeps no branch points" : "it keeps steps " + kept) + ")",
                     "branch from a step the run keeps, or add the step to that run's train.branch_points (not part "
                     "of its identity: a --resume that has not passed the step yet keeps it)");
  }
  // The branch point's spec (that run's identity), given this spec's length, schedule and names,
  // must be this spec.
  const std::string point_yaml = read_checkpoint(file).spec_yaml;
  const spec::ExperimentSpec parent = spec::parse_spec(spec::upgraded_run_yaml(point_yaml), file.string());
  if (parent.train.budget)
    throw UsageError(doing + ": that run trained for a train.budget, and a branch counts train.steps",
                     "branch from a run of train.steps alone");
  const std::string theirs = spec::identity_yaml(parent), mine = identity_as_branch_of(spec, parent);
  if (theirs != mine)
    throw UsageError(doing + ": its spec differs from this one in more than train.steps and train.schedule (" +
                         first_difference(theirs, mine) + ")",
                     "a branch continues that run's training: change only train.steps and train.schedule (and the name)");
  // Up to the branch point this schedule must be the run's: the branch claims that run's history.
  const std::shared_ptr<Schedule> was = registry.create<Schedule>(parent.train.schedule.name, parent.train.schedule.options);
  const std::shared_ptr<Schedule> now = registry.create<Schedule>(spec.train.schedule.name, spec.train.schedule.options);
  for (std::int64_t step = 1; step <= from.step; ++step) {
    const double a = plugin_call(*was, "learning_rate", [&] { return was->learning_rate(step); });
    const double b = plugin_call(*now, "learning_rate", [&] { return now->learning_rate(step); });
    if (std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b))) continue;
    std::ostringstream text;
    text << doing << ": at step " << step << " train.schedule gives learning rate " << b << ", where the run's ("
         << parent.train.schedule.name << ") gave " << a;
    throw UsageError(text.str(),
                     "the schedule may change only after the branch point: with wsd, a decay share that starts the "
                     "decay at or after it (decay <= 1 - step / train.steps)");
  }
  const results::RunInfo info = results::RunReader(parent_dir / "run.h5").info();
  if (run_id_of_identity(point_yaml) != info.run_id)
    throw UsageError(doing + ": " + file.string() + " holds another run's state than " + (parent_dir / "run.h5").string() +
                         " (run " + info.run_id + ")",
                     "a run folder's branch-points/ belong to its run.h5: remove what was copied in");
  const CodeIdentity code = code_identity(spec, registry);
  if (info.code_id != code.id)
    throw UsageError(doing + ": the run was made by other code; now: " + code_difference(info.plugin_code, code.parts),
                     "branch with the code that made the run, or train that run afresh with this code");
  check_data_unchanged(info.data_files, spec, doing, DataUse::Examples, run_tokenizer_files(parent_dir));
  branch_point_ = file;
}

fs::path RunDirectory::tokenizer_dir(bool resume) const {
  if (resume) return dir_;
  return branch_run();  // none without a branch
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
