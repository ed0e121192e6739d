// Publication-style figures rendered in-process with cairo, as PNG or SVG (chosen by the file
// extension): curves with bands, heatmap grids and grouped points with error bars. Knows nothing
// of runs or HDF5 — it takes plain arrays, so `ablate plot` / `ablate compare` feed it what they read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ablate::analysis {

// The figure as laid out, in px. A PNG is `width × png_scale` by `height × png_scale` pixels; an
// SVG says width="<width>px" height="<height>px".
struct Rect {
  double x = 0, y = 0, width = 0, height = 0;
};
struct FigureSize {
  int width = 0, height = 0;
};

// Text is never shortened where it names something — titles, subtitles, legend labels, panel
// titles: the figure (or a panel's column) grows to fit it. Only axis titles and, where a grid
// asks for it, heatmap tick labels are cut with '…'.

// A line plot or grouped points as laid out: the figure's size, the plot area, and the legend as
// drawn (whole labels, in series order, the reference line's entry last) with each label's box.
struct PlotLayout {
  FigureSize size;
  Rect area;
  std::vector<std::string> legend;  // the legend labels exactly as drawn
  std::vector<Rect> legend_boxes;   // [legend.size()]: where each label's text lies
  bool legend_below = false;        // a line plot's legend in rows below the plot (else a box inside)
};

// The colours every figure uses: series i gets palette_colour(i) (Okabe–Ito, colour-blind safe;
// after 8 series the colours repeat with a dash pattern), heatmaps map [vmin, vmax] through
// colormap (a viridis-like perceptual sequential map; t is clamped to [0, 1], NaN gives grey).
struct Rgb {
  double r = 0, g = 0, b = 0;  // each in [0, 1]
};
Rgb palette_colour(std::size_t i);
Rgb colormap(double t);

// The formats a figure can be written in, by extension: ".png", ".svg" (case-insensitive).
// Anything else throws ablate::Error naming the allowed set.
enum class FigureFormat { Png, Svg };
FigureFormat figure_format(const std::filesystem::path& file);

// ---- Curves with bands ---------------------------------------------------------------------
enum class YScale { Linear, Log };

struct Series {
  std::string label;
  std::vector<double> x, mean;       // [N] each
  std::vector<double> lower, upper;  // [N] each, or both empty (no band)
};

// NaN / ±inf points are skipped and break the line (a point alone is drawn as a dot); on a log
// axis values <= 0 are skipped the same way. A series with no finite point still gets its legend
// entry; no finite point in the whole plot throws. The legend is a box in the emptiest corner of
// the plot area when it is small, else rows below the plot (as many as the labels need): the
// figure is then taller than `height` by those rows.
struct LinePlot {
  std::string title, x_label, y_label;
  std::string subtitle;  // a caption line under the title ("arms: model.block · model.ffn"); none when empty
  std::vector<Series> series;
  YScale y_scale = YScale::Linear;
  std::optional<double> reference;  // a horizontal reference line (a threshold), dashed
  std::string reference_label;      // its legend entry; none when empty
  int width = 900, height = 560;
  double png_scale = 2;
};
PlotLayout line_plot(const std::filesystem::path& file, const LinePlot& plot);

// ---- Heatmap grids -------------------------------------------------------------------------
struct HeatmapPanel {
  std::string title;                            // "layer 0 · head 1"
  std::size_t rows = 0, cols = 0;               // e.g. [T query, S key]
  std::vector<double> values;                   // [rows, cols] row-major; NaN = no value (drawn as masked)
  std::vector<std::uint8_t> mask;               // [rows, cols], nonzero = padding (grey, hatched); or empty
  std::vector<std::string> x_labels, y_labels;  // [cols] / [rows]; empty = use the grid's
};

// grid_rows × grid_cols panels (panels row-major, the last row may be partly empty), one shared
// colorbar. Tick labels given on the grid (shared by all panels) are drawn on the outer panels
// only: y labels on the left column, x labels under the bottom row; a panel's own labels are drawn
// on that panel. X labels are turned 90° when they do not fit under their column. Labels are UTF-8
// (invalid bytes show as '?'); tick labels longer than max_label_chars are shortened with '…'.
struct HeatmapGrid {
  std::string title;
  std::string subtitle;  // a caption line under the title; none when empty
  std::size_t grid_rows = 0, grid_cols = 0;
  std::vector<HeatmapPanel> panels;             // [grid_rows * grid_cols] at most
  std::vector<std::string> x_labels, y_labels;  // shared tick labels ("source tokens", "target tokens")
  std::vector<std::uint8_t> mask;               // shared padding mask, used by panels without their own
  std::string x_axis_label, y_axis_label, colorbar_label;
  double vmin = 0, vmax = 1;         // the colorbar's range; values outside are clamped
  double cell = 0;                   // a matrix cell's side in px; 0 = from the matrix size
  std::size_t max_label_chars = 14;  // tick labels (tokens) longer than this are cut; 0 = never (arm names)
  double png_scale = 2;
};
// The figure's size is derived from the panel count, matrix size and labels.
struct HeatmapLayout {
  FigureSize size;
  double cell = 0;
  std::vector<Rect> matrices;  // [panels.size()]: where each panel's matrix lies, in px
  Rect colorbar;
};
HeatmapLayout heatmap_grid(const std::filesystem::path& file, const HeatmapGrid& grid);

// ---- Grouped points with error bars ----------------------------------------------------------
// One point per (category, arm) with an error bar mean ± err, the arms side by side in each
// category, one colour per arm: e.g. attention entropy per layer·head category across arms.
struct PointSeries {
  std::string label;         // the arm
  std::vector<double> mean;  // [categories]; NaN = no point
  std::vector<double> err;   // [categories] (e.g. std over seeds), or empty (no bars)
};
// The legend is rows under the title, as many as the labels need.
struct GroupedPoints {
  std::string title, x_label, y_label;
  std::string subtitle;                 // a caption line under the title; none when empty
  std::vector<std::string> categories;  // "L0·H0", ...
  std::vector<PointSeries> series;
  bool include_zero = false;  // extend the y axis to 0
  int width = 0;              // 0 = from the number of categories and arms (wider for a long title or legend label)
  int height = 480;           // with a one-row legend; each further row of legend adds its height
  double png_scale = 2;
};
PlotLayout grouped_points(const std::filesystem::path& file, const GroupedPoints& plot);

}  // namespace ablate::analysis
