// The comparison as files (see report_files.hpp): loading runs, comparing, writing the reports
// atomically so that an interrupted write never leaves half a report.
#include "analysis/report_files.hpp"

#include "ablate/error.hpp"
#include <fstream>
#include <iterator>
#include <set>

#include <yaml-cpp/yaml.h>

#include "analysis/figures.hpp"
#include "analysis/report.hpp"
#include "analysis/run_summary.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"

namespace ablate::analysis {
namespace fs = std::filesystem;

LoadedRuns load_runs(const std::vector<fs::path>& paths) {
  const std::vector<fs::path> files = find_runs(paths);
  results::vet_run_files(files);  // one child reads them all first: a damaged file cannot crash this process
  LoadedRuns out;
  for (const fs::path& file : files) {
    try {
      out.runs.push_back(summarize(results::RunReader(file)));
    } catch (const std::exception& e) {
      out.unreadable.push_back(file.string() + ": " + e.what());
    }
  }
  if (out.runs.empty()) {
    std::vector<std::string> names;
    for (const auto& p : paths) names.push_back(p.string());
    throw UsageError("no readable run.h5 under " + join(names, ", ") +
                         (files.empty() ? "" : " (" + std::to_string(files.size()) + " found, none readable)"),
                     "pass the directories `ablate run --out` wrote to, or an experiment directory holding them");
  }
  return out;
}

std::vector<std::string> tuning_notes(const std::vector<fs::path>& paths) {
  std::set<fs::path> dirs;  // the directories given, and the sweep directory of each run file given
  for (const fs::path& p : paths) dirs.insert(fs::is_directory(p) ? p : p.parent_path().parent_path());
  std::vector<std::string> notes;
  for (const fs::path& dir : dirs) {
    const fs::path file = dir / kTuningRunsFolder / "selection.yaml";
    if (!fs::is_regular_file(file)) continue;
    try {
      const YAML::Node y = YAML::LoadFile(file.string());
      std::vector<std::string> chosen, edges;
      for (const YAML::Node& arm : y["arms"]) {
        std::vector<std::string> settings;
        for (const auto& kv : arm["chosen"]) settings.push_back(kv.first.as<std::string>() + " " + kv.second.as<std::string>());
        const std::string name = arm["arm"].as<std::string>();
        chosen.push_back(name + ": " + join(settings, ", "));
        std::vector<std::string> at_edge;
        for (const YAML::Node& key : arm["at_edge"]) at_edge.push_back(key.as<std::string>());
        if (!at_edge.empty()) edges.push_back(name + " (" + join(at_edge, ", ") + ")");
      }
      const YAML::Node cost = y["cost"];
      std::vector<std::string> seeds, rungs;
      for (const YAML::Node& v : y["seeds"]) seeds.push_back(v.as<std::string>());
      for (const YAML::Node& v : y["rungs"]) rungs.push_back(v.as<std::string>());
      notes.push_back("tuning (sweep.tune; " + file.string() + "): each arm chose its setting by " +
                      y["value"].as<std::string>() + " on tuning seeds " + join(seeds, ", ") + " (" + join(chosen, "; ") +
                      "); the cost: " + cost["runs"].as<std::string>() + " tuning runs, " + cost["steps"].as<std::string>() +
                      " steps, " + printf_text(cost["seconds"].as<double>(), "%.1f") + " s of run time" +
                      (rungs.size() < 2 ? "" : ", successive halving at steps " + join(rungs, ", ")) +
                      "; the tuning runs are in no arm's statistics");
      if (!edges.empty())
        notes.push_back("WARNING " + join(edges, "; ") +
                        ": the chosen value is at the edge of the tuning grid, so a better one may lie beyond it; extend the "
                        "grid (sweep.tune.grid) past it");
    } catch (const std::exception& e) {
      notes.push_back("warning: " + file.string() + " could not be read (" + e.what() + "); the tuning is not summarised");
    }
  }
  return notes;
}

Comparison compare_runs(const LoadedRuns& loaded, const CompareOptions& options) {
  Comparison c;
  try {
    c = compare(loaded.runs, options);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what(), e.hint());  // a metric or baseline that matches nothing is a command-line mistake
  }
  if (!loaded.unreadable.empty())
    c.notes.push_back(std::to_string(loaded.unreadable.size()) +
                      " unreadable run file(s) left out of every arm: " + join(loaded.unreadable, "; "));
  return c;
}

