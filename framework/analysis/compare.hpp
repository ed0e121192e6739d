// The comparison behind `ablate compare`: runs of a sweep grouped into arms by the spec keys that
// vary between them, seeds aggregated per arm, each arm tested against a baseline arm. Works on
// plain in-memory run summaries (the HDF5 reader fills them); report.hpp renders the result.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/factorial.hpp"
#include "analysis/run_value.hpp"
#include "analysis/scaling.hpp"
#include "analysis/stats.hpp"

namespace ablate::analysis {

// What the reader extracts from one run file.
struct RunSummary {
  std::string run_id;
  std::string path;
  std::string status;                           // completed|diverged|failed|interrupted|running
  std::map<std::string, std::string> config;    // resolved spec flattened: "model.block" -> "pre_norm"
  std::map<std::string, double> final_metrics;  // last eval values: "exact_match", "loss", ...
  std::map<std::string, std::vector<std::pair<std::int64_t, double>>> eval_curves;  // metric -> (step, value)
  double tokens_per_s = NAN;                                                        // median training throughput
  std::vector<std::pair<std::int64_t, double>> elapsed_s;  // train rows: (step, wall seconds since the start)
  std::string code_id;                                     // the code that made it (run.h5 code_id; "" if unknown)
  // Compute (docs/training.md, "Compute"): run.h5's parameter counts and the training FLOPs per
  // target token of its last train row; -1 / NaN in files written before they were recorded.
  std::int64_t parameters = -1, non_embedding_parameters = -1;
  double flops_per_token = NAN;
};

enum class RunStatus { completed, diverged, failed, interrupted, running };
const char* to_string(RunStatus status);
// Throws ablate::Error naming `run` and the allowed set for any other text.
RunStatus parse_run_status(const RunSummary& run);

// Keys whose values differ between the runs of one arm by design (replicates), never arm axes:
// train.seed, and train.branch_from.run (a branch's seed's own stable run).
const std::vector<std::string>& replicate_keys();

// The config keys whose values differ across `runs` (a key missing from some runs but not all
// counts as differing), except replicate_keys(), the execution and kept-files keys
// (spec/experiment_spec.hpp), `description` (free text), `ignore`,
// and except options of a varying plugin whose value follows from the plugin alone
// (model.ffn.approximation, set only for gelu, when model.ffn varies); sorted.
std::vector<std::string> varying_keys(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore = {});

// Whether larger values of `metric` are better, from its name: lower for "loss", "perplexity",
// "bits_per_byte" and names ending in "_" or "/" and one of them; higher for everything else
// (accuracies, exact match).
bool higher_is_better_by_name(const std::string& metric);

// Runs grouped into arms by their values of the varying keys (one grouping for the comparison,
// the factorial analysis and the figures). Arms are ordered by value of each key in turn
// (numbers numerically, unset first); `members` index the runs in input order.
struct ArmGroup {
  std::string label;                          // the varying values only, in key order: "pre_norm · learned · gelu"
  std::string key_label;                      // "model.block=pre_norm,model.ffn=gelu"; keys a run lacks are left out
  std::map<std::string, std::string> values;  // varying key -> value (keys the arm's runs lack absent)
  std::vector<std::size_t> members;
};
struct Grouping {
  std::vector<std::string> keys;  // varying_keys(runs, ignore)
  std::vector<ArmGroup> arms;
};
Grouping group_runs(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore = {});
// How an arm's label, and a baseline, write a key the arm's runs do not set.
inline constexpr const char* kUnset = "(unset)";
// The index of the arm named by "key=value[,key=value]" (values match numerically too: 1e-3 and
// 0.001; "key=(unset)": the arm's runs do not set it); 0 for an empty text. Throws ablate::UsageError, with the arms in the hint, for a text
// that is not key=value pairs, a key that does not tell arms apart, or no or several matching arms.
std::size_t find_arm(const Grouping& grouping, const std::vector<RunSummary>& runs, const std::string& baseline,
                     const std::vector<std::string>& ignore = {});
// The short name of an arm: its values joined by " · " ("(unset)" for a key it lacks), or "all
// runs" when no key varies.
std::string short_label(const std::vector<std::string>& keys, const std::map<std::string, std::string>& values);

struct CompareOptions {
  std::string metric;                    // empty: the sweep's early-stopping metric if all runs share one, else
                                         // "exact_match" if any run has it, else "loss"
  std::optional<bool> higher_is_better;  // the metric's direction; empty: early_stopping.mode, else by name
  std::string baseline;                  // "key=value[,key=value]"; empty: the first arm
  bool baseline_is_default = false;      // `baseline` was not asked for (a sweep's base configuration): when it
                                         // names no arm of these runs, the first arm is the baseline, with a note
  std::optional<RunValueSpec> summary;   // empty: steps_to:TARGET when every run early-stops on the metric at
                                         // one target, else final
  std::vector<std::string> ignore_keys;  // further keys not to split arms by (train.seed and backend.threads never do)
  std::vector<std::string> tuned_keys;   // keys each arm chose for itself (sweep.tune): no arm axes (nor the options
                                         // that take their value), shown per arm instead
  double cost_tolerance = 0.05;          // arms further apart in parameters or FLOPs per token get a note
  std::vector<std::string> scale_keys;   // keys that set the model's size (--scale): the scaling analysis
  double alpha = 0.05;                   // significance level; intervals are at 1 - alpha
  double power = 0.8;                    // for "seeds needed"
};

// One run as the comparison used it.
struct ArmRun {
  std::string run_id;
  std::string path;
  RunStatus status = RunStatus::completed;
  std::string seed;       // config "train.seed", empty if absent
  double value = NAN;     // the run's summary value (NaN if it has none)
  bool censored = false;  // steps_to / time_to: it never reached the target (value: its last step)
  double tokens_per_s = NAN;
  std::string code_id;  // RunSummary::code_id
};

// One arm: the runs sharing the values of every varying key. The statistics cover only its
// completed runs that have a finite value; diverged, failed, interrupted and running runs are
// counted, not averaged. A censored value (never reached the target) is kept at its last step, so
// means of steps_to / time_to are restricted means (lower bounds where runs are censored).
struct Arm {
  std::string label;                          // ArmGroup::label: "pre_norm · 0.001"
  std::string key_label;                      // ArmGroup::key_label: "model.block=pre_norm,train.optimizer.lr=0.001"
  std::map<std::string, std::string> values;  // varying key -> value (keys the arm's runs lack absent)
  std::map<std::string, std::string> tuned;   // tuned key -> the value the arm's runs share ("mixed" if they differ)
  std::vector<ArmRun> runs;                   // in input order
  bool is_baseline = false;

