// line_plot (plot.hpp): curves with min–max bands and an optional reference line. Measured, then
// laid out (axes, ticks that do not touch, the legend in an empty inside corner or in rows below),
// then drawn, on the canvas of plot_canvas.hpp.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/plot_canvas.hpp"

namespace ablate::analysis {
namespace {

namespace fs = std::filesystem;
using namespace canvas;

// Runs of consecutive indices where ok(i) holds.
template <class Ok>
std::vector<std::pair<std::size_t, std::size_t>> runs(std::size_t n, Ok ok) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < n;) {
    if (!ok(i)) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && ok(j)) ++j;
    out.emplace_back(i, j);
    i = j;
  }
  return out;
}

void validate_series(const LinePlot& plot) {
  if (plot.series.empty()) throw Error("line plot '" + plot.title + "' has no series", "pass at least one series");
  for (const auto& s : plot.series) {
    if (s.x.size() != s.mean.size())
      throw Error("series '" + s.label + "' has " + std::to_string(s.x.size()) + " x values but " +
                      std::to_string(s.mean.size()) + " means",
                  "x and mean must have the same length");
    if (s.lower.size() != s.upper.size() || (!s.lower.empty() && s.lower.size() != s.x.size()))
      throw Error("series '" + s.label + "' has a band of " + std::to_string(s.lower.size()) + " lower / " +
                      std::to_string(s.upper.size()) + " upper values for " + std::to_string(s.x.size()) + " points",
                  "give lower and upper with one value per point, or leave both empty");
  }
  if (!(plot.width > 0 && plot.height > 0))
    throw Error("line plot size " + std::to_string(plot.width) + " x " + std::to_string(plot.height) + " is invalid",
                "give a positive width and height");
}

// What a line plot draws: a y value is drawable when finite (and positive on a log axis).
struct Drawable {
  bool log = false;
  bool operator()(double v) const { return finite(v) && (!log || v > 0); }
};

// The data ranges over every drawable value (means, bands, the reference line).
struct Ranges {
  double xlo, xhi, ylo, yhi;
};
Ranges data_ranges(const LinePlot& plot, Drawable y_ok) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  bool any = false;
  for (const auto& s : plot.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!finite(s.x[i])) continue;
      bool used = false;
      for (double v : {s.mean[i], s.lower.empty() ? NAN : s.lower[i], s.upper.empty() ? NAN : s.upper[i]}) {
        if (!y_ok(v)) continue;
        ylo = std::min(ylo, v);
        yhi = std::max(yhi, v);
        used = true;
      }
      if (used) {
        xlo = std::min(xlo, s.x[i]);
        xhi = std::max(xhi, s.x[i]);
        any = true;
      }
    }
  }
  if (!any)
    throw Error("line plot '" + plot.title + "' has no finite" + std::string(y_ok.log ? ", positive" : "") + " values to draw",
                y_ok.log ? "a log axis needs values > 0; use a linear scale" : "check the series for NaN values");
  if (plot.reference && y_ok(*plot.reference)) {
    ylo = std::min(ylo, *plot.reference);
    yhi = std::max(yhi, *plot.reference);
  }
  return {xlo, xhi, ylo, yhi};
}

// The figure as laid out before anything is drawn.
struct Layout : Titles {
  std::vector<LegendEntry> legend;
  double W = 0, H = 0;  // H: the plot's own height; a legend below the plot adds to it
  Axis x, y;
  Ticks xt, yt;
  Rect area;
  Rect legend_size;   // the boxed legend's size
  LegendFlow below;   // the legend as rows below the plot
  bool legend_large;  // too large for a box inside the plot
};

