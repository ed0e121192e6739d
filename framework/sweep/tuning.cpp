// Per-arm tuning (tuning.hpp): the two phases' plans, the tuning runs' values, the choice.
#include "sweep/tuning.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"
#include "analysis/plot.hpp"
#include "analysis/run_summary.hpp"
#include "analysis/run_value.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"
#include "spec/spec_schema.hpp"
#include "sweep/run_state.hpp"
#include "sweep/sweep_status.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;

namespace {

// The points of `runs`, each once per seed of `seeds` (seed fastest), named as a sweep names them.
std::vector<spec::SweepPoint> points_of(const std::vector<Settings>& runs, const std::vector<std::int64_t>& seeds) {
  std::vector<Settings> points;
  for (const Settings& run : runs)
    for (std::int64_t seed : seeds) {
      Settings s = run;
      s.emplace_back("train.seed", std::to_string(seed));
      points.push_back(std::move(s));
    }
  return spec::name_points(std::move(points));
}

std::string numbers_text(const std::vector<std::int64_t>& numbers) {
  std::vector<std::string> parts;
  for (std::int64_t n : numbers) parts.push_back(std::to_string(n));
  return join(parts, ", ");
}

std::string settings_text(const Settings& settings) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : settings) parts.push_back(k + "=" + v);
  return join(parts, ",");
}

// The keys of the tuned settings (the first setting's: every setting sets the same keys).
std::vector<std::string> tuned_keys_only(const TuningPlan& tuning) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : tuning.settings.front()) keys.push_back(k);
  return keys;
}

}  // namespace

std::vector<std::string> tuned_keys(const spec::TuneSpec& tune) {
  std::vector<std::string> keys;
  for (const auto& [key, values] : tune.grid) keys.push_back(key);
  return keys;
}

TuningPlan plan_tuning(const fs::path& spec_file, const std::vector<std::string>& overrides,
                       const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base, const fs::path& dir) {
  const spec::SweepSpec& sweep = base.spec.sweep;
  const spec::TuneSpec& tune = sweep.tune;
  const spec::SourceMark mark = base.spec.marks.of("sweep.tune");
  const std::string at = mark.line > 0 ? mark.str() + ": " : std::string();
  if (tune.metric.empty() || tune.metric.starts_with("test_"))
    throw UsageError(at + "sweep.tune.metric: '" + tune.metric +
                         "' cannot select a setting; expected an eval metric (loss, perplexity, a task score)",
                     "the test split is scored once, for the report: choosing on it would leak it into the choice");
  try {
    (void)analysis::parse_run_value(tune.summary);
  } catch (const UsageError& e) {
    throw UsageError(at + "sweep.tune.summary: " + e.what(), e.hint());
  }
  TuningPlan t;
  spec::SweepSpec arms_only = sweep;  // grid x zip and the explicit runs, without seeds
  arms_only.seeds.clear();
  arms_only.tune = {};
  t.arms = spec::expand_sweep(arms_only);
  t.settings = spec::cartesian(tune.grid);
  t.seeds = tune.seeds;
  std::vector<Settings> runs;
  for (const spec::SweepPoint& arm : t.arms)
    for (const Settings& setting : t.settings) {
      Settings s = arm.settings;
      s.insert(s.end(), setting.begin(), setting.end());
      runs.push_back(std::move(s));
    }
  t.plan = plan_points(spec_file, overrides, plugin_paths, base, dir / analysis::kTuningRunsFolder, points_of(runs, tune.seeds),
                       "sweep.tune");
  if (tune.eta == 1)
    throw UsageError(at + "sweep.tune.eta: 1 keeps every setting at every rung; expected 0 (no halving) or >= 2",
                     "eta 3 keeps the best third of each arm's settings at each rung");
  if (tune.eta >= 2)
    for (const SweepRun& run : t.plan.runs) {
      const std::int64_t steps = run.spec.train.steps, every = run.spec.eval.every;
      if (tune.first_rung < 1 || tune.first_rung >= steps || tune.first_rung % every != 0)
        throw UsageError(at + "sweep.tune.first_rung: " + std::to_string(tune.first_rung) + " for run " + run.point.name +
                             " (train.steps " + std::to_string(steps) + ", eval.every " + std::to_string(every) +
                             "); expected an evaluation step below train.steps: the rungs (first_rung x eta^k) compare "
                             "evaluations",
                         "set first_rung to a multiple of eval.every, e.g. train.steps / eta^2");
      if (steps != t.plan.runs.front().spec.train.steps)
        throw UsageError(at + "sweep.tune.eta: the tuning runs train for different train.steps (" + run.point.name + ": " +
                             std::to_string(steps) + ")",
                         "successive halving compares settings at the same steps: give every arm the same train.steps");
    }
  const std::size_t K = t.settings.size(), S = t.seeds.size();
  t.run_of.assign(t.arms.size(), std::vector<std::vector<std::size_t>>(K, std::vector<std::size_t>(S)));
  for (std::size_t a = 0; a < t.arms.size(); ++a)
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t s = 0; s < S; ++s) t.run_of[a][k][s] = t.plan.point_run[(a * K + k) * S + s];
  return t;
}

