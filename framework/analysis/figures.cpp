// draw_figures (figures.hpp): reads the run files once, groups them into arms with group_runs(),
// and lays out each figure for plot.hpp — curves, one run's attention, entropy, and the head
// scores, head differences and rollout across arms (attention_heads.hpp computes the numbers).
#include "analysis/figures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "ablate/error.hpp"
#include "analysis/attention_heads.hpp"
#include "analysis/compare.hpp"
#include "analysis/plot.hpp"
#include "analysis/run_summary.hpp"
#include "analysis/stats.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"

namespace ablate::analysis {
namespace {
namespace fs = std::filesystem;

using Curve = StepCurve;

// Each x axis once: its `--x` name, the train log column that places steps on it (none for the
// step itself) and its title.
struct AxisInfo {
  CurveAxis axis;
  const char* name;
  const char* column;
  const char* title;
};
constexpr AxisInfo kAxes[] = {{CurveAxis::step, "step", nullptr, "step"},
                              {CurveAxis::tokens, "tokens", "tokens", "tokens seen"},
                              {CurveAxis::flops, "flops", "flops", "training FLOPs"},
                              {CurveAxis::time, "time", "elapsed_s", "wall time (s)"}};

const AxisInfo& axis_info(CurveAxis axis) {
  for (const AxisInfo& a : kAxes)
    if (a.axis == axis) return a;
  return kAxes[0];
}

// One run as the figures need it (attention tensors are read again only for the runs drawn).
struct FigureRun {
  RunSummary summary;
  Curve train_loss;
  std::map<CurveAxis, Curve> axes;        // the train log's tokens / flops / elapsed_s by step; absent: not logged
  std::map<std::string, double> entropy;  // "enc.self L0 H1" -> final-log entropy (nats)
  std::vector<std::string> entropy_order;
  std::optional<RunHeadScores> heads;  // the last attention log's head scores; empty without attention logs
};

FigureRun read_run(const fs::path& file) {
  const results::RunReader reader(file);
  FigureRun r;
  r.summary = summarize(reader);
  const results::MetricTable train = reader.metrics(results::MetricSplit::Train);
  const auto column = [&](const char* name, Curve& into) {
    if (const std::vector<double>* v = train.find(name))
      for (std::size_t i = 0; i < train.steps.size() && i < v->size(); ++i) into.emplace_back(train.steps[i], (*v)[i]);
  };
  column("loss", r.train_loss);
  for (const AxisInfo& a : kAxes) {
    if (!a.column) continue;
    Curve c;
    column(a.column, c);
    if (!c.empty()) r.axes[a.axis] = std::move(c);
  }
  const auto& slots = reader.layout().entropy;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const results::FloatTensor t = reader.entropy(s);  // [rows, H]
    if (t.shape.size() != 2 || t.shape[0] == 0) continue;
    const std::int64_t rows = t.shape[0], heads = t.shape[1];
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::string name = head_name(slots[s].stack, slots[s].kind, slots[s].layer, static_cast<std::size_t>(h));
      r.entropy[name] = t.values[static_cast<std::size_t>((rows - 1) * heads + h)];
      r.entropy_order.push_back(name);
    }
  }
  if (!reader.attention_steps().empty()) r.heads = run_head_scores(reader);
  return r;
}

// The last attention log of a run, read when a figure draws it.
AttentionLogData last_attention_log(const FigureRun& run) {
  const results::RunReader reader(run.summary.path);
  return read_attention_log(reader, reader.attention_steps().size() - 1);
}

// A run's curve on the axis x; nothing when the run has not logged that axis.
std::optional<PlacedCurve> placed(const FigureRun& r, const Curve* values, CurveAxis x) {
  if (x == CurveAxis::step) return PlacedCurve{values, nullptr};
  const auto it = r.axes.find(x);
  if (it == r.axes.end()) return std::nullopt;
  return PlacedCurve{values, &it->second};
}