Layout lay_out(const LinePlot& plot, const Ranges& r, bool log) {
  Scratch scratch;
  cairo_t* m = scratch.cr();
  Layout l;
  static_cast<Titles&>(l) = cleaned_titles(plot);
  // Legend entries: whole labels. The figure widens for a title or legend entry wider than it.
  l.legend = series_legend(plot.series, false);
  if (plot.reference && !plot.reference_label.empty()) l.legend.push_back({clean_text(plot.reference_label), {}, 0, false, true});
  l.W = std::max({double(plot.width), title_block_width(m, l.title, l.subtitle), flow_legend(m, l.legend, 1e9).min_width});
  l.H = plot.height;

  std::tie(l.x.lo, l.x.hi) = padded_range(r.xlo, r.xhi, false, 0.02);
  l.y.log = log;
  std::tie(l.y.lo, l.y.hi) = padded_range(r.ylo, r.yhi, log, 0.05);

  const double title_h = title_block_height(m, l.title, l.subtitle, 12);
  const double axis_title_h = line_height(m, kAxisFont);
  const double tick_h = line_height(m, kTickFont);
  const double top = kPad + title_h + tick_h / 2;
  const double bottom = l.H - kPad - (l.x_title.empty() ? 0 : axis_title_h + 6) - tick_h - 8;
  l.yt = make_ticks(l.y, std::max(2.0, (bottom - top) / 55));
  const double left = kPad + (l.y_title.empty() ? 0 : axis_title_h + 8) + max_text_width(m, l.yt.labels, kTickFont) + 8;

  // Legend: a box inside the plot area in an empty corner when it is small; else rows below the
  // plot, as many as the labels need (the figure grows by their height).
  l.legend_size = legend_box_size(m, l.legend);
  double right = l.W - kPad;
  l.legend_large = l.legend_size.width > 0.4 * (right - left) || l.legend_size.height > 0.6 * (bottom - top);
  l.below = flow_legend(m, l.legend, l.W - 2 * kPad);

  // x ticks: fewer until their labels do not touch.
  for (double target = std::max(2.0, (right - left) / 80); target >= 1; target = target > 2 ? target - 1 : 0.5) {
    l.x.p0 = left;
    l.x.p1 = right;
    l.xt = make_ticks(l.x, target);
    double widest = max_text_width(m, l.xt.labels, kTickFont);
    double spacing = l.xt.values.size() > 1 ? (l.x.map(l.xt.values[1]) - l.x.map(l.xt.values[0])) : 1e9;
    if (widest + 10 < spacing || target <= 1) break;
  }
  // The last x tick label must not run off the right edge.
  if (!l.xt.values.empty()) {
    const double over = l.x.map(l.xt.values.back()) + text_width(m, l.xt.labels.back(), kTickFont) / 2 - (l.W - 4);
    if (over > 0) right -= over;
  }
  l.area = {left, top, right - left, bottom - top};
  l.x.p0 = l.area.x;
  l.x.p1 = l.area.x + l.area.width;
  l.y.p0 = l.area.y + l.area.height;
  l.y.p1 = l.area.y;
  return l;
}

// The inside corners a legend box could take (top right, top left, bottom right, bottom left), and
// which of them covers the fewest drawn points (sampled along each segment and the reference line).
struct Corners {
  std::array<std::pair<double, double>, 4> at;
  std::size_t best = 0;
  bool free = false;  // the best corner covers no drawn point
};
Corners legend_corners(const LinePlot& plot, const Layout& l, Drawable y_ok) {
  const Rect& area = l.area;
  const Rect& box = l.legend_size;
  const double m8 = 8;
  Corners c;
  c.at = {std::pair{area.x + area.width - box.width - m8, area.y + m8}, std::pair{area.x + m8, area.y + m8},
          std::pair{area.x + area.width - box.width - m8, area.y + area.height - box.height - m8},
          std::pair{area.x + m8, area.y + area.height - box.height - m8}};
  std::array<std::size_t, 4> hits{};
  auto count = [&](double px, double py) {
    for (std::size_t k = 0; k < 4; ++k)
      if (px >= c.at[k].first && px <= c.at[k].first + box.width && py >= c.at[k].second && py <= c.at[k].second + box.height)
        ++hits[k];
  };
  const Axis &x = l.x, &y = l.y;
  for (const auto& s : plot.series) {
    for (const auto* ys : {&s.mean, &s.lower, &s.upper}) {
      if (ys->empty()) continue;
      for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (!finite(s.x[i]) || !y_ok((*ys)[i])) continue;
        count(x.map(s.x[i]), y.map((*ys)[i]));
        if (i + 1 < s.x.size() && finite(s.x[i + 1]) && y_ok((*ys)[i + 1]))  // the segment to the next point
          for (int k = 1; k < 8; ++k) {
            const double t = k / 8.0;
            count(x.map(s.x[i]) * (1 - t) + x.map(s.x[i + 1]) * t, y.map((*ys)[i]) * (1 - t) + y.map((*ys)[i + 1]) * t);
          }
      }
    }
  }
  if (plot.reference && y_ok(*plot.reference))
    for (double px = area.x; px <= area.x + area.width; px += 4) count(px, y.map(*plot.reference));
  c.best = std::size_t(std::min_element(hits.begin(), hits.end()) - hits.begin());
  c.free = hits[c.best] == 0;
  return c;
}

// The vertical grid lines, the x ticks and their labels.
void draw_x_axis(cairo_t* cr, const Layout& l) {
  for (std::size_t i = 0; i < l.xt.values.size(); ++i) {
    const double px = l.x.map(l.xt.values[i]);
    set_grey(cr, 0.9);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, snap(px), l.area.y);
    cairo_line_to(cr, snap(px), l.area.y + l.area.height);
    cairo_stroke(cr);
    draw_x_tick(cr, l.area, px, l.xt.labels[i], kTickFont, false);
  }
}

