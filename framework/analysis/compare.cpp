// The comparison behind `ablate compare` (see compare.hpp): arms from the varying config keys,
// per-arm aggregation over seeds, Welch's t-test against the baseline arm, steps-to-threshold,
// and the notes a report needs (runs left out of the means, duplicate seeds, several tests).
#include "analysis/compare.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ablate/error.hpp"
#include "analysis/run_summary.hpp"
#include "core/text.hpp"
#include "spec/experiment_spec.hpp"
#include "spec/plugin_validation.hpp"

namespace ablate::analysis {
namespace {

const std::vector<std::pair<RunStatus, const char*>> kStatusNames = {{RunStatus::completed, "completed"},
                                                                     {RunStatus::diverged, "diverged"},
                                                                     {RunStatus::failed, "failed"},
                                                                     {RunStatus::interrupted, "interrupted"},
                                                                     {RunStatus::running, "running"}};

std::string describe_run(const RunSummary& run) {
  if (!run.path.empty()) return run.path;
  return run.run_id.empty() ? std::string("a run") : "run " + run.run_id;
}

std::string plural(std::size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// The whole of `text` as a number, if it is one ("0.001", "1e-3", "42").
std::optional<double> as_number(const std::string& text) {
  double v = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return v;
}

// Orders values numerically where both are numbers (2 < 10, 1e-4 < 0.001), numbers before text,
// text lexicographically; an unset value first.
bool value_less(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  if (!a || !b) return !a && b;
  const auto na = as_number(*a), nb = as_number(*b);
  if (na && nb && *na != *nb) return *na < *nb;
  if (na.has_value() != nb.has_value()) return na.has_value();
  return *a < *b;
}

bool value_matches(const std::string& have, const std::string& want) {
  if (have == want) return true;
  const auto h = as_number(have), w = as_number(want);
  return h && w && *h == *w;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// Whether `text` from `at` starts a "key.path=" (after spaces): where a baseline's next pair begins.
bool starts_pair(const std::string& text, std::size_t at) {
  const std::size_t eq = text.find('=', at);
  if (eq == std::string::npos) return false;
  const std::string key = trim(text.substr(at, eq - at));
  return !key.empty() && std::all_of(key.begin(), key.end(),
                                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
}

// "a=1,b=[0.9, 0.98]" -> {(a, 1), (b, [0.9, 0.98])}: commas inside brackets or braces stay in the
// value, as do commas not followed by a key path and '=' ("description=one, two" is one pair).
std::vector<std::pair<std::string, std::string>> parse_baseline(const std::string& text) {
  const std::string hint = "give the baseline arm as key=value[,key=value], e.g. model.block=post_norm";
  std::vector<std::string> pieces(1);
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '[' || ch == '{' || ch == '(') ++depth;
    if (ch == ']' || ch == '}' || ch == ')') --depth;
    if (ch == ',' && depth == 0 && (pieces.back().find('=') == std::string::npos || starts_pair(text, i + 1))) {
      pieces.emplace_back();
    } else {
      pieces.back() += ch;
    }
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& piece : pieces) {
    const auto eq = piece.find('=');
    if (eq == std::string::npos || trim(piece.substr(0, eq)).empty())
      throw UsageError("baseline '" + text + "': '" + trim(piece) + "' is not key=value", hint);
    out.emplace_back(trim(piece.substr(0, eq)), trim(piece.substr(eq + 1)));
  }
  return out;
}

bool is_excluded(const std::string& key, const std::vector<std::string>& ignore) {
  const auto& replicates = replicate_keys();
  const auto& execution = spec::execution_keys();  // speed, not what is computed
  const auto& kept = spec::kept_files_keys();      // files beside the run, not what is computed
  return key == "description" ||                   // free text (the sweeps compared may each have their own)
         std::find(replicates.begin(), replicates.end(), key) != replicates.end() ||
         std::find(execution.begin(), execution.end(), key) != execution.end() ||
         std::find(kept.begin(), kept.end(), key) != kept.end() || std::find(ignore.begin(), ignore.end(), key) != ignore.end();
}

std::set<std::string> available_metrics(const std::vector<RunSummary>& runs) {
  std::set<std::string> names;
  for (const auto& run : runs)
    for (const auto& [name, value] : run.final_metrics) names.insert(name);
  return names;
}

std::string choose_metric(const std::vector<RunSummary>& runs, const std::string& requested) {
  const auto names = available_metrics(runs);
  if (!requested.empty()) {
    if (names.count(requested) > 0) return requested;
    const std::vector<std::string> list(names.begin(), names.end());
    std::string message = "metric '" + requested + "' is in no run's final metrics";
    if (const auto guess = closest_match(requested, list)) message += "; did you mean '" + *guess + "'?";
    throw UsageError(message, list.empty() ? "the runs have no final metrics (did any evaluation finish?)"
                                           : "the runs have: " + join(list, ", "));
  }
  for (const char* name : {"exact_match", "loss"})
    if (names.count(name) > 0) return name;
  const std::vector<std::string> list(names.begin(), names.end());
  throw UsageError(
      "the runs have neither exact_match nor loss among their final metrics, and no metric was given",
      list.empty() ? "the runs have no final metrics (did any evaluation finish?)" : "choose one of: " + join(list, ", "));
}

std::string key_label(const std::vector<std::string>& keys, const std::vector<std::optional<std::string>>& values) {
  if (keys.empty()) return "all runs";
  std::vector<std::string> set, unset;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (values[i])
      set.push_back(keys[i] + "=" + *values[i]);
    else
      unset.push_back(keys[i] + "=" + kUnset);
  }
  return join(set.empty() ? unset : set, ",");
}

void summarize(Arm& arm, const Comparison& c, const std::vector<RunSummary>& runs, const std::vector<std::size_t>& members) {
  std::vector<double> throughputs;
  for (const auto index : members) {
    const RunSummary& run = runs[index];
    ArmRun r;
    r.run_id = run.run_id;
    r.path = run.path;
    r.status = parse_run_status(run);
    if (const auto it = run.config.find("train.seed"); it != run.config.end()) r.seed = it->second;
    const RunValue v = run_value(run, c.metric, c.metric_higher_is_better, c.summary);
    r.value = v.value;
    r.censored = v.censored;
    r.tokens_per_s = run.tokens_per_s;
    r.code_id = run.code_id;
    arm.parameters = std::max(arm.parameters, run.parameters);
    arm.non_embedding_parameters = std::max(arm.non_embedding_parameters, run.non_embedding_parameters);
    if (std::isfinite(run.flops_per_token) && !(arm.flops_per_token >= run.flops_per_token))
      arm.flops_per_token = run.flops_per_token;
    const auto budget = run.config.find("train.budget.flops");  // flatten_spec's "null" in a tokens budget's spec
    const std::string flops_budget = budget == run.config.end() || budget->second == "null" ? std::string() : budget->second;
    arm.flops_budget = arm.n_runs == 0 || arm.flops_budget == flops_budget ? flops_budget : std::string();
    ++arm.n_runs;
    switch (r.status) {
      case RunStatus::completed: ++arm.n_completed; break;
      case RunStatus::diverged: ++arm.n_diverged; break;
      case RunStatus::failed: ++arm.n_failed; break;
      case RunStatus::interrupted: ++arm.n_interrupted; break;
      case RunStatus::running: ++arm.n_running; break;
    }
    if (r.status == RunStatus::completed) {
      if (std::isfinite(r.value)) {
        arm.metric_values.push_back(r.value);
        arm.value_seeds.push_back(r.seed);
        arm.n_censored += r.censored;
      } else {
        ++arm.n_missing_metric;
      }
      if (std::isfinite(r.tokens_per_s)) throughputs.push_back(r.tokens_per_s);
    }
    arm.runs.push_back(std::move(r));
  }
  arm.mean = mean(arm.metric_values);
  arm.std = sample_std(arm.metric_values);
  arm.tokens_per_s_mean = mean(throughputs);
  arm.tokens_per_s_n = throughputs.size();
}

// Every arm's values come from the same seeds, each once, and there are at least two: the seeds
// are then blocks (a seed's runs share data order and initialisation draws). An arm without any
// value (learned positions past their table: NaN at every length it cannot represent) is tested
// against nothing and does not stop the others from pairing.
bool same_seeds_everywhere(const std::vector<Arm>& arms) {
  std::optional<std::set<std::string>> first;
  for (const auto& arm : arms) {
    if (arm.value_seeds.empty()) continue;
    const std::set<std::string> seeds(arm.value_seeds.begin(), arm.value_seeds.end());
    if (seeds.size() != arm.value_seeds.size() || seeds.count("") > 0) return false;
    if (!first)
      first = seeds;
    else if (seeds != *first)
      return false;
  }
  return first && first->size() >= 2;
}

// `arm`'s values ordered by the seeds of `order` (same set, see same_seeds_everywhere).
std::vector<double> by_seed(const Arm& arm, const std::vector<std::string>& order) {
  std::vector<double> out;
  for (const auto& seed : order)
    out.push_back(arm.metric_values[static_cast<std::size_t>(std::find(arm.value_seeds.begin(), arm.value_seeds.end(), seed) -
                                                             arm.value_seeds.begin())]);
  return out;
}

void test_against_baseline(Comparison& c, const CompareOptions& options) {
  const Arm& base = c.arms[c.baseline];
  const double confidence = 1.0 - c.alpha;
  for (auto& arm : c.arms) {
    if (arm.is_baseline) continue;
    arm.delta = arm.mean - base.mean;
    // Paired: this arm's values in the order of the baseline's seeds.
    // An arm without values has no pairs: its test is undefined, with the note below.
    const bool paired = c.paired && !arm.metric_values.empty();
    const std::vector<double> a = paired ? by_seed(arm, base.value_seeds) : arm.metric_values;
    const std::vector<double>& b = base.metric_values;
    if (paired) {
      arm.test = paired_t_test(a, b, confidence);
    } else {
      arm.test = welch_t_test(a, b, confidence);
    }
    if (!arm.test.defined() && arm.metric_values.size() < 2)
      arm.test.note = "this arm has " + plural(arm.metric_values.size(), "completed run", "completed runs") +
                      " with a value; a t-test needs at least 2 per arm";
    else if (!arm.test.defined() && base.metric_values.size() < 2)
      arm.test.note = "the baseline has " + plural(base.metric_values.size(), "completed run", "completed runs") +
                      " with a value; a t-test needs at least 2 per arm";
    if (a.size() >= 5 && b.size() >= 5) arm.bootstrap = bootstrap_mean_difference(a, b, c.paired, confidence);
    // Seeds needed: the standardized effect from the observed spread (of the differences when
    // paired, else the pooled sd of the two arms).
    double spread = NAN;
    if (c.paired && a.size() >= 2) {
      std::vector<double> d(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
      spread = sample_std(d);
    } else if (a.size() >= 2 && b.size() >= 2) {
      const double sa = sample_std(a), sb = sample_std(b);
      const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
      spread = std::sqrt(((na - 1) * sa * sa + (nb - 1) * sb * sb) / (na + nb - 2));
    }
    if (std::isfinite(spread) && spread > 0.0)
      arm.seeds_needed = n_for_power(std::fabs(arm.delta) / spread, c.alpha, options.power, c.paired);
  }
  std::vector<double> p;
  for (const auto& arm : c.arms) p.push_back(arm.test.p);
  const std::vector<double> adjusted = holm_adjust(p);
  for (std::size_t i = 0; i < c.arms.size(); ++i) c.arms[i].p_holm = adjusted[i];
}

// The factorial analysis when two or more keys vary and every arm sets every key: levels in arm
// order with the baseline's level first (the reference), seeds as blocks when paired.
void fit_factorial(Comparison& c) {
  if (c.keys.size() < 2) return;
  FactorialDesign d;
  d.factors = c.keys;
  const Arm& base = c.arms[c.baseline];
  for (const auto& key : c.keys) {
    if (base.values.count(key) == 0) {
      c.factorial.note = "the baseline arm does not set " + key + ": the arms are not a factorial design";
      return;
    }
    std::vector<std::string> levels = {base.values.at(key)};
    for (const auto& arm : c.arms) {
      const auto it = arm.values.find(key);
      if (it == arm.values.end()) {
        c.factorial.note = "the arm " + arm.label + " does not set " + key + ": the arms are not a factorial design";
        return;
      }
      if (std::find(levels.begin(), levels.end(), it->second) == levels.end()) levels.push_back(it->second);
    }
    d.levels.push_back(levels);
  }
  if (c.paired) d.blocks = base.value_seeds;
  for (const auto& arm : c.arms) {
    std::vector<std::size_t> levels;
    for (std::size_t f = 0; f < c.keys.size(); ++f)
      levels.push_back(static_cast<std::size_t>(std::find(d.levels[f].begin(), d.levels[f].end(), arm.values.at(c.keys[f])) -
                                                d.levels[f].begin()));
    for (std::size_t i = 0; i < arm.metric_values.size(); ++i) {
      FactorialObservation obs;
      obs.levels = levels;
      obs.y = arm.metric_values[i];
      if (c.paired)
        obs.block = static_cast<std::size_t>(std::find(d.blocks.begin(), d.blocks.end(), arm.value_seeds[i]) - d.blocks.begin());
      d.observations.push_back(std::move(obs));
    }
  }
  c.factorial = factorial_analysis(d, 1.0 - c.alpha, c.alpha);
}

void note_cost_spread(Comparison& c, const std::vector<const Arm*>& arms, const std::string& size);

// Arms whose models differ in size or cost by more than c.cost_tolerance: a note naming the
// smallest and the largest (an ablation that changes compute measures the compute too). Across
// model sizes (c.scaling.keys) the sizes differ by design: arms are compared within each size.
void add_compute_notes(Comparison& c) {
  std::map<std::string, std::vector<const Arm*>> groups;  // size -> its arms
  for (const Arm& arm : c.arms)
    groups[c.scaling.keys.empty() ? std::string() : short_label(c.scaling.keys, arm.values)].push_back(&arm);
  for (const auto& [size, arms] : groups) note_cost_spread(c, arms, size);
}

// The note for `arms` (those of one size, or all) when they are further apart than the tolerance.
void note_cost_spread(Comparison& c, const std::vector<const Arm*>& arms, const std::string& size) {
  const auto spread = [&](const char* what, const std::function<double(const Arm&)>& value, const std::string& fix) {
    const Arm* low = nullptr;
    const Arm* high = nullptr;
    for (const Arm* arm : arms) {
      const double v = value(*arm);
      if (!(v > 0)) continue;
      if (!low || v < value(*low)) low = arm;
      if (!high || v > value(*high)) high = arm;
    }
    if (!low || value(*high) <= value(*low) * (1.0 + c.cost_tolerance)) return;
    const double apart = value(*high) / value(*low) - 1.0;
    c.notes.push_back(std::string(size.empty() ? "the arms" : "at size " + size + ", the arms") + " differ in " +
                      std::string(what) + " by " + printf_text(100.0 * apart, "%.1f") + "% (" + low->label + ": " +
                      printf_text(value(*low), "%.4g") + ", " + high->label + ": " + printf_text(value(*high), "%.4g") +
                      "; more than --cost-tolerance " + printf_text(100.0 * c.cost_tolerance, "%g") + "%): " + fix);
  };
  spread(
      "non-embedding parameters", [](const Arm& a) { return static_cast<double>(a.non_embedding_parameters); },
      "part of any difference may be the size, not the component; match the sizes (model.match_parameters) or say "
      "so");
  // Arms that all trained for one FLOPs budget got the same compute in different steps: said, not warned.
  const std::string budget = arms.empty() ? std::string() : arms.front()->flops_budget;
  const bool one_budget =
      !budget.empty() && std::all_of(arms.begin(), arms.end(), [&](const Arm* a) { return a->flops_budget == budget; });
  spread(
      "training FLOPs per token", [](const Arm& a) { return a.flops_per_token; },
      one_budget ? "every arm trained for the same FLOPs (train.budget.flops " + budget +
                       "), so the compute is matched and the cheaper arms took more steps"
                 : std::string("equal steps are not equal compute; compare at matched compute (train.budget: {flops: "
                               "F}; curves with --x flops) or say so"));
}

void add_notes(Comparison& c) {
  add_compute_notes(c);
  std::size_t diverged = 0, failed = 0, interrupted = 0, running = 0, missing = 0;
  for (const auto& arm : c.arms) {
    diverged += arm.n_diverged;
    failed += arm.n_failed;
    interrupted += arm.n_interrupted;
    running += arm.n_running;
    missing += arm.n_missing_metric;
    std::map<std::string, std::size_t> seeds;
    for (const auto& run : arm.runs)
      if (!run.seed.empty()) ++seeds[run.seed];
    for (const auto& [seed, count] : seeds)
      if (count > 1)
        c.notes.push_back(arm.label + ": " + std::to_string(count) + " runs have train.seed=" + seed +
                          "; they are repeats of one seed, not independent replicates");
    std::map<std::string, std::vector<std::string>> by_code;  // code id -> the arm's runs made by it
    for (const auto& run : arm.runs) by_code[run.code_id.empty() ? "unknown" : run.code_id].push_back(run.path);
    if (by_code.size() > 1) {
      std::vector<std::string> groups;
      for (const auto& [code, paths] : by_code) groups.push_back("code " + code + ": " + join(paths, ", "));
      c.notes.push_back("WARNING " + arm.label +
                        " pools runs made by different code (a plugin library or Ablate's "
                        "compute version changed between them; run.h5 plugin_code says what): " +
                        join(groups, "; ") + "; rerun them with one code (ablate sweep reruns runs made by other code)");
    }
  }
  if (c.keys.empty())
    c.notes.push_back(
        "no config key other than the seed varies across the runs: they form one arm, with nothing to "
        "compare against");
  if (diverged > 0)
    c.notes.push_back(plural(diverged, "diverged run is", "diverged runs are") +
                      " counted but not in the means: an arm's mean describes only its runs that completed");
  std::vector<std::string> left_out;
  if (failed > 0) left_out.push_back(std::to_string(failed) + " failed");
  if (interrupted > 0) left_out.push_back(std::to_string(interrupted) + " interrupted");
  if (running > 0) left_out.push_back(std::to_string(running) + " still running");
  if (!left_out.empty()) c.notes.push_back("runs counted but not in the means: " + join(left_out, ", "));
  if (missing > 0)
    c.notes.push_back(plural(missing, "completed run has", "completed runs have") + " no finite final " + c.metric +
                      " and are not in the means");
  std::size_t censored = 0;
  for (const auto& arm : c.arms) censored += arm.n_censored;
  if (censored > 0)
    c.notes.push_back(plural(censored, "run never reached", "runs never reached") +
                      " the target; each counts with its "
                      "last evaluated " +
                      (c.summary.kind == RunValueSpec::Kind::steps_to ? "step" : "time") +
                      " (censored: a lower bound), so those arms' means are restricted means");
  const auto tested =
      std::count_if(c.arms.begin(), c.arms.end(), [](const Arm& a) { return !a.is_baseline && a.test.defined(); });
  if (tested > 1)
    c.notes.push_back(std::to_string(tested) +
                      " arms are each tested against the baseline: p(Holm) corrects for "
                      "testing them as one family (Holm's step-down method)");
}

}  // namespace

const char* to_string(RunStatus status) {
  for (const auto& [value, name] : kStatusNames)
    if (value == status) return name;
  return "?";
}

RunStatus parse_run_status(const RunSummary& run) {
  std::vector<std::string> allowed;
  for (const auto& [value, name] : kStatusNames) {
    if (run.status == name) return value;
    allowed.push_back(name);
  }
  throw Error(describe_run(run) + ": unknown run status '" + run.status + "'; expected one of " + join(allowed, ", "),
              "the file may come from a newer Ablate, or be damaged");
}

const std::vector<std::string>& replicate_keys() {
  // A branch's run (train.branch_from.run) is its seed's own stable run: the branch point
  // (train.branch_from.step) and the spec's keys say which arm it is.
  static const std::vector<std::string> keys = {"train.seed", "train.branch_from.run"};
  return keys;
}

std::vector<std::string> varying_keys(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore) {
  std::set<std::string> all;
  for (const auto& run : runs)
    for (const auto& [key, value] : run.config) all.insert(key);
  std::vector<std::string> out;
  for (const auto& key : all) {
    if (is_excluded(key, ignore)) continue;
    const std::string* first = nullptr;
    bool first_seen = false, varies = false;
    for (const auto& run : runs) {
      const auto it = run.config.find(key);
      const std::string* value = it == run.config.end() ? nullptr : &it->second;
      if (!first_seen) {
        first = value;
        first_seen = true;
      } else if ((first == nullptr) != (value == nullptr) || (first && *first != *value)) {
        varies = true;
        break;
      }
    }
    if (varies) out.push_back(key);
  }
  // An option of a varying plugin whose value follows from the plugin alone (it is there only
  // because the plugin differs, like model.ffn.approximation for gelu) tells no further arms apart.
  auto value_of = [](const RunSummary& run, const std::string& key) -> std::optional<std::string> {
    const auto it = run.config.find(key);
    return it == run.config.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto determined_by = [&](const std::string& parent, const std::string& key) {
    std::map<std::optional<std::string>, std::optional<std::string>> seen;
    for (const auto& run : runs) {
      const auto [it, inserted] = seen.emplace(value_of(run, parent), value_of(run, key));
      if (!inserted && it->second != value_of(run, key)) return false;
    }
    return true;
  };
  std::vector<std::string> kept;
  for (const auto& key : out) {
    const bool redundant = std::any_of(out.begin(), out.end(), [&](const std::string& parent) {
      return key.starts_with(parent + ".") && determined_by(parent, key);
    });
    if (!redundant) kept.push_back(key);
  }
  return kept;
}

std::string short_label(const std::vector<std::string>& keys, const std::map<std::string, std::string>& values) {
  if (keys.empty()) return "all runs";
  std::vector<std::string> parts;
  for (const auto& key : keys) {
    const auto it = values.find(key);
    parts.push_back(it == values.end() ? std::string(kUnset) : it->second);
  }
  return join(parts, " · ");
}

Grouping group_runs(const std::vector<RunSummary>& runs, const std::vector<std::string>& ignore) {
  Grouping g;
  g.keys = varying_keys(runs, ignore);
  using Key = std::vector<std::optional<std::string>>;
  std::vector<std::pair<Key, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Key key;
    for (const auto& k : g.keys) {
      const auto it = runs[i].config.find(k);
      key.push_back(it == runs[i].config.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
    if (group == groups.end())
      groups.emplace_back(key, std::vector<std::size_t>{i});
    else
      group->second.push_back(i);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) {
    return std::lexicographical_compare(x.first.begin(), x.first.end(), y.first.begin(), y.first.end(), value_less);
  });
  for (auto& [key, members] : groups) {
    ArmGroup arm;
    for (std::size_t k = 0; k < g.keys.size(); ++k)
      if (key[k]) arm.values[g.keys[k]] = *key[k];
    arm.label = short_label(g.keys, arm.values);
    arm.key_label = key_label(g.keys, key);
    arm.members = std::move(members);
    g.arms.push_back(std::move(arm));
  }
  return g;
}

std::size_t find_arm(const Grouping& grouping, const std::vector<RunSummary>& runs, const std::string& baseline,
                     const std::vector<std::string>& ignore) {
  if (baseline.empty()) return 0;
  const auto& arms = grouping.arms;
  const auto& keys = grouping.keys;
  const auto pairs = parse_baseline(baseline);
  const bool any_key = std::any_of(pairs.begin(), pairs.end(),
                                   [&](const auto& kv) { return std::find(keys.begin(), keys.end(), kv.first) != keys.end(); });
  std::vector<std::pair<std::string, std::string>> wanted;     // the pairs that tell arms apart
  std::vector<std::pair<std::string, std::string>> runs_have;  // other settings the base's runs have
  std::vector<std::string> labels;
  for (const auto& arm : arms) labels.push_back(arm.key_label);
  const std::string arms_hint = "the arms are: " + join(labels, "; ");
  for (const auto& [key, value] : pairs) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      wanted.emplace_back(key, value);
      continue;
    }
    if (is_excluded(key, ignore))
      throw UsageError("baseline '" + baseline + "': " + key + " does not define arms (" +
                           (key == "train.seed"              ? "seeds are replicates within an arm"
                            : key == "train.branch_from.run" ? "each seed branches from its own run"
                                                             : "it is ignored") +
                           ")",
                       arms_hint);
    const bool known = std::any_of(runs.begin(), runs.end(), [&](const RunSummary& r) { return r.config.count(key) > 0; });
    // Beside keys that define arms, another setting (a sweep's base names its plugins' options,
    // which go with the plugin key that defines the arm) narrows the arms to those whose runs have
    // it at that value, or not at all. Alone, it cannot tell arms apart.
    if (known && any_key) {
      runs_have.emplace_back(key, value);
      continue;
    }
    if (known)
      throw UsageError("baseline '" + baseline + "': " + key +
                           " has the same value in every run, so it does not "
                           "tell arms apart",
                       keys.empty() ? "no key varies: there is a single arm" : "arms differ in: " + join(keys, ", "));
    std::string message = "baseline '" + baseline + "': no run has the key " + key;
    if (const auto guess = closest_match(key, keys)) message += "; did you mean " + *guess + "?";
    throw UsageError(message, keys.empty() ? "no key varies: there is a single arm" : "arms differ in: " + join(keys, ", "));
  }
  std::vector<std::size_t> matches;
  for (std::size_t i = 0; i < arms.size(); ++i) {
    const bool all = std::all_of(wanted.begin(), wanted.end(), [&](const auto& kv) {
      const auto it = arms[i].values.find(kv.first);
      if (kv.second == kUnset) return it == arms[i].values.end();  // KEY=(unset): the arm's runs lack it
      return it != arms[i].values.end() && value_matches(it->second, kv.second);
    });
    const bool have = std::all_of(runs_have.begin(), runs_have.end(), [&](const auto& kv) {
      return std::all_of(arms[i].members.begin(), arms[i].members.end(), [&](std::size_t m) {
        const auto it = runs[m].config.find(kv.first);
        return it == runs[m].config.end() || value_matches(it->second, kv.second);
      });
    });
    if (all && have) matches.push_back(i);
  }
  if (matches.empty()) throw UsageError("baseline '" + baseline + "' matches no arm", arms_hint);
  if (matches.size() > 1) {
    std::vector<std::string> matched;
    for (const auto i : matches) matched.push_back(arms[i].key_label);
    throw UsageError("baseline '" + baseline + "' matches " + std::to_string(matches.size()) + " arms: " + join(matched, "; "),
                     "add key=value pairs until one arm is left");
  }
  return matches.front();
}

std::string arm_selector(const Comparison& c, std::size_t arm) {
  std::vector<std::string> parts;
  for (const std::string& key : c.keys) {
    const auto it = c.arms[arm].values.find(key);
    parts.push_back(key + "=" + (it == c.arms[arm].values.end() ? std::string(kUnset) : it->second));
  }
  return join(parts, ",");
}

bool higher_is_better_by_name(const std::string& name) {
  // METRIC_at_LENGTH (eval.lengths: loss_at_512, test_perplexity_at_512) goes METRIC's way.
  std::string metric = name;
  if (const auto at = metric.rfind("_at_");
      at != std::string::npos && at + 4 < metric.size() && metric.find_first_not_of("0123456789", at + 4) == std::string::npos)
    metric.resize(at);
  const auto ends_with = [&](const std::string& suffix) {
    return metric.size() >= suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const char* lower : {"loss", "perplexity", "bits_per_byte"})  // evals/test/loss: `ablate eval`'s scores
    if (metric == lower || ends_with(std::string("_") + lower) || ends_with(std::string("/") + lower)) return false;
  return true;
}

// The early-stopping metric, direction and target every run shares, if they all share one.
struct SharedEarlyStop {
  std::string metric;
  bool higher_is_better = true;
  double target = NAN;
};
std::optional<SharedEarlyStop> shared_early_stop(const std::vector<RunSummary>& runs) {
  std::optional<SharedEarlyStop> shared;
  for (const auto& run : runs) {
    const auto get = [&](const char* key) {
      const auto it = run.config.find(key);
      return it == run.config.end() ? std::string() : it->second;
    };
    const auto target = as_number(get("train.early_stopping.target"));
    const std::string metric = get("train.early_stopping.metric"), mode = get("train.early_stopping.mode");
    if (!target || metric.empty() || metric == "null") return std::nullopt;
    const SharedEarlyStop here{metric, mode.empty() ? higher_is_better_by_name(metric) : mode != "min", *target};
    if (shared &&
        (shared->metric != here.metric || shared->target != here.target || shared->higher_is_better != here.higher_is_better))
      return std::nullopt;
    shared = here;
  }
  return shared;
}

namespace {

// The keys that never split arms beyond the fixed ones: the ignored and the tuned keys, with the
// plugin options that take a tuned key's value (train.schedule.lr from train.optimizer.lr).
std::vector<std::string> not_axes(const CompareOptions& options) {
  std::vector<std::string> keys = options.ignore_keys;
  for (const std::string& k : options.tuned_keys) {
    keys.push_back(k);
    for (const std::string& copy : spec::inheriting_options(k)) keys.push_back(copy);
  }
  return keys;
}

}  // namespace

void check_baseline(const std::vector<std::string>& resolved_specs, const CompareOptions& options) {
  if (options.baseline.empty()) return;
  std::vector<RunSummary> runs(resolved_specs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) runs[i].config = flatten_spec(resolved_specs[i]);
  find_arm(group_runs(runs, not_axes(options)), runs, options.baseline, not_axes(options));
}

Comparison compare(const std::vector<RunSummary>& runs, const CompareOptions& options) {
  if (runs.empty()) throw UsageError("no runs to compare", "point ablate compare at a folder that holds run files");
  for (const auto& run : runs) parse_run_status(run);  // reject unknown statuses before any work

  Comparison c;
  const auto early = shared_early_stop(runs);
  const bool early_metric = early && available_metrics(runs).count(early->metric) > 0;
  c.metric = options.metric.empty() && early_metric ? early->metric : choose_metric(runs, options.metric);
  const bool stops_on_metric = early_metric && early->metric == c.metric;
  c.higher_is_better_inferred = !options.higher_is_better.has_value() && !stops_on_metric;
  c.metric_higher_is_better =
      options.higher_is_better.value_or(stops_on_metric ? early->higher_is_better : higher_is_better_by_name(c.metric));
  if (options.summary) {
    c.summary = *options.summary;
    c.summary_source = "--summary " + c.summary.text();
  } else if (stops_on_metric) {
    c.summary.kind = RunValueSpec::Kind::steps_to;
    c.summary.target = early->target;
    c.summary_source = "the runs early-stop at this target";
  } else {
    c.summary_source = "default";
  }
  c.higher_is_better = c.summary.higher_is_better(c.metric_higher_is_better);
  c.value_label = c.summary.describe(c.metric, c.metric_higher_is_better);
  c.alpha = options.alpha;
  c.cost_tolerance = options.cost_tolerance;

  const std::vector<std::string> ignore = not_axes(options);
  const Grouping grouping = group_runs(runs, ignore);
  c.keys = grouping.keys;
  c.tuned_keys = options.tuned_keys;
  try {
    c.baseline = find_arm(grouping, runs, options.baseline, ignore);
  } catch (const UsageError& e) {
    if (!options.baseline_is_default) throw;
    c.baseline = 0;
    c.notes.push_back("the sweep's base configuration (" + options.baseline + ") is not an arm of these runs (" + e.what() +
                      "), so the first arm is the baseline");
  }
  for (const ArmGroup& group : grouping.arms) {
    Arm arm;
    arm.label = group.label;
    arm.key_label = group.key_label;
    arm.values = group.values;
    for (const std::string& key : options.tuned_keys)
      for (std::size_t m : group.members) {
        const auto it = runs[m].config.find(key);
        const std::string value = it == runs[m].config.end() ? kUnset : it->second;
        const auto [at, added] = arm.tuned.emplace(key, value);
        if (!added && at->second != value) at->second = "mixed";
      }
    summarize(arm, c, runs, group.members);
    c.arms.push_back(std::move(arm));
  }

  c.arms[c.baseline].is_baseline = true;
  c.paired = same_seeds_everywhere(c.arms);
  test_against_baseline(c, options);
  fit_factorial(c);
  c.scaling.keys = options.scale_keys;  // the compute notes compare arms within a size
  add_notes(c);
  if (!options.scale_keys.empty()) c.scaling = scaling_analysis(c, options.scale_keys);
  return c;
}

}  // namespace ablate::analysis