// Tick labels of one attention axis on probe example 0: the words of its text when they match the
// valid length, else the token ids; padded positions get "".
std::vector<std::string> token_labels(const results::Probe& probe, const std::string& side_name, std::size_t n) {
  const results::ProbeTokens* side = probe_side(probe, side_name);
  std::vector<std::string> labels(n);
  if (!side) {
    for (std::size_t i = 0; i < n; ++i) labels[i] = std::to_string(i);
    return labels;
  }
  const std::size_t valid = valid_positions(side, 0, n);
  std::vector<std::string> words;
  if (!side->texts.empty() && !side->texts[0].empty()) {
    std::istringstream in(side->texts[0]);
    for (std::string w; in >> w;) words.push_back(w);
  }
  const bool use_words = words.size() == valid;
  for (std::size_t i = 0; i < valid; ++i)
    labels[i] = use_words ? words[i] : i < side->ids.size() ? std::to_string(side->ids[i]) : std::string();
  return labels;
}

// One head's map on probe example 0 as a heatmap panel, padding masked.
HeatmapPanel map_panel(const SlotAttention& s, std::size_t head, std::string title) {
  const AttentionMap a = s.map(0, head);
  HeatmapPanel p;
  p.title = std::move(title);
  p.rows = a.queries;
  p.cols = a.keys;
  p.values.assign(a.weights.begin(), a.weights.end());
  p.mask.assign(a.queries * a.keys, 0);
  for (std::size_t q = 0; q < a.queries; ++q)
    for (std::size_t k = 0; k < a.keys; ++k) p.mask[q * a.keys + k] = q >= a.q_valid || k >= a.k_valid;
  return p;
}

std::string axis_label(const char* what, const std::string& side) {
  return std::string(what) + " (" + (side.empty() ? "position" : side) + ")";
}

// ---- One run's attention at one log ----------------------------------------------------------
void attention_figures(const results::RunReader& reader, std::size_t log, const fs::path& out_dir, const std::string& ext,
                       FigureReport& report) {
  const results::RunLayout& layout = reader.layout();
  const AttentionLogData data = read_attention_log(reader, log);
  // Slots grouped by stack/kind, layers in order.
  std::map<std::pair<std::string, std::string>, std::vector<const SlotAttention*>> groups;
  for (const SlotAttention& s : data.slots) groups[{s.slot.stack, s.slot.kind}].push_back(&s);
  for (auto& [key, slots] : groups) {
    std::sort(slots.begin(), slots.end(),
              [](const SlotAttention* a, const SlotAttention* b) { return a->slot.layer < b->slot.layer; });
    const results::AttentionSlot& first = slots.front()->slot;
    std::size_t heads = 0;
    for (const SlotAttention* s : slots) heads = std::max(heads, static_cast<std::size_t>(s->slot.heads));
    HeatmapGrid grid;
    grid.title = key.first + " " + key.second + "-attention · step " + std::to_string(data.step) + " · probe example 0";
    grid.subtitle = "run " + reader.info().run_id;
    grid.grid_rows = slots.size();
    grid.grid_cols = heads;
    grid.y_labels = token_labels(layout.probe, first.query_tokens, static_cast<std::size_t>(first.queries));
    grid.x_labels = token_labels(layout.probe, first.key_tokens, static_cast<std::size_t>(first.keys));
    grid.x_axis_label = axis_label("key", first.key_tokens);
    grid.y_axis_label = axis_label("query", first.query_tokens);
    grid.colorbar_label = "attention weight";
    for (const SlotAttention* s : slots)
      for (std::size_t h = 0; h < heads; ++h) {
        const std::string title = "layer " + std::to_string(s->slot.layer) + " · head " + std::to_string(h);
        if (h < static_cast<std::size_t>(s->slot.heads)) {
          grid.panels.push_back(map_panel(*s, h, title));
        } else {  // a layer with fewer heads: an empty panel keeps the grid aligned
          HeatmapPanel p = map_panel(*s, 0, title);
          p.values.assign(p.values.size(), NAN);
          grid.panels.push_back(std::move(p));
        }
      }
    const fs::path file = out_dir / ("attention_" + key.first + "_" + key.second + ext);
    heatmap_grid(file, grid);
    report.written.push_back(file);
  }

  if (layout.decode.layers > 0) {
    const results::DecodeRecord d = reader.decode(log);
    const auto L = static_cast<std::size_t>(layout.decode.layers), H = static_cast<std::size_t>(layout.decode.heads);
    const auto T = static_cast<std::size_t>(layout.decode.steps), S = static_cast<std::size_t>(layout.decode.keys);
    HeatmapGrid grid;
    grid.title = "decode cross-attention · step " + std::to_string(data.step) + " · probe example 0";
    grid.subtitle = "run " + reader.info().run_id;
    grid.grid_rows = L;
    grid.grid_cols = H;
    grid.x_labels = token_labels(layout.probe, "src", S);
    const std::size_t s_valid = valid_positions(probe_side(layout.probe, "src"), 0, S);
    const std::size_t t_valid = d.lengths.empty() ? T : std::min<std::size_t>(T, static_cast<std::size_t>(d.lengths[0]));
    for (std::size_t t = 0; t < T; ++t)
      grid.y_labels.push_back(t < t_valid && t < d.tokens.size() ? std::to_string(d.tokens[t]) : "");
    grid.mask.assign(T * S, 0);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < S; ++s) grid.mask[t * S + s] = t >= t_valid || s >= s_valid;
    grid.x_axis_label = "source position (src)";
    grid.y_axis_label = "decode step (generated token)";
    grid.colorbar_label = "attention weight";
    for (std::size_t l = 0; l < L && l < d.cross.size(); ++l)
      for (std::size_t h = 0; h < H; ++h) {
        HeatmapPanel p;
        p.title = "layer " + std::to_string(l) + " · head " + std::to_string(h);
        p.rows = T;
        p.cols = S;
        const float* base = d.cross[l].values.data() + h * T * S;  // [E, H, T, S], example 0
        p.values.assign(base, base + T * S);
        grid.panels.push_back(std::move(p));
      }
    const fs::path file = out_dir / ("decode_cross" + ext);
    heatmap_grid(file, grid);
    report.written.push_back(file);
  }
}