// Bands, the reference line and the curves, clipped to the plot area.
void draw_data(cairo_t* cr, const LinePlot& plot, const Layout& l, Drawable y_ok) {
  const Axis &x = l.x, &y = l.y;
  cairo_save(cr);
  cairo_rectangle(cr, l.area.x, l.area.y, l.area.width, l.area.height);
  cairo_clip(cr);
  for (std::size_t si = 0; si < plot.series.size(); ++si) {
    const auto& s = plot.series[si];
    if (s.lower.empty()) continue;
    auto ok = [&](std::size_t i) { return finite(s.x[i]) && y_ok(s.lower[i]) && y_ok(s.upper[i]); };
    set_colour(cr, palette_colour(si), 0.18);
    for (auto [a, b] : runs(s.x.size(), ok)) {
      if (b - a < 2) continue;
      cairo_move_to(cr, x.map(s.x[a]), y.map(s.upper[a]));
      for (std::size_t i = a + 1; i < b; ++i) cairo_line_to(cr, x.map(s.x[i]), y.map(s.upper[i]));
      for (std::size_t i = b; i-- > a;) cairo_line_to(cr, x.map(s.x[i]), y.map(s.lower[i]));
      cairo_close_path(cr);
      cairo_fill(cr);
    }
  }
  if (plot.reference && y_ok(*plot.reference)) {
    set_grey(cr, 0.3);
    const double d[] = {5, 3};
    cairo_set_dash(cr, d, 2, 0);
    cairo_set_line_width(cr, 1.3);
    cairo_move_to(cr, l.area.x, y.map(*plot.reference));
    cairo_line_to(cr, l.area.x + l.area.width, y.map(*plot.reference));
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  for (std::size_t si = 0; si < plot.series.size(); ++si) {
    const auto& s = plot.series[si];
    auto ok = [&](std::size_t i) { return finite(s.x[i]) && y_ok(s.mean[i]); };
    set_colour(cr, palette_colour(si));
    cairo_set_line_width(cr, 2);
    set_series_dash(cr, si);
    for (auto [a, b] : runs(s.x.size(), ok)) {
      if (b - a == 1) {  // an isolated point
        cairo_new_sub_path(cr);
        cairo_arc(cr, x.map(s.x[a]), y.map(s.mean[a]), 2.5, 0, 2 * kPi);
        cairo_fill(cr);
        continue;
      }
      cairo_move_to(cr, x.map(s.x[a]), y.map(s.mean[a]));
      for (std::size_t i = a + 1; i < b; ++i) cairo_line_to(cr, x.map(s.x[i]), y.map(s.mean[i]));
      cairo_stroke(cr);
    }
    cairo_set_dash(cr, nullptr, 0, 0);
  }
  cairo_restore(cr);
}

}  // namespace

PlotLayout line_plot(const fs::path& file, const LinePlot& plot) {
  validate_series(plot);
  figure_format(file);
  const bool log = plot.y_scale == YScale::Log;
  const Drawable y_ok{log};
  const Layout l = lay_out(plot, data_ranges(plot, y_ok), log);
  // The legend goes below the plot when it is large or no inside corner is free of data.
  const Corners corners = legend_corners(plot, l, y_ok);
  const bool legend_below = l.legend_large || !corners.free;
  const double total_h = legend_below && !l.legend.empty() ? std::ceil(l.H + l.below.height + 6) : l.H;

  Figure fig(file, l.W, total_h, plot.png_scale);
  cairo_t* cr = fig.cr();
  draw_y_axis(cr, l.area, l.y, l.yt, kTickFont, true);
  draw_x_axis(cr, l);
  draw_data(cr, plot, l, y_ok);
  draw_frame(cr, l.area);
  draw_axis_titles(cr, l.area, l.W, l.H, l.x_title, l.y_title);
  draw_title(cr, l.W / 2, kPad, l.title, l.subtitle);

  PlotLayout layout{{int(l.W), int(total_h)}, l.area, legend_labels(l.legend), {}, legend_below};
  if (legend_below)
    layout.legend_boxes = draw_legend_flow(cr, l.below, l.legend, l.W / 2, l.H - 4);
  else if (!l.legend.empty())
    layout.legend_boxes = draw_legend_box(cr, corners.at[corners.best].first, corners.at[corners.best].second, l.legend);
  fig.finish();
  return layout;
}

}  // namespace ablate::analysis
