// grouped_points (plot.hpp): one point per arm and category with its error bar (final metrics,
// attention entropy per head), categories shaded alternately, the legend flowed under the title.
// Validated, laid out, then drawn on plot_canvas.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/plot_canvas.hpp"

namespace ablate::analysis {
namespace {

namespace fs = std::filesystem;
using namespace canvas;

// The y range over every mean ± error (and zero, when asked), the inputs checked.
std::pair<double, double> value_range(const GroupedPoints& plot) {
  const std::size_t nc = plot.categories.size(), ns = plot.series.size();
  if (nc == 0) throw Error("grouped points '" + plot.title + "' has no categories", "pass at least one category");
  if (ns == 0) throw Error("grouped points '" + plot.title + "' has no series", "pass at least one series");
  double ylo = std::numeric_limits<double>::infinity(), yhi = -ylo;
  for (const auto& s : plot.series) {
    if (s.mean.size() != nc)
      throw Error(
          "series '" + s.label + "' has " + std::to_string(s.mean.size()) + " means for " + std::to_string(nc) + " categories",
          "give one mean per category (NaN for none)");
    if (!s.err.empty() && s.err.size() != nc)
      throw Error("series '" + s.label + "' has " + std::to_string(s.err.size()) + " error values for " + std::to_string(nc) +
                      " categories",
                  "give one error per category, or none");
    for (std::size_t i = 0; i < nc; ++i) {
      if (!finite(s.mean[i])) continue;
      const double e = s.err.empty() || !finite(s.err[i]) ? 0 : std::abs(s.err[i]);
      ylo = std::min(ylo, s.mean[i] - e);
      yhi = std::max(yhi, s.mean[i] + e);
    }
  }
  if (!(ylo <= yhi)) throw Error("grouped points '" + plot.title + "' has no finite values", "check the series for NaN values");
  if (plot.include_zero) {
    ylo = std::min(ylo, 0.0);
    yhi = std::max(yhi, 0.0);
  }
  if (plot.width < 0 || plot.height <= 0)
    throw Error("grouped points size " + std::to_string(plot.width) + " x " + std::to_string(plot.height) + " is invalid",
                "give a positive height and a width >= 0 (0 = automatic)");
  return {ylo, yhi};
}

struct Layout : Titles {
  std::vector<std::string> cats;  // category labels, cleaned and shortened to 20 characters
  std::vector<LegendEntry> legend;
  LegendFlow flow;
  double W = 0, H = 0, title_h = 0;
  double slot = 0;      // the width of one category
  bool rotate = false;  // category labels reading upwards
  Axis y;
  Ticks yt;
  Rect area;
};

Layout lay_out(const GroupedPoints& plot, double ylo, double yhi) {
  const std::size_t nc = plot.categories.size(), ns = plot.series.size();
  Scratch scratch;
  cairo_t* m = scratch.cr();
  Layout l;
  static_cast<Titles&>(l) = cleaned_titles(plot);
  for (const auto& c : plot.categories) l.cats.push_back(clean_text(c, 20));
  l.legend = series_legend(plot.series, true);

  // Automatic width: a slot per category wide enough for its arms, narrower past ~2400 px.
  // Upright category labels when they need at most 80 px.
  const double cat_w = max_text_width(m, l.cats, kTickFont);
  double slot_auto = std::max({24.0, 9.0 * ns + 10, cat_w + 10 <= 80 ? cat_w + 10 : 0.0});
  if (nc * slot_auto > 2200) slot_auto = std::max(2200.0 / double(nc), 6.0 * ns + 4);
  std::tie(l.y.lo, l.y.hi) = padded_range(ylo, yhi, false, 0.06);
  if (plot.include_zero && ylo >= 0) l.y.lo = std::max(l.y.lo, 0.0);  // do not pad below a zero floor
  l.H = plot.height;
  const double tick_h = line_height(m, kTickFont);
  const double axis_title_h = line_height(m, kAxisFont);
  l.title_h = title_block_height(m, l.title, l.subtitle, 10);
  const double provisional_h = l.H - 160;
  l.yt = make_ticks(l.y, std::max(2.0, provisional_h / 50));
  const double left = kPad + (l.y_title.empty() ? 0 : axis_title_h + 8) + max_text_width(m, l.yt.labels, kTickFont) + 8;
  const double right_pad = kPad + 4;
  l.W = plot.width > 0 ? plot.width : std::max(520.0, std::ceil(left + nc * slot_auto + right_pad));
  // Legend rows under the title, wrapped to the figure width; the figure widens for a title or
  // an entry wider than it (labels are never shortened).
  l.W = std::max({l.W, title_block_width(m, l.title, l.subtitle), flow_legend(m, l.legend, 1e9).min_width});
  l.flow = flow_legend(m, l.legend, l.W - 2 * kPad);
  // The figure grows by the legend's rows past the first (a leaderboard's 30 arms wrap into many),
  // so the plot keeps the room `height` gives it.
  if (l.flow.rows.size() > 1) l.H += l.flow.height * double(l.flow.rows.size() - 1) / double(l.flow.rows.size());
  l.slot = (l.W - left - right_pad) / double(nc);
  if (l.slot < 4)
    throw Error("grouped points '" + plot.title + "': " + std::to_string(nc) + " categories do not fit in width " +
                    std::to_string(plot.width),
                "use a larger width, or 0 for automatic");
  l.rotate = cat_w + 6 > l.slot;

  const double top = kPad + l.title_h + l.flow.height + 10;
  const double bottom = l.H - kPad - (l.x_title.empty() ? 0 : axis_title_h + 8) - (l.rotate ? cat_w : tick_h) - 8;
  if (bottom - top < 40)
    throw Error("grouped points '" + plot.title + "': height " + std::to_string(plot.height) + " leaves no room for the plot",
                "use a larger height or shorter category names");
  l.area = {left, top, l.W - left - right_pad, bottom - top};
  l.y.p0 = l.area.y + l.area.height;
  l.y.p1 = l.area.y;
  return l;
}

// Alternate category shading, the grid and the zero line.
void draw_background(cairo_t* cr, const Layout& l, std::size_t nc) {
  for (std::size_t c = 0; c < nc; c += 2) {
    set_grey(cr, 0.955);
    cairo_rectangle(cr, l.area.x + c * l.slot, l.area.y, l.slot, l.area.height);
    cairo_fill(cr);
  }
  draw_y_axis(cr, l.area, l.y, l.yt, kTickFont, true);
  if (l.y.lo < 0 && l.y.hi > 0) {
    set_grey(cr, 0.55);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, l.area.x, snap(l.y.map(0)));
    cairo_line_to(cr, l.area.x + l.area.width, snap(l.y.map(0)));
    cairo_stroke(cr);
  }
}

// Each series' points, side by side within a category, with capped error bars.
void draw_points(cairo_t* cr, const GroupedPoints& plot, const Layout& l) {
  const std::size_t nc = plot.categories.size(), ns = plot.series.size();
  const double dx = std::min(11.0, l.slot * 0.8 / double(ns));
  for (std::size_t si = 0; si < ns; ++si) {
    const auto& s = plot.series[si];
    const Rgb colour = palette_colour(si);
    for (std::size_t c = 0; c < nc; ++c) {
      if (!finite(s.mean[c])) continue;
      const double px = l.area.x + (c + 0.5) * l.slot + (double(si) - (ns - 1) / 2.0) * dx;
      const double py = l.y.map(s.mean[c]);
      set_colour(cr, colour);
      if (!s.err.empty() && finite(s.err[c]) && s.err[c] != 0) {
        const double e = std::abs(s.err[c]);
        const double y0 = l.y.map(s.mean[c] - e), y1 = l.y.map(s.mean[c] + e);
        const double cap = std::min(3.5, dx * 0.4);
        cairo_set_line_width(cr, 1.4);
        cairo_move_to(cr, px, y0);
        cairo_line_to(cr, px, y1);
        cairo_move_to(cr, px - cap, y0);
        cairo_line_to(cr, px + cap, y0);
        cairo_move_to(cr, px - cap, y1);
        cairo_line_to(cr, px + cap, y1);
        cairo_stroke(cr);
      }
      cairo_new_sub_path(cr);
      cairo_arc(cr, px, py, std::min(4.0, std::max(2.0, dx * 0.42)), 0, 2 * kPi);
      cairo_fill_preserve(cr);
      cairo_set_source_rgb(cr, 1, 1, 1);
      cairo_set_line_width(cr, 0.8);
      cairo_stroke(cr);
    }
  }
}

}  // namespace

PlotLayout grouped_points(const fs::path& file, const GroupedPoints& plot) {
  const auto [ylo, yhi] = value_range(plot);
  const Layout l = lay_out(plot, ylo, yhi);
  const std::size_t nc = plot.categories.size();

  Figure fig(file, l.W, l.H, plot.png_scale);
  cairo_t* cr = fig.cr();
  draw_background(cr, l, nc);
  draw_points(cr, plot, l);
  draw_frame(cr, l.area);
  for (std::size_t c = 0; c < nc; ++c) draw_x_tick(cr, l.area, l.area.x + (c + 0.5) * l.slot, l.cats[c], kTickFont, l.rotate);
  draw_axis_titles(cr, l.area, l.W, l.H, l.x_title, l.y_title);
  draw_title(cr, l.W / 2, kPad, l.title, l.subtitle);
  PlotLayout layout{{int(l.W), int(l.H)},
                    l.area,
                    legend_labels(l.legend),
                    draw_legend_flow(cr, l.flow, l.legend, l.W / 2, kPad + l.title_h),
                    false};
  fig.finish();
  return layout;
}

}  // namespace ablate::analysis