// ---- Across arms -------------------------------------------------------------------------------
// The figures' shared context: the runs, their arms and the caption naming the arm keys.
struct Arms {
  const std::vector<FigureRun>& runs;
  Grouping grouping;
  std::size_t baseline = 0;
  std::string caption;  // "arms: model.block · model.ffn" (empty when no key varies)
};

std::string seed_of(const FigureRun& r) {
  const auto it = r.summary.config.find("train.seed");
  return it == r.summary.config.end() ? std::string() : it->second;
}

void curve_figures(const Arms& arms, CurveAxis x, const fs::path& out_dir, const std::string& ext, FigureReport& report) {
  std::vector<std::string> metrics;
  for (const FigureRun& r : arms.runs)
    for (const auto& [m, _] : r.summary.eval_curves)
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  const auto missing =
      std::count_if(arms.runs.begin(), arms.runs.end(), [&](const FigureRun& r) { return !placed(r, nullptr, x); });
  if (missing > 0)
    report.notes.push_back("warning: " + std::to_string(missing) + " of " + std::to_string(arms.runs.size()) + " runs have no `" +
                           axis_info(x).column + "` column in their train log (recorded before Ablate " +
                           "logged it); the curves against " + curve_axis_title(x) + " leave them out");
  auto curve_plot = [&](const std::string& name, const std::string& y_label, auto curve_of) {
    LinePlot plot;
    plot.title = y_label + " per arm (mean over seeds, min–max band)";
    plot.subtitle = arms.caption;
    plot.x_label = curve_axis_title(x);
    plot.y_label = y_label;
    bool any = false;
    for (const ArmGroup& a : arms.grouping.arms) {
      std::vector<PlacedCurve> curves;
      for (std::size_t i : a.members)
        if (const Curve* c = curve_of(arms.runs[i]))
          if (const auto p = placed(arms.runs[i], c, x)) curves.push_back(*p);
      plot.series.push_back(band_series(a.label + " (n=" + std::to_string(a.members.size()) + ")", curves));
      any |= !plot.series.back().x.empty();
    }
    if (!any) {
      report.notes.push_back("warning: no finite values of " + y_label + " against " + curve_axis_title(x) + "; curves_" + name +
                             ext + " not drawn");
      return;
    }
    const fs::path file = out_dir / ("curves_" + name + ext);
    line_plot(file, plot);
    report.written.push_back(file);
  };
  for (const std::string& m : metrics)
    curve_plot(m, "eval " + m, [&](const FigureRun& r) -> const Curve* {
      const auto it = r.summary.eval_curves.find(m);
      return it == r.summary.eval_curves.end() ? nullptr : &it->second;
    });
  curve_plot("train_loss", "train loss",
             [](const FigureRun& r) -> const Curve* { return r.train_loss.empty() ? nullptr : &r.train_loss; });
}

