// Per-arm tuning (sweep.tune, docs/sweeps.md "Tuning each arm"): the tuning runs (every arm x
// tuned setting x tuning seed, in DIR/tuning), the choice of each arm's setting from their values,
// and the confirmation runs (every arm at its own setting x sweep.seeds, in DIR) that the
// comparison uses: a nuisance setting chosen per arm on seeds that never judge it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "spec/sweep_expansion.hpp"
#include "sweep/sweep_plan.hpp"
#include "validation/validation.hpp"

namespace ablate::sweep {

using Settings = std::vector<std::pair<std::string, std::string>>;

struct TuningPlan {
  SweepPlan plan;                      // the tuning runs, in DIR/tuning
  std::vector<spec::SweepPoint> arms;  // the sweep's arms (grid x zip, sweep.runs), without seeds
  std::vector<Settings> settings;      // the tuned settings: every combination of sweep.tune.grid
  std::vector<std::int64_t> seeds;     // sweep.tune.seeds
  // [arm][setting][seed]: the plan run of each tuning point (points resolving to one spec share a run).
  std::vector<std::vector<std::vector<std::size_t>>> run_of;
};

// The tuning phase of the sweep in `base` (base.spec.sweep.tune not empty), its runs in `dir`/tuning.
// Throws UsageError for a selection the runs cannot give (a test metric, a bad summary form) and,
// as plan_sweep, for points that cannot be loaded.
TuningPlan plan_tuning(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                       const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base,
                       const std::filesystem::path& dir);

// Where the tuning phase stands, computed from the run files alone (a rerun, --status and an
// interrupted command all agree). With successive halving (sweep.tune.eta) the phase goes rung by
// rung: each rung trains the kept settings' runs to its step (`ablate run --stop-at`), then every
// arm keeps its best ceil(n / eta) settings by their mean over the tuning seeds of the metric's
// value at that step (a setting without a value on every seed is dropped first).
struct TuningProgress {
  bool done = false;                                 // every run the phase needs has finished
  std::size_t finished = 0, needed = 0;              // the current rung's runs finished / needed
  std::vector<std::int64_t> rungs;                   // the rung steps, the last one train.steps
  std::vector<std::vector<std::int64_t>> pruned_at;  // [arm][setting]: the rung step it was dropped at; 0: kept
  std::size_t runs = 0;                              // tuning runs started (pruned ones included)
  std::int64_t run_steps = 0;                        // steps they trained, summed: the phase's compute
  double run_seconds = 0.0;                          // their training wall time, summed
};
// The settings an arm keeps at a rung: the best ceil(n / eta) of its n `alive` settings by `sums`
// (each one's value summed over the seeds, in `alive`'s order; a non-finite sum is never kept),
// ties kept in grid order, returned in grid order.
std::vector<std::size_t> promote(const std::vector<std::size_t>& alive, const std::vector<double>& sums, std::int64_t eta,
                                 bool higher_is_better);
// Advances the tuning phase: `execute` runs a plan to its end and returns false when the command
// must stop there (submitted to Slurm, interrupted); one that runs nothing reports where it stands.
TuningProgress advance_tuning(const TuningPlan& tuning, const spec::TuneSpec& tune,
                              const std::function<bool(const SweepPlan&)>& execute, std::ostream& out);

// One arm's choice. means[k]: setting k's mean value over the tuning seeds, NaN unless every seed
// gave a finite value (a diverged, failed or unfinished run, or a missing metric).
struct ArmChoice {
  std::size_t setting = 0;
  std::vector<double> means;
  std::vector<std::string> at_edge;  // tuned keys (of 3 or more values) whose chosen value is the first or last listed
};

// Per arm, the setting with the best mean among those with a value on every seed (ties: the first
// in grid order). values: [arm][setting][seed], NaN for no value. Throws UsageError naming each
// arm (by `arm_names`) that has no such setting.
std::vector<ArmChoice> choose_settings(const std::vector<std::vector<std::vector<double>>>& values, bool higher_is_better,
                                       const spec::TuneSpec& tune, const std::vector<Settings>& settings,
                                       const std::vector<std::string>& arm_names);

// The tuning runs' values, [arm][setting][seed] (sweep.tune.metric reduced by sweep.tune.summary;
// NaN where a run did not complete or has no finite value), and whether larger is better.
struct TuningValues {
  std::vector<std::vector<std::vector<double>>> values;
  bool higher_is_better = false;
  std::string label;  // "final loss"
};
TuningValues read_tuning_values(const TuningPlan& tuning, const spec::TuneSpec& tune);

// The confirmation phase: every arm with its chosen setting, once per sweep.seeds, in `dir`.
SweepPlan plan_confirmation(const std::filesystem::path& spec_file, const std::vector<std::string>& overrides,
                            const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base,
                            const std::filesystem::path& dir, const TuningPlan& tuning, const std::vector<ArmChoice>& choices);

// The table of values and choices, for people: one row per arm, one column per setting, the chosen
// one marked, and the caveats (a choice at the edge of its grid).
void print_choices(const TuningPlan& tuning, const TuningValues& values, const std::vector<ArmChoice>& choices,
                   const TuningProgress& progress, std::ostream& out);
// The same as a file beside the tuning runs (DIR/tuning/selection.yaml), written atomically, with
// the pruned settings and the phase's cost.
void write_choices(const TuningPlan& tuning, const TuningValues& values, const std::vector<ArmChoice>& choices,
                   const TuningProgress& progress);

// The sensitivity figure: per arm (a line), the tuning value of each setting (the mean over the
// tuning seeds, a band from their lowest to their highest), against the setting: log10 of the
// value when one numeric key is tuned (a learning rate), else the setting's number in grid order.
// Pruned settings have no final value (a gap). PNG or SVG by `file`'s extension.
void draw_sensitivity(const TuningPlan& tuning, const TuningValues& values, const std::filesystem::path& file);

// The keys tuned per arm (sweep.tune.grid's): shown per arm, not arm axes, in the comparison
// (analysis::CompareOptions::tuned_keys).
std::vector<std::string> tuned_keys(const spec::TuneSpec& tune);

}  // namespace ablate::sweep
