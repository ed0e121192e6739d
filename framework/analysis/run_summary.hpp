// Reading run files into the plain RunSummary that compare() works on: finding every run.h5 under
// the directories given to `ablate compare` / `ablate plot`, and flattening a run's resolved spec
// into dotted keys so that the arms of a sweep are told apart by the keys that vary.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/compare.hpp"

namespace ablate::results {
class RunReader;
}

namespace ablate::analysis {

// A sweep directory's manifest (framework/sweep/manifest.hpp), and where it keeps its tuning runs
// (sweep.tune): those are compared by themselves only.
inline constexpr const char* kSweepManifestFile = "sweep.yaml";
inline constexpr const char* kTuningRunsFolder = "tuning";

// Every run.h5 under `paths`, searched recursively, sorted and without duplicates; a path may also
// be a run file itself. Skipped below a given path: folders whose name starts with '.' (a sweep's
// .attempts/) and a sweep directory's kTuningRunsFolder (the runs that chose each arm's setting are
// not the runs that judge it; pass that folder itself to compare them). Throws
// ablate::UsageError naming a path that does not exist.
std::vector<std::filesystem::path> find_runs(const std::vector<std::filesystem::path>& paths);

// A YAML mapping flattened to dotted key paths: nested maps recurse ("model.block" -> "post_norm");
// a plugin reference {plugin: X, opt: v} at K gives K -> X and K.opt -> v; sequences (and anything
// inside them) become one line of flow YAML ("[loss, exact_match]"); null is "null". Throws
// ablate::Error if the text is not YAML or not a mapping.
std::map<std::string, std::string> flatten_spec(const std::string& yaml);

// The scores of each `ablate eval` of the run, in the order made: the records of run.h5's /evals,
// or, in a file written before /evals existed, RUN/evals/NAME/scores.json. `step` is the
// checkpoint's (-1: not known, an old file). Throws ablate::Error naming a record that is not JSON.
struct EvalScores {
  std::string name;
  std::int64_t step = -1;
  std::map<std::string, double> metrics;  // null (non-finite) as NaN
};
std::vector<EvalScores> evaluation_scores(const results::RunReader& run);

// One run as compare() needs it: id, path (the run file), status, flattened resolved spec, the
// last eval row as final metrics (non-finite values kept as NaN) plus `ablate eval`'s scores
// (evaluation_scores) as "evals/NAME/METRIC", eval curves per metric and the median of the finite
// train `tokens_per_s` values (NaN when none).
RunSummary summarize(const results::RunReader& run);

}  // namespace ablate::analysis