void entropy_figure(const Arms& arms, const fs::path& out_dir, const std::string& ext, FigureReport& report) {
  std::vector<std::string> categories;
  for (const FigureRun& r : arms.runs)
    for (const std::string& c : r.entropy_order)
      if (std::find(categories.begin(), categories.end(), c) == categories.end()) categories.push_back(c);
  if (categories.empty()) return;
  GroupedPoints plot;
  plot.title = "attention entropy at the last log (mean ± std over seeds)";
  plot.subtitle = arms.caption;
  plot.x_label = "stack.kind layer head";
  plot.y_label = "entropy (nats)";
  plot.categories = categories;
  plot.include_zero = true;
  for (const ArmGroup& a : arms.grouping.arms) {
    PointSeries s;
    s.label = a.label;
    for (const std::string& c : categories) {
      std::vector<double> v;
      for (std::size_t i : a.members) {
        const auto it = arms.runs[i].entropy.find(c);
        if (it != arms.runs[i].entropy.end() && std::isfinite(it->second)) v.push_back(it->second);
      }
      s.mean.push_back(mean(v));
      s.err.push_back(v.size() == 1 ? 0.0 : sample_std(v));
    }
    plot.series.push_back(std::move(s));
  }
  const fs::path file = out_dir / ("entropy" + ext);
  grouped_points(file, plot);
  report.written.push_back(file);
}