namespace {

// The eval value of `metric` at `step` in the run file of `dir`; NaN when there is none.
double value_at(const fs::path& dir, const std::string& metric, std::int64_t step) {
  const analysis::RunSummary run = analysis::summarize(results::RunReader(dir / "run.h5"));
  const auto curve = run.eval_curves.find(metric);
  if (curve != run.eval_curves.end())
    for (const auto& [s, v] : curve->second)
      if (s == step) return v;
  return NAN;
}

}  // namespace

std::vector<std::size_t> promote(const std::vector<std::size_t>& alive, const std::vector<double>& sums, std::int64_t eta,
                                 bool higher_is_better) {
  std::vector<std::pair<double, std::size_t>> ranked;  // (value, better first; setting)
  for (std::size_t i = 0; i < alive.size(); ++i)
    if (std::isfinite(sums[i])) ranked.emplace_back(higher_is_better ? -sums[i] : sums[i], alive[i]);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const auto e = static_cast<std::size_t>(eta);
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < std::min(ranked.size(), (alive.size() + e - 1) / e); ++i) kept.push_back(ranked[i].second);
  std::sort(kept.begin(), kept.end());
  return kept;
}

TuningProgress advance_tuning(const TuningPlan& tuning, const spec::TuneSpec& tune,
                              const std::function<bool(const SweepPlan&)>& execute, std::ostream& out) {
  TuningProgress p;
  const std::size_t A = tuning.arms.size(), K = tuning.settings.size();
  const std::int64_t steps = tuning.plan.runs.front().spec.train.steps;
  if (tune.eta >= 2)
    for (std::int64_t r = tune.first_rung; r < steps; r *= tune.eta) p.rungs.push_back(r);
  p.rungs.push_back(steps);
  p.pruned_at.assign(A, std::vector<std::int64_t>(K, 0));
  const bool higher = analysis::higher_is_better_by_name(tune.metric);
  std::vector<std::vector<std::size_t>> alive(A);
  for (auto& a : alive)
    for (std::size_t k = 0; k < K; ++k) a.push_back(k);
  for (std::size_t n = 0; n < p.rungs.size(); ++n) {
    const std::int64_t rung = p.rungs[n], stop = rung < steps ? rung : 0;
    SweepPlan sub = tuning.plan;  // the kept settings' runs, to this rung
    sub.runs.clear();
    sub.stop_at = stop;
    std::vector<bool> in(tuning.plan.runs.size(), false);
    for (std::size_t a = 0; a < A; ++a)
      for (std::size_t k : alive[a])
        for (std::size_t r : tuning.run_of[a][k]) in[r] = true;
    for (std::size_t r = 0; r < in.size(); ++r)
      if (in[r]) sub.runs.push_back(tuning.plan.runs[r]);
    if (p.rungs.size() > 1)
      out << "tuning rung " << n + 1 << " of " << p.rungs.size() << ": " << sub.runs.size() << " runs to step " << rung << "\n";
    if (!execute(sub)) return p;
    const std::vector<RunPhaseInfo> phases = read_phases(sub);
    p.needed = sub.runs.size();
    p.finished = static_cast<std::size_t>(
        std::count_if(phases.begin(), phases.end(), [&](const RunPhaseInfo& i) { return reached(i, stop); }));
    if (p.finished < p.needed) return p;
    if (stop == 0) break;
    std::size_t kept_total = 0, alive_total = 0;
    for (std::size_t a = 0; a < A; ++a) {  // each arm keeps its best ceil(n / eta) settings at this step
      std::vector<double> sums;
      for (std::size_t k : alive[a]) {
        double sum = 0.0;
        for (std::size_t r : tuning.run_of[a][k]) sum += value_at(tuning.plan.run_dir(tuning.plan.runs[r]), tune.metric, rung);
        sums.push_back(sum);
      }
      const std::vector<std::size_t> kept = promote(alive[a], sums, tune.eta, higher);
      for (std::size_t k : alive[a])
        if (!std::binary_search(kept.begin(), kept.end(), k)) p.pruned_at[a][k] = rung;
      alive_total += alive[a].size();
      kept_total += kept.size();
      alive[a] = std::move(kept);
    }
    out << "tuning rung at step " << rung << ": kept " << kept_total << " of " << alive_total << " settings\n";
  }
  p.done = true;
  const std::vector<RunPhaseInfo> phases = read_phases(tuning.plan);
  for (std::size_t i = 0; i < phases.size(); ++i) {  // the phase's cost: what its runs trained
    if (phases[i].phase == RunPhase::Pending) continue;
    ++p.runs;
    p.run_steps += phases[i].step;
    const analysis::RunSummary summary =
        analysis::summarize(results::RunReader(tuning.plan.run_dir(tuning.plan.runs[i]) / "run.h5"));
    if (!summary.elapsed_s.empty()) p.run_seconds += summary.elapsed_s.back().second;
  }
  return p;
}

