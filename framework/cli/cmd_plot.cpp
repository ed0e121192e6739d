// `ablate plot DIR...`: the figures of a sweep, from its run files: eval and train-loss curves per
// arm (mean over seeds with a min–max band), attention heatmap grids (layers × heads) and decode
// cross-attention of one run at one log, and final attention entropy per layer/head across arms.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "ablate/error.hpp"
#include "analysis/compare.hpp"
#include "analysis/plot.hpp"
#include "analysis/run_summary.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using Curve = std::vector<std::pair<std::int64_t, double>>;

// One run as the figures need it.
struct PlotRun {
  analysis::RunSummary summary;
  Curve train_loss;
  std::map<std::string, double> entropy;  // "enc.self L0 H1" -> final-log entropy
  std::vector<std::string> entropy_order;
};

std::string short_stack(const std::string& stack) {
  return stack == "encoder" ? "enc" : stack == "decoder" ? "dec" : stack;
}

PlotRun read_run(const fs::path& file) {
  const results::RunReader reader(file);
  PlotRun r;
  r.summary = analysis::summarize(reader);
  const results::MetricTable train = reader.metrics(results::MetricSplit::Train);
  const auto loss = std::find(train.names.begin(), train.names.end(), "loss");
  if (loss != train.names.end()) {
    const auto& col = train.columns[static_cast<std::size_t>(loss - train.names.begin())];
    for (std::size_t i = 0; i < train.steps.size() && i < col.size(); ++i) r.train_loss.emplace_back(train.steps[i], col[i]);
  }
  const auto& slots = reader.layout().entropy;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const results::FloatTensor t = reader.entropy(s);  // [rows, H]
    if (t.shape.size() != 2 || t.shape[0] == 0) continue;
    const std::int64_t rows = t.shape[0], heads = t.shape[1];
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::string cat = short_stack(slots[s].stack) + "." + slots[s].kind + " L" + std::to_string(slots[s].layer) +
                              " H" + std::to_string(h);
      r.entropy[cat] = t.values[static_cast<std::size_t>((rows - 1) * heads + h)];
      r.entropy_order.push_back(cat);
    }
  }
  return r;
}

// Arms as compare() forms them: by the values of the keys that vary (train.seed excepted).
struct PlotArm {
  std::string label;
  std::vector<const PlotRun*> runs;
};
std::vector<PlotArm> group_arms(const std::vector<PlotRun>& runs) {
  std::vector<analysis::RunSummary> summaries;
  for (const PlotRun& r : runs) summaries.push_back(r.summary);
  const std::vector<std::string> keys = analysis::varying_keys(summaries);
  std::map<std::string, PlotArm> arms;
  for (const PlotRun& r : runs) {
    std::vector<std::string> parts;
    for (const std::string& k : keys) {
      const auto it = r.summary.config.find(k);
      if (it != r.summary.config.end()) parts.push_back(k + "=" + it->second);
    }
    std::string label = join(parts, ",");
    if (label.empty()) label = "all runs";
    arms[label].label = label;
    arms[label].runs.push_back(&r);
  }
  std::vector<PlotArm> out;
  for (auto& [_, a] : arms) out.push_back(std::move(a));
  return out;
}

// Mean with a min–max band over the runs' curves, per step (runs lacking a step or with a
// non-finite value there are left out of that step).
analysis::Series band_series(const std::string& label, const std::vector<const Curve*>& curves) {
  std::map<std::int64_t, std::vector<double>> at;
  for (const Curve* c : curves)
    for (const auto& [step, v] : *c)
      if (std::isfinite(v)) at[step].push_back(v);
  analysis::Series s;
  s.label = label;
  for (const auto& [step, vs] : at) {
    double sum = 0;
    for (double v : vs) sum += v;
    s.x.push_back(static_cast<double>(step));
    s.mean.push_back(sum / static_cast<double>(vs.size()));
    s.lower.push_back(*std::min_element(vs.begin(), vs.end()));
    s.upper.push_back(*std::max_element(vs.begin(), vs.end()));
  }
  return s;
}