// (a) Heads × arms grids, one panel per score, each cell the mean over the arm's seeds of the
// run's score (itself a mean over the probe examples) at its last attention log.
void head_score_figure(const Arms& arms, const fs::path& out_dir, const std::string& ext, FigureReport& report) {
  std::vector<std::string> heads;
  for (const FigureRun& r : arms.runs)
    if (r.heads)
      for (const std::string& h : r.heads->heads)
        if (std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  if (heads.empty()) return;
  struct Score {
    const char* title;
    double HeadScores::*field;
  };
  const std::vector<Score> scores = {{"diagonal (self)", &HeadScores::diagonal},
                                     {"previous token", &HeadScores::previous_token},
                                     {"first token (sink)", &HeadScores::first_token},
                                     {"induction", &HeadScores::induction},
                                     {"distance (normalized)", &HeadScores::normalized_distance},
                                     {"entropy (normalized)", &HeadScores::normalized_entropy}};
  const std::size_t A = arms.grouping.arms.size(), R = heads.size();
  HeatmapGrid grid;
  grid.title = "attention head scores per arm (mean over probe examples and seeds, last attention log)";
  grid.subtitle = arms.caption;
  grid.y_labels = heads;
  for (const ArmGroup& a : arms.grouping.arms) grid.x_labels.push_back(a.label);
  grid.max_label_chars = 0;  // arm names whole
  grid.x_axis_label = "arm";
  grid.y_axis_label = "head";
  grid.colorbar_label = "score";
  for (const Score& score : scores) {
    HeatmapPanel p;
    p.title = score.title;
    p.rows = R;
    p.cols = A;
    p.values.assign(R * A, NAN);
    bool any = false;
    for (std::size_t a = 0; a < A; ++a)
      for (std::size_t h = 0; h < R; ++h) {
        std::vector<double> values;
        for (std::size_t i : arms.grouping.arms[a].members) {
          const auto& hs = arms.runs[i].heads;
          if (!hs) continue;
          const auto at = std::find(hs->heads.begin(), hs->heads.end(), heads[h]);
          if (at != hs->heads.end()) values.push_back(hs->mean[static_cast<std::size_t>(at - hs->heads.begin())].*(score.field));
        }
        std::erase_if(values, [](double v) { return !std::isfinite(v); });
        if (values.empty()) continue;
        p.values[h * A + a] = mean(values);
        any = true;
      }
    if (!any) {  // induction: the probe repeats no token
      report.notes.push_back(std::string("note: head_scores has no ") + score.title +
                             " panel: no probe sequence repeats a token, so the score is undefined");
      continue;
    }
    report.head_score_panels.push_back(score.title);
    grid.panels.push_back(std::move(p));
  }
  grid.grid_cols = std::min<std::size_t>(grid.panels.size(), 3);
  const fs::path file = out_dir / ("head_scores" + ext);
  heatmap_grid(file, grid);
  report.written.push_back(file);
}

// Per head (matched by name), the JS distance between two runs' maps on probe example 0.
std::vector<std::pair<double, std::pair<const SlotAttention*, std::size_t>>> head_distances(const AttentionLogData& a,
                                                                                            const AttentionLogData& b) {
  std::vector<std::pair<double, std::pair<const SlotAttention*, std::size_t>>> out;
  for (const SlotAttention& sa : a.slots) {
    const auto sb = std::find_if(b.slots.begin(), b.slots.end(), [&](const SlotAttention& s) {
      return s.slot.stack == sa.slot.stack && s.slot.kind == sa.slot.kind && s.slot.layer == sa.slot.layer;
    });
    if (sb == b.slots.end() || sb->weights.shape != sa.weights.shape || sb->q_valid[0] != sa.q_valid[0] ||
        sb->k_valid[0] != sa.k_valid[0])
      continue;
    for (std::size_t h = 0; h < static_cast<std::size_t>(sa.weights.shape[1]); ++h) {
      const double d = js_distance(sa.map(0, h), sb->map(0, h));
      if (std::isfinite(d)) out.push_back({d, {&sa, h}});
    }
  }
  return out;
}

// (b) The heads that differ most between the baseline arm and the arm most different from it
// (mean JS distance over heads), on the first seed both arms have, side by side.
void head_difference_figure(const Arms& arms, std::size_t top, const fs::path& out_dir, const std::string& ext,
                            FigureReport& report) {
  const auto& groups = arms.grouping.arms;
  if (groups.size() < 2 || top == 0) return;
  auto with_attention = [&](const ArmGroup& g) {
    std::vector<std::size_t> out;
    for (std::size_t i : g.members)
      if (arms.runs[i].heads) out.push_back(i);
    return out;
  };
  const std::vector<std::size_t> base_runs = with_attention(groups[arms.baseline]);
  if (base_runs.empty()) return;
  std::map<std::size_t, AttentionLogData> logs;  // run index -> last attention log, read once
  auto log_of = [&](std::size_t i) -> const AttentionLogData& {
    auto it = logs.find(i);
    if (it == logs.end()) it = logs.emplace(i, last_attention_log(arms.runs[i])).first;
    return it->second;
  };
  struct Pair {
    std::size_t arm = 0, base_run = 0, other_run = 0;
    bool shared_seed = false;
    double mean_js = -1;
  };
  std::optional<Pair> best;
  for (std::size_t a = 0; a < groups.size(); ++a) {
    if (a == arms.baseline) continue;
    const std::vector<std::size_t> other = with_attention(groups[a]);
    if (other.empty()) continue;
    Pair p{a, base_runs.front(), other.front(), false};
    for (std::size_t b : base_runs) {
      const auto match =
          std::find_if(other.begin(), other.end(), [&](std::size_t o) { return seed_of(arms.runs[o]) == seed_of(arms.runs[b]); });
      if (match != other.end()) {
        p = {a, b, *match, true};
        break;
      }
    }
    std::vector<double> d;
    for (const auto& x : head_distances(log_of(p.base_run), log_of(p.other_run))) d.push_back(x.first);
    if (d.empty()) continue;
    p.mean_js = mean(d);
    if (!best || p.mean_js > best->mean_js) best = p;
  }
  if (!best) {
    report.notes.push_back("note: head_differences not drawn: no other arm has attention maps comparable with the baseline's");
    return;
  }
  const AttentionLogData& base = log_of(best->base_run);
  const AttentionLogData& other = log_of(best->other_run);
  auto ranked = head_distances(base, other);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  if (ranked.size() > top) ranked.resize(top);
  const results::Probe probe =
      results::RunReader(arms.runs[best->base_run].summary.path).layout().probe;  // a copy: the reader closes

  HeatmapGrid grid;
  grid.title = "the heads that differ most between two arms (Jensen–Shannon distance on probe example 0)";
  std::string sub = "left: " + groups[arms.baseline].label + " (baseline) · right: " + groups[best->arm].label;
  sub += best->shared_seed ? " · seed " + seed_of(arms.runs[best->base_run]) : " · different seeds (none shared)";
  sub += base.step == other.step ? " · step " + std::to_string(base.step)
                                 : " · steps " + std::to_string(base.step) + " / " + std::to_string(other.step);
  if (!arms.caption.empty()) sub += " · " + arms.caption;
  grid.subtitle = sub;
  grid.grid_cols = 2;
  grid.x_axis_label = "key";
  grid.y_axis_label = "query";
  grid.colorbar_label = "attention weight";
  for (const auto& [js, at] : ranked) {
    const SlotAttention* slot = at.first;
    const std::size_t h = at.second;
    const SlotAttention& twin = *std::find_if(other.slots.begin(), other.slots.end(),
                                              [&](const SlotAttention& s) { return s.slot.path() == slot->slot.path(); });
    const std::string name = head_name(slot->slot.stack, slot->slot.kind, slot->slot.layer, h);
    std::ostringstream js_text;
    js_text.precision(3);
    js_text << js;
    for (HeatmapPanel p : {map_panel(*slot, h, name + " · baseline"), map_panel(twin, h, name + " · JS " + js_text.str())}) {
      p.y_labels = token_labels(probe, slot->slot.query_tokens, p.rows);
      p.x_labels = token_labels(probe, slot->slot.key_tokens, p.cols);
      grid.panels.push_back(std::move(p));
    }
  }
  const fs::path file = out_dir / ("head_differences" + ext);
  heatmap_grid(file, grid);
  report.written.push_back(file);
}

// (c) Attention rollout through each stack's self-attention, one panel per arm (its first run with
// attention logs), on probe example 0 at the last log.
void rollout_figures(const Arms& arms, const fs::path& out_dir, const std::string& ext, FigureReport& report) {
  std::map<std::string, std::vector<HeatmapPanel>> panels;  // stack -> one panel per arm
  std::map<std::string, std::vector<std::string>> labels;   // stack -> token labels of the first panel
  std::map<std::string, bool> same_labels;
  for (const ArmGroup& arm : arms.grouping.arms) {
    const auto run =
        std::find_if(arm.members.begin(), arm.members.end(), [&](std::size_t i) { return arms.runs[i].heads.has_value(); });
    if (run == arm.members.end()) continue;
    const AttentionLogData log = last_attention_log(arms.runs[*run]);
    const results::Probe probe = results::RunReader(arms.runs[*run].summary.path).layout().probe;
    std::map<std::string, std::vector<const SlotAttention*>> stacks;
    for (const SlotAttention& s : log.slots)
      if (s.slot.kind == "self") stacks[s.slot.stack].push_back(&s);
    for (auto& [stack, slots] : stacks) {
      std::sort(slots.begin(), slots.end(),
                [](const SlotAttention* a, const SlotAttention* b) { return a->slot.layer < b->slot.layer; });
      const auto& shape = slots.front()->weights.shape;  // [E, H, Q, Q]
      std::vector<std::span<const float>> layers;
      bool same_shape = true;
      for (const SlotAttention* s : slots) {
        same_shape = same_shape && s->weights.shape == shape;
        const auto per_example = static_cast<std::size_t>(shape[1] * shape[2] * shape[3]);
        layers.push_back(std::span<const float>(s->weights.values).subspan(0, per_example));  // example 0
      }
      if (!same_shape) continue;
      const auto Q = static_cast<std::size_t>(shape[2]);
      HeatmapPanel p;
      p.title = arm.label;
      p.rows = p.cols = Q;
      p.values = attention_rollout(layers, static_cast<std::size_t>(shape[1]), Q, slots.front()->q_valid[0]);
      p.y_labels = p.x_labels = token_labels(probe, slots.front()->slot.query_tokens, Q);
      if (panels[stack].empty()) {
        labels[stack] = p.x_labels;
        same_labels[stack] = true;
      }
      same_labels[stack] = same_labels[stack] && p.x_labels == labels[stack];
      panels[stack].push_back(std::move(p));
    }
  }
  for (auto& [stack, ps] : panels) {
    HeatmapGrid grid;
    grid.title = "attention rollout through the " + stack + " self-attention (probe example 0, last attention log)";
    grid.subtitle = arms.caption;
    grid.grid_cols = std::min<std::size_t>(ps.size(), 4);
    grid.x_axis_label = "source token";
    grid.y_axis_label = "position at the top of the stack";
    grid.colorbar_label = "rollout weight";
    double vmax = 0;
    for (const HeatmapPanel& p : ps)
      for (double v : p.values)
        if (std::isfinite(v)) vmax = std::max(vmax, v);
    grid.vmax = vmax > 0 ? vmax : 1;
    if (same_labels[stack]) {  // one probe: the labels go on the outer panels only
      grid.x_labels = grid.y_labels = labels[stack];
      for (HeatmapPanel& p : ps) {
        p.x_labels.clear();
        p.y_labels.clear();
      }
    }
    grid.panels = std::move(ps);
    const fs::path file = out_dir / ("rollout_" + stack + ext);
    heatmap_grid(file, grid);
    report.written.push_back(file);
  }
}

// The runs of `run_files` (vetted by a child first: a damaged file cannot crash this process),
// unreadable ones left out with a warning note; throws UsageError when none is readable.
std::vector<FigureRun> read_runs(const std::vector<fs::path>& run_files, FigureReport& report) {
  results::vet_run_files(run_files);
  std::vector<FigureRun> runs;
  for (const fs::path& file : run_files) {
    try {
      runs.push_back(read_run(file));
    } catch (const std::exception& e) {
      report.notes.push_back("warning: skipping unreadable run file " + file.string() + ": " + e.what());
    }
  }
  if (runs.empty())
    throw UsageError("no readable run file among the " + std::to_string(run_files.size()) + " given",
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");
  return runs;
}

std::string extension(const std::string& format) {
  if (format != "png" && format != "svg") throw UsageError("unknown figure format '" + format + "'", "allowed: png, svg");
  return "." + format;
}

void create_out_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message(), "pass a writable directory with --out");
}

}  // namespace