std::vector<ArmChoice> choose_settings(const std::vector<std::vector<std::vector<double>>>& values, bool higher_is_better,
                                       const spec::TuneSpec& tune, const std::vector<Settings>& settings,
                                       const std::vector<std::string>& arm_names) {
  std::vector<ArmChoice> out;
  std::vector<std::string> without;
  for (std::size_t a = 0; a < values.size(); ++a) {
    ArmChoice c;
    bool any = false;
    for (std::size_t k = 0; k < values[a].size(); ++k) {
      double sum = 0.0;
      bool all = !values[a][k].empty();
      for (double v : values[a][k]) {
        all = all && std::isfinite(v);
        sum += v;
      }
      const double mean = all ? sum / static_cast<double>(values[a][k].size()) : NAN;
      c.means.push_back(mean);
      if (!all) continue;
      const double best = c.means[c.setting];
      if (!any || (higher_is_better ? mean > best : mean < best)) c.setting = k;
      any = true;
    }
    if (!any) {
      without.push_back(arm_names[a]);
      continue;
    }
    for (std::size_t i = 0; i < tune.grid.size(); ++i) {  // the chosen value of each tuned key, at its list's ends?
      const auto& [key, listed] = tune.grid[i];
      const std::string& chosen = settings[c.setting][i].second;
      if (listed.size() >= 3 && (chosen == listed.front() || chosen == listed.back())) c.at_edge.push_back(key);
    }
    out.push_back(std::move(c));
  }
  if (!without.empty())
    throw UsageError("sweep.tune: no setting of " + join(without, "; ") +
                         " has a value on every tuning seed (each diverged, failed or lacks the metric); nothing to confirm",
                     "look at the tuning runs (ablate sweep SPEC --status): widen sweep.tune.grid towards stable values, "
                     "or fix the failed runs and run again with --rerun-failed");
  return out;
}