// Tick labels of one probe side, first example: word tokens of its text when they match the
// length, else the token ids. `n` labels (the tensor axis), `valid` returned through the argument.
std::vector<std::string> probe_labels(const results::ProbeTokens& side, std::size_t n, std::size_t& valid) {
  std::vector<std::string> labels(n);
  valid = n;
  if (side.length == 0 || side.ids.empty()) {
    for (std::size_t i = 0; i < n; ++i) labels[i] = std::to_string(i);
    return labels;
  }
  valid = std::min<std::size_t>(n, static_cast<std::size_t>(side.lengths.empty() ? side.length : side.lengths[0]));
  std::vector<std::string> words;
  if (!side.texts.empty() && !side.texts[0].empty()) {
    std::istringstream in(side.texts[0]);
    for (std::string w; in >> w;) words.push_back(w);
  }
  const bool use_words = words.size() == valid;
  for (std::size_t i = 0; i < n; ++i) {
    if (i < valid && use_words) labels[i] = words[i];
    else if (i < static_cast<std::size_t>(side.length)) labels[i] = std::to_string(side.ids[i]);
    else labels[i] = "";
  }
  return labels;
}

const results::ProbeTokens* probe_side(const results::Probe& probe, const std::string& side) {
  if (side == "src") return &probe.src;
  if (side == "tgt") return &probe.tgt;
  return nullptr;
}

std::vector<std::string> attention_figures(const results::RunReader& reader, std::size_t log, const fs::path& out_dir,
                                           const std::string& ext) {
  std::vector<std::string> written;
  const results::RunLayout& layout = reader.layout();
  const std::int64_t step = reader.attention_steps().at(log);
  // Slots grouped by stack/kind, layers in order.
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;
  for (std::size_t s = 0; s < layout.attention.size(); ++s) groups[{layout.attention[s].stack, layout.attention[s].kind}].push_back(s);
  for (auto& [key, slots] : groups) {
    std::sort(slots.begin(), slots.end(), [&](std::size_t a, std::size_t b) { return layout.attention[a].layer < layout.attention[b].layer; });
    const results::AttentionSlot& first = layout.attention[slots.front()];
    const auto Q = static_cast<std::size_t>(first.queries), K = static_cast<std::size_t>(first.keys);
    std::size_t heads = 0;
    for (std::size_t s : slots) heads = std::max(heads, static_cast<std::size_t>(layout.attention[s].heads));
    analysis::HeatmapGrid grid;
    grid.title = key.first + " " + key.second + "-attention · step " + std::to_string(step) + " · probe example 0";
    grid.grid_rows = slots.size();
    grid.grid_cols = heads;
    std::size_t q_valid = Q, k_valid = K;
    const results::ProbeTokens* qs = probe_side(layout.probe, first.query_tokens);
    const results::ProbeTokens* ks = probe_side(layout.probe, first.key_tokens);
    if (qs) grid.y_labels = probe_labels(*qs, Q, q_valid);
    if (ks) grid.x_labels = probe_labels(*ks, K, k_valid);
    grid.mask.assign(Q * K, 0);
    for (std::size_t q = 0; q < Q; ++q)
      for (std::size_t k = 0; k < K; ++k) grid.mask[q * K + k] = q >= q_valid || k >= k_valid;
    grid.x_axis_label = "key (" + (first.key_tokens.empty() ? std::string("position") : first.key_tokens) + ")";
    grid.y_axis_label = "query (" + (first.query_tokens.empty() ? std::string("position") : first.query_tokens) + ")";
    grid.colorbar_label = "attention weight";
    for (std::size_t s : slots) {
      const results::AttentionSlot& slot = layout.attention[s];
      const results::FloatTensor t = reader.attention(s, log);  // [E, H, Q, K]
      if (t.shape.size() != 4 || static_cast<std::size_t>(t.shape[2]) != Q || static_cast<std::size_t>(t.shape[3]) != K)
        throw Error(reader.path().string() + ": attention " + slot.path() + " has an unexpected shape",
                    "the run file may be damaged; rerun the run");
      for (std::size_t h = 0; h < heads; ++h) {
        analysis::HeatmapPanel p;
        p.title = "layer " + std::to_string(slot.layer) + " · head " + std::to_string(h);
        p.rows = Q;
        p.cols = K;
        if (h < static_cast<std::size_t>(t.shape[1])) {
          const float* base = t.values.data() + h * Q * K;  // example 0, head h
          p.values.assign(base, base + Q * K);
        } else {
          p.values.assign(Q * K, NAN);
        }
        grid.panels.push_back(std::move(p));
      }
    }
    const fs::path file = out_dir / ("attention_" + key.first + "_" + key.second + ext);
    analysis::heatmap_grid(file, grid);
    written.push_back(file.string());
  }

  if (layout.decode.layers > 0) {
    const results::DecodeRecord d = reader.decode(log);
    const auto L = static_cast<std::size_t>(layout.decode.layers), H = static_cast<std::size_t>(layout.decode.heads);
    const auto T = static_cast<std::size_t>(layout.decode.steps), S = static_cast<std::size_t>(layout.decode.keys);
    analysis::HeatmapGrid grid;
    grid.title = "decode cross-attention · step " + std::to_string(step) + " · probe example 0";
    grid.grid_rows = L;
    grid.grid_cols = H;
    std::size_t s_valid = S;
    grid.x_labels = probe_labels(layout.probe.src, S, s_valid);
    const std::size_t t_valid = d.lengths.empty() ? T : std::min<std::size_t>(T, static_cast<std::size_t>(d.lengths[0]));
    for (std::size_t t = 0; t < T; ++t) grid.y_labels.push_back(t < t_valid && t < d.tokens.size() ? std::to_string(d.tokens[t]) : "");
    grid.mask.assign(T * S, 0);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t s = 0; s < S; ++s) grid.mask[t * S + s] = t >= t_valid || s >= s_valid;
    grid.x_axis_label = "source position (src)";
    grid.y_axis_label = "decode step (generated token)";
    grid.colorbar_label = "attention weight";
    for (std::size_t l = 0; l < L && l < d.cross.size(); ++l) {
      for (std::size_t h = 0; h < H; ++h) {
        analysis::HeatmapPanel p;
        p.title = "layer " + std::to_string(l) + " · head " + std::to_string(h);
        p.rows = T;
        p.cols = S;
        const float* base = d.cross[l].values.data() + h * T * S;  // [E, H, T, S], example 0
        p.values.assign(base, base + T * S);
        grid.panels.push_back(std::move(p));
      }
    }
    const fs::path file = out_dir / ("decode_cross" + ext);
    analysis::heatmap_grid(file, grid);
    written.push_back(file.string());
  }
  return written;
}

}  // namespace