double place_on_axis(const StepCurve& axis, std::int64_t step) {
  if (axis.empty()) return NAN;
  const auto after =
      std::lower_bound(axis.begin(), axis.end(), step, [](const auto& row, std::int64_t s) { return row.first < s; });
  if (after != axis.end() && after->first == step) return after->second;
  const auto hi = after == axis.end() ? std::prev(axis.end()) : after;
  const std::pair<std::int64_t, double> lo = hi == axis.begin() ? std::pair<std::int64_t, double>{0, 0.0} : *std::prev(hi);
  if (hi->first == lo.first) return hi->second;
  const double rate = (hi->second - lo.second) / static_cast<double>(hi->first - lo.first);
  return lo.second + rate * static_cast<double>(step - lo.first);
}

Series band_series(const std::string& label, const std::vector<PlacedCurve>& curves) {
  std::map<std::int64_t, std::pair<std::vector<double>, std::vector<double>>> at;  // step -> (x, value)
  for (const PlacedCurve& c : curves)
    for (const auto& [step, v] : *c.values) {
      const double x = c.axis ? place_on_axis(*c.axis, step) : static_cast<double>(step);
      if (!std::isfinite(v) || !std::isfinite(x)) continue;
      at[step].first.push_back(x);
      at[step].second.push_back(v);
    }
  Series s;
  s.label = label;
  for (const auto& [step, xv] : at) {
    const std::vector<double>& vs = xv.second;
    s.x.push_back(mean(xv.first));
    s.mean.push_back(mean(vs));
    s.lower.push_back(*std::min_element(vs.begin(), vs.end()));
    s.upper.push_back(*std::max_element(vs.begin(), vs.end()));
  }
  return s;
}