TuningValues read_tuning_values(const TuningPlan& tuning, const spec::TuneSpec& tune) {
  TuningValues out;
  const analysis::RunValueSpec summary = analysis::parse_run_value(tune.summary);
  const bool metric_higher = analysis::higher_is_better_by_name(tune.metric);
  out.higher_is_better = summary.higher_is_better(metric_higher);
  out.label = summary.describe(tune.metric, metric_higher);
  std::vector<double> of_run(tuning.plan.runs.size(), NAN);
  const std::vector<RunPhaseInfo> phases = read_phases(tuning.plan);  // the run files vetted too
  bool any = false, metric_seen = false;
  std::vector<std::string> metrics_seen;
  for (std::size_t i = 0; i < tuning.plan.runs.size(); ++i) {
    if (phases[i].phase != RunPhase::Completed) continue;
    any = true;
    const analysis::RunSummary run = analysis::summarize(results::RunReader(tuning.plan.run_dir(tuning.plan.runs[i]) / "run.h5"));
    if (run.eval_curves.count(tune.metric)) {
      metric_seen = true;
    } else if (metrics_seen.empty()) {
      for (const auto& [name, curve] : run.eval_curves) metrics_seen.push_back(name);
    }
    const analysis::RunValue v = analysis::run_value(run, tune.metric, metric_higher, summary);
    of_run[i] = v.value;
  }
  if (any && !metric_seen)
    throw UsageError(
        "sweep.tune.metric: no tuning run has an eval metric '" + tune.metric + "' (they have: " + join(metrics_seen, ", ") + ")",
        "choose one of those; eval.metrics and the task's scores name what a run records");
  out.values.assign(tuning.arms.size(), {});
  for (std::size_t a = 0; a < tuning.arms.size(); ++a)
    for (const auto& runs : tuning.run_of[a]) {
      std::vector<double> v;
      for (std::size_t r : runs) v.push_back(of_run[r]);
      out.values[a].push_back(std::move(v));
    }
  return out;
}

SweepPlan plan_confirmation(const fs::path& spec_file, const std::vector<std::string>& overrides,
                            const std::vector<std::string>& plugin_paths, const validation::LoadedSpec& base, const fs::path& dir,
                            const TuningPlan& tuning, const std::vector<ArmChoice>& choices) {
  std::vector<Settings> runs;
  for (std::size_t a = 0; a < tuning.arms.size(); ++a) {
    Settings s = tuning.arms[a].settings;
    const Settings& chosen = tuning.settings[choices[a].setting];
    s.insert(s.end(), chosen.begin(), chosen.end());
    runs.push_back(std::move(s));
  }
  return plan_points(spec_file, overrides, plugin_paths, base, dir, points_of(runs, base.spec.sweep.seeds), "sweep");
}