namespace {

std::vector<HtmlFigure> html_figures(const FigureReport& report, const std::string& first_stem, bool skip_one_run) {
  std::vector<HtmlFigure> out;
  for (const fs::path& file : report.written) {
    const std::string stem = file.stem().string();
    if (skip_one_run && (stem.starts_with("attention_") || stem == "decode_cross")) continue;        // in the drill-down
    if (stem.starts_with("curves_") && stem != first_stem && stem != "curves_train_loss") continue;  // in figures/ only
    HtmlFigure f{stem, figure_caption(stem), read_small_file(file)};
    if (stem == first_stem)
      out.insert(out.begin(), std::move(f));
    else
      out.push_back(std::move(f));
  }
  return out;
}

// report.html with its figures, drawn as SVG into `scratch` (removed afterwards).
std::string html_with_figures(const Comparison& c, const fs::path& scratch, CurveAxis curves_x, std::vector<std::string>& notes) {
  std::vector<HtmlFigure> figures;
  std::vector<std::vector<HtmlFigure>> arm_figures(c.arms.size());
  std::string problem;  // why no figures could be drawn, said on the page
  std::error_code ec;
  fs::remove_all(scratch, ec);
  try {
    std::vector<fs::path> all;
    std::vector<std::vector<fs::path>> per_arm(c.arms.size());
    for (std::size_t a = 0; a < c.arms.size(); ++a)
      for (const auto& run : c.arms[a].runs)
        if (!run.path.empty()) {
          all.push_back(run.path);
          per_arm[a].push_back(run.path);
        }
    if (!all.empty()) {
      FigureOptions options;
      options.out_dir = scratch / "all";
      options.format = "svg";
      options.x = curves_x;
      if (c.arms.size() > 1) options.baseline = arm_selector(c, c.baseline);
      const FigureReport report = draw_figures(all, options);
      for (const auto& note : report.notes) notes.push_back("report.html: " + note);
      figures = html_figures(report, "curves_" + c.metric, true);
      for (std::size_t a = 0; a < c.arms.size(); ++a) {
        if (per_arm[a].empty()) continue;
        const FigureReport arm = draw_arm_figures(per_arm[a], c.metric, scratch / ("arm" + std::to_string(a)), "svg", curves_x);
        arm_figures[a] = html_figures(arm, "runs_" + c.metric, false);
      }
    }
  } catch (const std::exception& e) {
    problem = e.what();
    notes.push_back("report.html: its figures could not be drawn: " + problem);
    figures.clear();
    arm_figures.assign(c.arms.size(), {});
  }
  fs::remove_all(scratch, ec);
  return report_html(c, figures, arm_figures, problem);
}

}  // namespace

std::vector<fs::path> write_reports(const Comparison& c, const fs::path& out_dir, std::vector<std::string>& notes,
                                    CurveAxis curves_x) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("cannot create " + out_dir.string() + ": " + ec.message(), "pass a writable directory with --out");
  std::vector<fs::path> written;
  const auto put = [&](const char* name, const std::string& text) {  // run files' text may be damaged
    write_file_atomically(out_dir / name, valid_utf8(text));
    written.push_back(out_dir / name);
  };
  put("report.md", report_markdown(c));
  put("report.html", html_with_figures(c, out_dir / ".report-figures", curves_x, notes));
  put("summary.csv", summary_csv(c));
  put("summary.json", summary_json(c));
  put("table.tex", format_latex(c));
  return written;
}

Analysis analyse(const std::vector<fs::path>& paths, const CompareOptions& options, const fs::path& out_dir,
                 const std::optional<fs::path>& figures_dir, CurveAxis curves_x) {
  Analysis a;
  const LoadedRuns loaded = load_runs(paths);
  for (const auto& why : loaded.unreadable) a.notes.push_back("warning: skipping unreadable run file " + why);
  a.comparison = compare_runs(loaded, options);
  for (std::string& note : tuning_notes(paths)) a.comparison.notes.push_back(std::move(note));
  // The reports and figures are one set: marked incomplete while they are written, so a set that
  // a kill or a full disk stopped half-way (new report.md, old figures) says so. Each file itself
  // is written all or nothing.
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("cannot create " + out_dir.string() + ": " + ec.message(), "pass a writable directory with --out");
  const fs::path marker = out_dir / kIncompleteMarker;
  write_file_atomically(marker,
                        "The comparison being written into this directory stopped before it finished: report.md, report.html,\n"
                        "summary.csv, summary.json, table.tex and figures/ may come from different comparisons.\n"
                        "Run the comparison again (ablate compare, or ablate sweep SPEC) to write a whole set.\n");
  a.written = write_reports(a.comparison, out_dir, a.notes, curves_x);
  if (figures_dir) {
    std::vector<fs::path> files;
    for (const auto& run : loaded.runs) files.push_back(run.path);
    FigureOptions figures;
    figures.out_dir = *figures_dir;
    figures.x = curves_x;
    if (a.comparison.arms.size() > 1) figures.baseline = arm_selector(a.comparison, a.comparison.baseline);
    const FigureReport report = draw_figures(files, figures);
    a.written.insert(a.written.end(), report.written.begin(), report.written.end());
    a.notes.insert(a.notes.end(), report.notes.begin(), report.notes.end());
  }
  if (a.comparison.scaling.defined()) {  // across model sizes: its figure beside the others (or the reports)
    const fs::path file = (figures_dir ? *figures_dir : out_dir) / "scaling.png";
    fs::create_directories(file.parent_path(), ec);
    draw_scaling_figure(a.comparison, file);
    a.written.push_back(file);
  }
  fs::remove(marker, ec);
  return a;
}

}  // namespace ablate::analysis