CurveAxis parse_curve_axis(const std::string& name) {
  for (const AxisInfo& a : kAxes)
    if (name == a.name) return a.axis;
  throw UsageError("unknown x axis '" + name + "'",
                   "allowed: step, tokens, flops (training FLOPs seen), time (wall seconds; machine-dependent)");
}

std::string curve_axis_title(CurveAxis axis) { return axis_info(axis).title; }

std::string figure_caption(const std::string& stem) {
  if (stem == "curves_train_loss") return "train loss per arm: mean over seeds, min–max band";
  if (stem.starts_with("curves_")) return "eval " + stem.substr(7) + " per arm: mean over seeds, min–max band";
  if (stem.starts_with("runs_")) return "eval " + stem.substr(5) + " of each run of the arm";
  if (stem.starts_with("attention_")) return "probe attention of one run at its last log: layers × heads";
  if (stem == "decode_cross") return "cross-attention while decoding the probe: decode steps × source positions";
  if (stem == "entropy") return "attention entropy per head at the last log: mean ± std over seeds per arm";
  if (stem == "head_scores")
    return "head scores (diagonal, previous token, first token, induction, distance, entropy) per head × arm, mean "
           "over seeds";
  if (stem == "head_differences")
    return "the heads whose attention differs most (Jensen–Shannon distance) between the baseline and the arm most "
           "different from it";
  if (stem.starts_with("rollout_")) return "attention rollout through the " + stem.substr(8) + " stack, one panel per arm";
  return "";
}

