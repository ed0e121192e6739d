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

#include "analysis/stats.hpp"

namespace ablate::analysis {

// What the reader extracts from one run file.
struct RunSummary {
  std::string run_id;
  std::string path;
  std::string status;                                // completed|diverged|failed|interrupted|running
  std::map<std::string, std::string> config;         // resolved spec flattened: "model.block" -> "pre_norm"
  std::map<std::string, double> final_metrics;       // last eval values: "exact_match", "loss", ...
  std::map<std::string, std::vector<std::pair<std::int64_t, double>>> eval_curves;  // metric -> (step, value)
  double tokens_per_s = NAN;                         // median training throughput
  std::string code_id;                               // the code that made it (run.h5 code_id; "" if unknown)
};

enum class RunStatus { completed, diverged, failed, interrupted, running };
const char* to_string(RunStatus status);
// Throws ablate::Error naming `run` and the allowed set for any other text.
RunStatus parse_run_status(const RunSummary& run);

// Keys whose values differ between the runs of one arm by design (replicates), never arm axes:
// exactly {"train.seed"}.
const std::vector<std::string>& replicate_keys();

// The config keys whose values differ across `runs` (a key missing from some runs but not all
// counts as differing), except replicate_keys(), the execution keys (backend.threads) and `ignore`,
// and except options of a varying plugin whose value follows from the plugin alone
// (model.ffn.approximation, set only for gelu, when model.ffn varies); sorted.
std::vector<std::string> varying_keys(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore = {});

// Whether larger values of `metric` are better, from its name: lower for "loss", "perplexity" and
// names ending in "_loss" / "_perplexity"; higher for everything else (accuracies, exact match).
bool higher_is_better_by_name(const std::string& metric);

// Runs grouped into arms by their values of the varying keys (one grouping for the comparison,
// the factorial analysis and the figures). Arms are ordered by value of each key in turn
// (numbers numerically, unset first); `members` index the runs in input order.
struct ArmGroup {
  std::string label;      // the varying values only, in key order: "pre_norm · learned · gelu"
  std::string key_label;  // "model.block=pre_norm,model.ffn=gelu"; keys a run lacks are left out
  std::map<std::string, std::string> values;  // varying key -> value (keys the arm's runs lack absent)
  std::vector<std::size_t> members;
};
struct Grouping {
  std::vector<std::string> keys;  // varying_keys(runs, ignore)
  std::vector<ArmGroup> arms;
};
Grouping group_runs(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore = {});
// The short name of an arm: its values joined by " · " ("(unset)" for a key it lacks), or "all
// runs" when no key varies.
std::string short_label(const std::vector<std::string>& keys, const std::map<std::string, std::string>& values);

struct CompareOptions {
  std::string metric;                    // empty: "exact_match" if any run has it, else "loss"
  std::optional<bool> higher_is_better;  // empty: higher_is_better_by_name(metric)
  std::string baseline;                  // "key=value[,key=value]"; empty: the first arm
  std::optional<double> threshold;       // steps-to-threshold on `metric`'s eval curve; empty: not computed
  std::vector<std::string> ignore_keys;  // further keys not to split arms by (train.seed and backend.threads never do)
  double alpha = 0.05;                   // significance level marked in the renderers
};

// One run as the comparison used it.
struct ArmRun {
  std::string run_id;
  std::string path;
  RunStatus status = RunStatus::completed;
  std::string seed;                      // config "train.seed", empty if absent
  double value = NAN;                    // final metric (NaN if absent)
  std::optional<std::int64_t> threshold_step;  // first eval step that reached the threshold
  double tokens_per_s = NAN;
  std::string code_id;  // RunSummary::code_id
};

// One arm: the runs sharing the values of every varying key. The metric statistics cover only its
// completed runs that have a finite metric value; diverged, failed, interrupted and running runs
// are counted, not averaged. Steps-to-threshold and tokens/s also cover completed runs only.
struct Arm {
  std::string label;      // ArmGroup::label: "pre_norm · 0.001"
  std::string key_label;  // ArmGroup::key_label: "model.block=pre_norm,train.optimizer.lr=0.001"
  std::map<std::string, std::string> values;  // varying key -> value (keys the arm's runs lack absent)
  std::vector<ArmRun> runs;                   // in input order
  bool is_baseline = false;

  std::size_t n_runs = 0, n_completed = 0, n_diverged = 0, n_failed = 0, n_interrupted = 0, n_running = 0;
  std::size_t n_missing_metric = 0;   // completed, but without a finite value of the metric
  std::vector<double> metric_values;  // the values the statistics use
  double mean = NAN, std = NAN;       // std: sample (n - 1); NaN below 2 values
  std::size_t n() const { return metric_values.size(); }

  double delta = NAN;  // mean - baseline mean (NaN for the baseline itself)
  WelchTest test;      // this arm (a) against the baseline (b); p NaN with a note where undefined

  double threshold_step_mean = NAN;   // mean first step reaching the threshold, over the runs that did
  std::size_t threshold_reached = 0;  // completed runs that reached it
  std::size_t threshold_considered = 0;  // completed runs with an eval curve of the metric

  double tokens_per_s_mean = NAN;  // over completed runs with a finite throughput
  std::size_t tokens_per_s_n = 0;
};

struct Comparison {
  std::string metric;
  bool higher_is_better = true;
  bool higher_is_better_inferred = true;  // from the metric's name (not overridden)
  std::vector<std::string> keys;          // the varying keys arms are split by
  std::optional<double> threshold;
  double alpha = 0.05;
  std::size_t baseline = 0;  // index into arms
  std::vector<Arm> arms;     // in a stable order: by value of each key in turn, numbers numerically
  std::vector<std::string> notes;  // things the reader of a report must know (runs left out, ...)
};

// Groups, aggregates and tests. Throws ablate::Error (with a hint) for no runs, an unknown run
// status, a metric no run has, or a baseline that names no arm (or several).
Comparison compare(const std::vector<RunSummary>& runs, const CompareOptions& options = {});

}  // namespace ablate::analysis