int cmd_plot(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options("ablate plot DIR... [options]\n\n"
                                  "Draws the figures of the runs under the directories: curves_<metric> per eval metric\n"
                                  "and curves_train_loss (mean over seeds per arm, min–max band), attention_<stack>_<kind>\n"
                                  "heatmap grids (layers × heads) and decode_cross for one run at one attention log, and\n"
                                  "entropy (final attention entropy per layer/head, mean ± std over seeds per arm).\n\nOptions");
  options.add_options()
      ("help,h", "show this help")
      ("dirs", po::value<std::vector<std::string>>()->composing(), "run directories or run files (positional)")
      ("out,o", po::value<std::string>(), "where to write the figures (default: <first DIR>/figures)")
      ("run,r", po::value<std::string>(), "the run whose attention to draw: its directory or run.h5 (default: the first run found)")
      ("step", po::value<std::int64_t>(), "the attention log to draw, by training step (default: the last logged)")
      ("format,f", po::value<std::string>()->default_value("png"), "figure format: png | svg");
  po::positional_options_description positional;
  positional.add("dirs", -1);
  const po::variables_map vm = parse_command("plot", options, args, positional);
  if (vm.count("help")) {
    out << options << "\n";
    return kExitOk;
  }
  if (!vm.count("dirs")) throw UsageError("ablate plot: no run directory given", "usage: ablate plot DIR... [--out DIR] [--run RUN]");
  const std::vector<std::string> dirs = vm["dirs"].as<std::vector<std::string>>();
  const std::string format = vm["format"].as<std::string>();
  if (format != "png" && format != "svg")
    throw UsageError("ablate plot: unknown --format '" + format + "'", "allowed: png, svg");
  const std::string ext = "." + format;

  const std::vector<fs::path> files = analysis::find_runs(std::vector<fs::path>(dirs.begin(), dirs.end()));
  results::vet_run_files(files);  // one child reads them all first: a damaged file cannot crash this process
  std::vector<PlotRun> runs;
  for (const fs::path& file : files) {
    try {
      runs.push_back(read_run(file));
    } catch (const std::exception& e) {
      err << "ablate plot: warning: skipping unreadable run file " << file.string() << ": " << e.what() << "\n";
    }
  }
  if (runs.empty())
    throw UsageError("ablate plot: no readable run.h5 under " + join(dirs, ", "),
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");

  const fs::path out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>()) : fs::path(dirs.front()) / "figures";
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("cannot create " + out_dir.string() + ": " + ec.message(), "pass a writable directory with --out");
  std::vector<std::string> written;

  // (a) Curves per arm.
  const std::vector<PlotArm> arms = group_arms(runs);
  std::vector<std::string> metrics;
  for (const PlotRun& r : runs)
    for (const auto& [m, _] : r.summary.eval_curves)
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  auto curve_plot = [&](const std::string& name, const std::string& y_label, auto curve_of) {
    analysis::LinePlot plot;
    plot.title = y_label + " per arm (mean over seeds, min–max band)";
    plot.x_label = "step";
    plot.y_label = y_label;
    bool any = false;
    for (const PlotArm& a : arms) {
      std::vector<const Curve*> curves;
      for (const PlotRun* r : a.runs)
        if (const Curve* c = curve_of(*r)) curves.push_back(c);
      plot.series.push_back(band_series(a.label + " (n=" + std::to_string(a.runs.size()) + ")", curves));
      any |= !plot.series.back().x.empty();
    }
    if (!any) {
      err << "ablate plot: warning: no finite values of " << y_label << "; curves_" << name << ext << " not drawn\n";
      return;
    }
    const fs::path file = out_dir / ("curves_" + name + ext);
    analysis::line_plot(file, plot);
    written.push_back(file.string());
  };
  for (const std::string& m : metrics) {
    curve_plot(m, "eval " + m, [&](const PlotRun& r) -> const Curve* {
      const auto it = r.summary.eval_curves.find(m);
      return it == r.summary.eval_curves.end() ? nullptr : &it->second;
    });
  }
  curve_plot("train_loss", "train loss", [](const PlotRun& r) -> const Curve* { return r.train_loss.empty() ? nullptr : &r.train_loss; });

  // (b, c) Attention of one run at one log.
  fs::path chosen = runs.front().summary.path;
  if (vm.count("run")) {
    const std::vector<fs::path> picked = analysis::find_runs({fs::path(vm["run"].as<std::string>())});
    if (picked.size() != 1)
      throw UsageError("ablate plot: --run " + vm["run"].as<std::string>() + " names " + std::to_string(picked.size()) + " run files",
                       "pass one run directory or its run.h5");
    chosen = picked.front();
  }
  {
    const results::RunReader reader(chosen);
    const std::vector<std::int64_t> steps = reader.attention_steps();
    if (steps.empty()) {
      if (vm.count("step"))
        throw UsageError("ablate plot: " + chosen.string() + " has no attention logs", "train with log.attention.every > 0");
      err << "ablate plot: note: " << chosen.string() << " has no attention logs (log.attention.every = 0); no heatmaps\n";
    } else {
      std::size_t log = steps.size() - 1;
      if (vm.count("step")) {
        const std::int64_t want = vm["step"].as<std::int64_t>();
        const auto it = std::find(steps.begin(), steps.end(), want);
        if (it == steps.end()) {
          std::vector<std::string> s;
          for (std::int64_t x : steps) s.push_back(std::to_string(x));
          throw UsageError("ablate plot: " + chosen.string() + " has no attention log at step " + std::to_string(want),
                           "logged steps: " + join(s, ", "));
        }
        log = static_cast<std::size_t>(it - steps.begin());
      }
      for (std::string& f : attention_figures(reader, log, out_dir, ext)) written.push_back(std::move(f));
    }
  }

  // (d) Final attention entropy per layer/head, one series per arm.
  std::vector<std::string> categories;
  for (const PlotRun& r : runs)
    for (const std::string& c : r.entropy_order)
      if (std::find(categories.begin(), categories.end(), c) == categories.end()) categories.push_back(c);
  if (!categories.empty()) {
    analysis::GroupedPoints plot;
    plot.title = "attention entropy at the last log (mean ± std over seeds)";
    plot.x_label = "stack.kind layer head";
    plot.y_label = "entropy (nats)";
    plot.categories = categories;
    plot.include_zero = true;
    for (const PlotArm& a : arms) {
      analysis::PointSeries s;
      s.label = a.label;
      for (const std::string& c : categories) {
        std::vector<double> v;
        for (const PlotRun* r : a.runs) {
          const auto it = r->entropy.find(c);
          if (it != r->entropy.end() && std::isfinite(it->second)) v.push_back(it->second);
        }
        double mean = NAN, sd = NAN;
        if (!v.empty()) {
          mean = 0;
          for (double x : v) mean += x;
          mean /= static_cast<double>(v.size());
          sd = 0;
          if (v.size() > 1) {
            for (double x : v) sd += (x - mean) * (x - mean);
            sd = std::sqrt(sd / static_cast<double>(v.size() - 1));
          }
        }
        s.mean.push_back(mean);
        s.err.push_back(sd);
      }
      plot.series.push_back(std::move(s));
    }
    const fs::path file = out_dir / ("entropy" + ext);
    analysis::grouped_points(file, plot);
    written.push_back(file.string());
  }

  for (const std::string& f : written) out << "wrote " << f << "\n";
  return kExitOk;
}

}  // namespace ablate::cli