FigureReport draw_arm_figures(const std::vector<fs::path>& run_files, const std::string& metric, const fs::path& out_dir,
                              const std::string& format, CurveAxis x) {
  const std::string ext = extension(format);
  FigureReport report;
  const std::vector<FigureRun> runs = read_runs(run_files, report);
  create_out_dir(out_dir);
  LinePlot plot;
  plot.title = "eval " + metric + " per run";
  plot.x_label = curve_axis_title(x);
  plot.y_label = metric;
  for (const FigureRun& r : runs) {
    const auto it = r.summary.eval_curves.find(metric);
    if (it == r.summary.eval_curves.end()) continue;
    const auto one = placed(r, &it->second, x);
    if (!one) continue;
    const std::string seed = seed_of(r);
    Series s = band_series(seed.empty() ? r.summary.run_id : "seed " + seed, {*one});
    s.lower.clear();  // one run: no band
    s.upper.clear();
    if (!s.x.empty()) plot.series.push_back(std::move(s));
  }
  if (!plot.series.empty()) {
    const fs::path file = out_dir / ("runs_" + metric + ext);
    line_plot(file, plot);
    report.written.push_back(file);
  }
  for (const FigureRun& r : runs) {
    const results::RunReader reader(r.summary.path);
    const auto steps = reader.attention_steps();
    if (steps.empty()) continue;
    attention_figures(reader, steps.size() - 1, out_dir, ext, report);
    break;
  }
  return report;
}

FigureReport draw_figures(const std::vector<fs::path>& run_files, const FigureOptions& options) {
  const std::string ext = extension(options.format);
  FigureReport report;
  const std::vector<FigureRun> runs = read_runs(run_files, report);

  // The attention run and log, checked before anything is drawn.
  fs::path chosen = runs.front().summary.path;
  if (options.attention_run) {
    const std::vector<fs::path> picked = find_runs({*options.attention_run});
    if (picked.size() != 1)
      throw UsageError("--run " + options.attention_run->string() + " names " + std::to_string(picked.size()) + " run files",
                       "pass one run directory or its run.h5");
    chosen = picked.front();
  }
  const results::RunReader chosen_reader(chosen);
  const std::vector<std::int64_t> steps = chosen_reader.attention_steps();
  std::optional<std::size_t> log;
  if (steps.empty()) {
    if (options.attention_step)
      throw UsageError(chosen.string() + " has no attention logs", "train with log.attention.every > 0");
    report.notes.push_back("note: " + chosen.string() + " has no attention logs (log.attention.every = 0); no heatmaps");
  } else if (options.attention_step) {
    const auto it = std::find(steps.begin(), steps.end(), *options.attention_step);
    if (it == steps.end()) {
      std::vector<std::string> s;
      for (std::int64_t x : steps) s.push_back(std::to_string(x));
      throw UsageError(chosen.string() + " has no attention log at step " + std::to_string(*options.attention_step),
                       "logged steps: " + join(s, ", "));
    }
    log = static_cast<std::size_t>(it - steps.begin());
  } else {
    log = steps.size() - 1;
  }

  std::vector<RunSummary> summaries;
  for (const FigureRun& r : runs) summaries.push_back(r.summary);
  Grouping grouping = group_runs(summaries);
  const std::size_t baseline = find_arm(grouping, summaries, options.baseline);
  const std::string caption = grouping.keys.empty() ? std::string() : "arms: " + join(grouping.keys, " · ");
  const Arms arms{runs, std::move(grouping), baseline, caption};

  create_out_dir(options.out_dir);

  curve_figures(arms, options.x, options.out_dir, ext, report);
  if (log) attention_figures(chosen_reader, *log, options.out_dir, ext, report);
  entropy_figure(arms, options.out_dir, ext, report);
  const auto without = std::count_if(runs.begin(), runs.end(), [](const FigureRun& r) { return !r.heads; });
  if (without > 0 && without < static_cast<std::ptrdiff_t>(runs.size()))
    report.notes.push_back("note: " + std::to_string(without) + " of " + std::to_string(runs.size()) +
                           " runs have no attention logs; the head figures leave them out");
  head_score_figure(arms, options.out_dir, ext, report);
  head_difference_figure(arms, options.top_heads, options.out_dir, ext, report);
  rollout_figures(arms, options.out_dir, ext, report);
  return report;
}

}  // namespace ablate::analysis