void print_choices(const TuningPlan& tuning, const TuningValues& values, const std::vector<ArmChoice>& choices,
                   const TuningProgress& progress, std::ostream& out) {
  out << "tuning: " << values.label << ", mean over seeds " << numbers_text(tuning.seeds) << " ("
      << (values.higher_is_better ? "higher" : "lower") << " is better; * chosen, - not every seed has a value)\n";
  std::vector<std::string> header = {"arm"}, keys = tuned_keys_only(tuning);
  for (const Settings& s : tuning.settings) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : s) parts.push_back(spec::short_key(k, keys) + "=" + v);
    header.push_back(join(parts, ","));
  }
  std::vector<std::vector<std::string>> rows = {header};
  for (std::size_t a = 0; a < choices.size(); ++a) {
    std::vector<std::string> row = {tuning.arms[a].name};
    for (std::size_t k = 0; k < tuning.settings.size(); ++k) {
      std::ostringstream cell;
      const double m = choices[a].means[k];
      if (progress.pruned_at[a][k] > 0)
        cell << "pruned@" << progress.pruned_at[a][k];
      else if (std::isfinite(m))
        cell << std::setprecision(4) << m;
      else
        cell << "-";
      row.push_back(cell.str() + (k == choices[a].setting ? "*" : " "));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    out << " ";
    for (std::size_t c = 0; c < row.size(); ++c)
      out << " " << (c == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << row[c];
    out << std::left << "\n";
  }
  for (std::size_t a = 0; a < choices.size(); ++a)
    if (!choices[a].at_edge.empty())
      out << "caveat: " << tuning.arms[a].name << " chose " << join(choices[a].at_edge, ", ")
          << " at the edge of its grid: extend the grid past it (the best value may lie beyond)\n";
  out << "tuning cost: " << progress.runs << " runs, " << progress.run_steps << " steps trained in all, " << std::setprecision(4)
      << progress.run_seconds / 60.0 << " min of training (summed over the runs)\n";
}

void write_choices(const TuningPlan& tuning, const TuningValues& values, const std::vector<ArmChoice>& choices,
                   const TuningProgress& progress) {
  std::ostringstream y;
  y << "# written by `ablate sweep`: each arm's tuned setting, chosen on the tuning seeds' runs beside this file\n"
    << "value: " << values.label << "\nhigher_is_better: " << (values.higher_is_better ? "true" : "false") << "\nseeds: ["
    << numbers_text(tuning.seeds) << "]\nrungs: [" << numbers_text(progress.rungs) << "]\ncost: {runs: " << progress.runs
    << ", steps: " << progress.run_steps << ", seconds: " << number_text(progress.run_seconds) << "}\narms:\n";
  for (std::size_t a = 0; a < choices.size(); ++a) {
    y << "  - arm: \"" << tuning.arms[a].name << "\"\n    chosen: {";
    const Settings& chosen = tuning.settings[choices[a].setting];
    for (std::size_t i = 0; i < chosen.size(); ++i) y << (i ? ", " : "") << chosen[i].first << ": " << chosen[i].second;
    y << "}\n    at_edge: [" << join(choices[a].at_edge, ", ") << "]\n    means:\n";
    for (std::size_t k = 0; k < tuning.settings.size(); ++k) {
      const double m = choices[a].means[k];
      y << "      - {setting: \"" << settings_text(tuning.settings[k])
        << "\", mean: " << (std::isfinite(m) ? number_text(m) : ".nan") << ", pruned_at: " << progress.pruned_at[a][k] << "}\n";
    }
  }
  write_file_atomically(tuning.plan.dir / "selection.yaml", y.str());
}

void draw_sensitivity(const TuningPlan& tuning, const TuningValues& values, const fs::path& file) {
  // x: log10 of one numeric tuned key's values, else the setting's number.
  std::vector<double> x;
  bool numeric = tuning.settings.front().size() == 1;
  for (const Settings& s : tuning.settings) {
    const std::optional<double> v = numeric ? spec::detail::parse_float(s.front().second) : std::nullopt;
    numeric = numeric && v && *v > 0;
    x.push_back(numeric ? std::log10(*v) : static_cast<double>(x.size() + 1));
  }
  if (!numeric)
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<double>(k + 1);
  analysis::LinePlot plot;
  plot.title = "tuning: " + values.label + " per setting";
  plot.subtitle = "mean over tuning seeds " + numbers_text(tuning.seeds) + " (band: lowest to highest seed)";
  const std::string key = tuning.settings.front().empty() ? std::string() : tuning.settings.front().front().first;
  plot.x_label = numeric ? "log10 " + key : "setting (grid order)";
  plot.y_label = values.label;
  for (std::size_t a = 0; a < tuning.arms.size(); ++a) {
    analysis::Series series;
    series.label = tuning.arms[a].name;
    series.x = x;
    for (const std::vector<double>& seeds : values.values[a]) {
      double sum = 0.0, lo = INFINITY, hi = -INFINITY;
      bool all = !seeds.empty();
      for (double v : seeds) {
        all = all && std::isfinite(v);
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      series.mean.push_back(all ? sum / static_cast<double>(seeds.size()) : NAN);
      series.lower.push_back(all ? lo : NAN);
      series.upper.push_back(all ? hi : NAN);
    }
    plot.series.push_back(std::move(series));
  }
  fs::create_directories(file.parent_path());
  analysis::line_plot(file, plot);
}

}  // namespace ablate::sweep