  std::size_t n_runs = 0, n_completed = 0, n_diverged = 0, n_failed = 0, n_interrupted = 0, n_running = 0;
  std::size_t n_missing_metric = 0;      // completed, but without a finite value
  std::size_t n_censored = 0;            // among metric_values
  std::vector<double> metric_values;     // the values the statistics use
  std::vector<std::string> value_seeds;  // [metric_values]: each value's seed
  double mean = NAN, std = NAN;          // std: sample (n - 1); NaN below 2 values
  std::size_t n() const { return metric_values.size(); }

  double delta = NAN;                       // mean - baseline mean (NaN for the baseline itself)
  WelchTest test;                           // this arm (a) against the baseline (b), paired by seed when Comparison::paired
  double p_holm = NAN;                      // test.p adjusted by Holm over all arms tested against the baseline
  Interval bootstrap;                       // percentile bootstrap interval of delta, when both arms have >= 5 values
  std::optional<std::size_t> seeds_needed;  // seeds per arm for `power` at alpha, from the observed spread

  double tokens_per_s_mean = NAN;  // over completed runs with a finite throughput
  std::size_t tokens_per_s_n = 0;
  // The arm's compute: the largest parameter counts and FLOPs per token among its runs (one model,
  // so they agree unless the data's lengths differ); -1 / NaN where no run recorded them.
  std::int64_t parameters = -1, non_embedding_parameters = -1;
  double flops_per_token = NAN;
  std::string flops_budget;  // config "train.budget.flops" when every run of the arm has the same one, else ""
};

struct Comparison {
  std::string metric;
  bool metric_higher_is_better = true;    // the metric's own direction (reaching a target uses it)
  bool higher_is_better = true;           // the compared value's: summary.higher_is_better(metric's)
  bool higher_is_better_inferred = true;  // the metric's direction came from its name (not given)
  RunValueSpec summary;
  std::string summary_source;           // why this summary: "--summary", "early stopping at 0.99", "default"
  std::string value_label;              // summary.describe(metric): "steps to exact_match ≥ 0.99"
  std::vector<std::string> keys;        // the varying keys arms are split by
  std::vector<std::string> tuned_keys;  // CompareOptions::tuned_keys: one value per arm (Arm::tuned)
  double alpha = 0.05;
  double cost_tolerance = 0.05;    // CompareOptions::cost_tolerance
  std::size_t baseline = 0;        // index into arms
  std::vector<Arm> arms;           // in a stable order: by value of each key in turn, numbers numerically
  bool paired = false;             // every arm has the same seeds: tests are paired by seed, seeds are blocks
  FactorialAnalysis factorial;     // when two or more keys vary (defined() says whether it could be fitted)
  std::vector<std::string> notes;  // things the reader of a report must know (runs left out, ...)
  ScalingAnalysis scaling;         // with CompareOptions::scale_keys: across model sizes
};

// Groups, aggregates and tests. Throws ablate::Error (with a hint) for no runs, an unknown run
// status, a metric no run has, or a baseline that names no arm (or several).
Comparison compare(const std::vector<RunSummary>& runs, const CompareOptions& options = {});

// A baseline text that names arm `arm` of `c` alone: every varying key at its value, KEY=(unset)
// for those its runs lack (the arm's key_label leaves them out, and may then match several arms).
std::string arm_selector(const Comparison& c, std::size_t arm);

// Throws the UsageError compare() would throw for options.baseline (naming no arm, or several) on
// runs of these resolved specs (RunInfo::resolved_spec_yaml): `ablate sweep --baseline` checked
// before any run trains. An empty baseline passes.
void check_baseline(const std::vector<std::string>& resolved_specs, const CompareOptions& options);

}  // namespace ablate::analysis
