// The canvas behind the figure kinds of plot.hpp (plot_lines, plot_heatmap, plot_points): a
// figure surface written all or nothing, cleaned and measured text, colours, axes and ticks,
// legends and titles. Internal to framework/analysis; all coordinates in px (user space).
#pragma once

#include <cairo.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/plot.hpp"

namespace ablate::analysis::canvas {

inline constexpr double kPi = 3.14159265358979323846;

// ---- RAII for the C handles ----------------------------------------------------------------
struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
};
struct PatternDeleter {
  void operator()(cairo_pattern_t* p) const { cairo_pattern_destroy(p); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;
using PatternPtr = std::unique_ptr<cairo_pattern_t, PatternDeleter>;

// One figure being drawn: its directory checked up front (a bad path fails before any drawing),
// the surface, the context. finish() checks every status and writes the file all or nothing
// (write_file_atomically: a killed or failed write leaves the previous figure, or none, never a
// truncated one under the final name).
class Figure {
 public:
  Figure(const std::filesystem::path& file, double width, double height, double png_scale);
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;
  ~Figure();

  cairo_t* cr() const { return cr_.get(); }
  void finish();

 private:
  void create_surface(double width, double height, double scale, double device_w, double device_h);
  void check(cairo_status_t status, const char* what) const;

  std::filesystem::path file_;
  FigureFormat format_;
  std::string svg_;       // an SVG is assembled here, then written at finish()
  std::string svg_text_;  // an SVG's text as <text> elements (draw_text), put on top at finish()
  SurfacePtr surface_;
  ContextPtr cr_;
};

// A context for measuring text before the figure's size is known.
class Scratch {
 public:
  Scratch();
  cairo_t* cr() const { return cr_.get(); }

 private:
  SurfacePtr surface_;
  ContextPtr cr_;
};

// ---- Text ----------------------------------------------------------------------------------
// cairo's toy text API puts the context in an error state on invalid UTF-8: every string is
// cleaned first (invalid bytes -> '?', control characters -> ' ') and shortened to max_chars.
std::string clean_text(const std::string& s, std::size_t max_chars = 0);

enum class HAlign { Left, Center, Right };
enum class VAlign { Top, Middle, Baseline, Bottom };

// The advance width of already-cleaned text.
double text_width(cairo_t* cr, const std::string& text, double size, bool bold = false);
double max_text_width(cairo_t* cr, const std::vector<std::string>& texts, double size, bool bold = false);
// The height a line of text takes: the font's ascent + descent.
double line_height(cairo_t* cr, double size);
// Shortens cleaned text with '…' until it fits max_width.
std::string fit_text(cairo_t* cr, std::string text, double size, double max_width, bool bold = false);
// Draws cleaned text anchored at (x, y); `angle` turns it about the anchor (-pi/2: reads upwards).
// In an SVG figure the text becomes an SVG <text> element (selectable, a few dozen bytes) rather
// than cairo's glyph outlines (a path per glyph shape, most of a figure's bytes).
void draw_text(cairo_t* cr, double x, double y, const std::string& text, double size, HAlign h, VAlign v, bool bold = false,
               double angle = 0);

// ---- Colours -------------------------------------------------------------------------------
inline constexpr std::array<std::uint32_t, 8> kOkabeIto = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7,
                                                           0xE69F00, 0x56B4E9, 0x000000, 0xF0E442};
// viridis at t = 0, 1/8, ..., 1 (the published 9-step viridis).
inline constexpr std::array<std::uint32_t, 9> kViridis = {0x440154, 0x472D7B, 0x3B528B, 0x2C728E, 0x21908C,
                                                          0x27AD81, 0x5DC863, 0xAADC32, 0xFDE725};

Rgb hex(std::uint32_t v);
void set_colour(cairo_t* cr, const Rgb& c, double alpha = 1);
void set_grey(cairo_t* cr, double level, double alpha = 1);
// Series past the palette's length repeat its colours with a dash pattern.
void set_series_dash(cairo_t* cr, std::size_t i);

// ---- Axes and ticks ------------------------------------------------------------------------
inline bool finite(double v) { return std::isfinite(v); }

struct Axis {
  double lo = 0, hi = 1;  // data range
  double p0 = 0, p1 = 1;  // pixel positions of lo and hi
  bool log = false;
  double map(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

struct Ticks {
  std::vector<double> values;
  std::vector<std::string> labels;
};

// About target_count ticks over the axis's data range (1-2-5 steps; decades on a log axis).
Ticks make_ticks(const Axis& a, double target_count);
// [lo, hi] padded by `frac` of the span (multiplicatively on a log axis); a zero span (or one
// below double precision's resolution at that magnitude) is widened.
std::pair<double, double> padded_range(double lo, double hi, bool log, double frac);
inline double snap(double v) { return std::round(v) + 0.5; }  // a 1px line centred on a pixel row
void draw_frame(cairo_t* cr, const Rect& r);
void draw_y_axis(cairo_t* cr, const Rect& area, const Axis& y, const Ticks& ticks, double font, bool grid);
// A tick mark under the plot area at x = px, and its label (upright, or reading upwards).
void draw_x_tick(cairo_t* cr, const Rect& area, double px, const std::string& label, double font, bool rotate);

// ---- Legends and titles --------------------------------------------------------------------
inline constexpr double kPad = 16;
inline constexpr double kTitleFont = 15, kSubtitleFont = 12, kAxisFont = 13, kTickFont = 11;

struct LegendEntry {
  std::string label;  // cleaned
  Rgb colour;
  std::size_t dash_index = 0;  // series index for set_series_dash
  bool band = false;
  bool reference = false;  // a dashed grey line
  bool marker = false;     // a point marker instead of a line
};

// A boxed legend, one entry per row, top-left corner at (x, y); returns each label's box.
Rect legend_box_size(cairo_t* cr, const std::vector<LegendEntry>& entries);
std::vector<Rect> draw_legend_box(cairo_t* cr, double x, double y, const std::vector<LegendEntry>& entries);

// A legend flowed into centred rows under (or above) a plot: entries in order, a new row when the
// next would pass max_width. Labels are never shortened; an entry wider than max_width gets a row
// of its own, and min_width says how wide the figure must be for it.
struct LegendFlow {
  std::vector<std::vector<std::size_t>> rows;
  double height = 0;     // rows × row height
  double min_width = 0;  // the widest entry plus the figure's side padding
};
LegendFlow flow_legend(cairo_t* cr, const std::vector<LegendEntry>& entries, double max_width);
// Draws a flowed legend with its rows centred on centre_x, the first row's top at `top`; returns
// where each entry's label lies, in entry order.
std::vector<Rect> draw_legend_flow(cairo_t* cr, const LegendFlow& flow, const std::vector<LegendEntry>& entries, double centre_x,
                                   double top);

// Legend entries of plot series: whole labels (cleaned, never shortened), "series i" when empty.
template <class SeriesList>
std::vector<LegendEntry> series_legend(const SeriesList& series, bool marker) {
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < series.size(); ++i) {
    LegendEntry e{clean_text(series[i].label.empty() ? "series " + std::to_string(i) : series[i].label), palette_colour(i), i};
    e.marker = marker;
    if constexpr (requires { series[i].lower; }) e.band = !series[i].lower.empty();
    legend.push_back(std::move(e));
  }
  return legend;
}
std::vector<std::string> legend_labels(const std::vector<LegendEntry>& entries);

// A line plot's or grouped points' texts, cleaned.
struct Titles {
  std::string title, subtitle, x_title, y_title;
};
template <class Plot>
Titles cleaned_titles(const Plot& plot) {
  return {clean_text(plot.title), clean_text(plot.subtitle), clean_text(plot.x_label), clean_text(plot.y_label)};
}

// The figure title (bold) and its subtitle (a caption line under it), neither ever shortened:
// title_block_width says how wide the figure must be for them.
double title_block_height(cairo_t* cr, const std::string& title, const std::string& subtitle, double gap);
double title_block_width(cairo_t* cr, const std::string& title, const std::string& subtitle);
void draw_title(cairo_t* cr, double centre_x, double top, const std::string& title, const std::string& subtitle = {});
// The x axis title centred under `area` at the figure's bottom (height H), the y axis title
// reading upwards at its left; each cut with '…' to the room it has.
void draw_axis_titles(cairo_t* cr, const Rect& area, double W, double H, const std::string& x_title, const std::string& y_title);

}  // namespace ablate::analysis::canvas
