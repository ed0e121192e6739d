// heatmap_grid (plot.hpp): panels of matrices on one colour scale (attention maps, head scores),
// with tick labels where they are needed, hatched masked cells and a colorbar. Validated, laid out
// (cells, gutters, columns as wide as their panel titles), then drawn on plot_canvas.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/plot_canvas.hpp"

namespace ablate::analysis {
namespace {

namespace fs = std::filesystem;
using namespace canvas;

struct PanelView {
  const HeatmapPanel* panel;
  const std::vector<std::string>* x_labels;  // nullptr = none
  const std::vector<std::string>* y_labels;
  const std::vector<std::uint8_t>* mask;
  bool own_x = false, own_y = false;
};

std::vector<PanelView> validate_grid(const HeatmapGrid& g, std::size_t& grid_rows, std::size_t& grid_cols) {
  const std::size_t n = g.panels.size();
  if (n == 0) throw Error("heatmap grid '" + g.title + "' has no panels", "pass at least one panel");
  grid_rows = g.grid_rows;
  grid_cols = g.grid_cols;
  if (grid_rows == 0 && grid_cols == 0) grid_cols = n;
  if (grid_cols == 0) grid_cols = (n + grid_rows - 1) / grid_rows;
  if (grid_rows == 0) grid_rows = (n + grid_cols - 1) / grid_cols;
  if (n > grid_rows * grid_cols)
    throw Error("heatmap grid '" + g.title + "' has " + std::to_string(n) + " panels for a " + std::to_string(grid_rows) + " x " +
                    std::to_string(grid_cols) + " grid",
                "give grid_rows * grid_cols >= the number of panels");
  grid_rows = (n + grid_cols - 1) / grid_cols;  // no empty trailing rows
  if (!(finite(g.vmin) && finite(g.vmax) && g.vmin < g.vmax))
    throw Error("heatmap grid '" + g.title + "' has an invalid value range [" + std::to_string(g.vmin) + ", " +
                    std::to_string(g.vmax) + "]",
                "give finite vmin < vmax");
  if (g.cell < 0 || !finite(g.cell)) throw Error("heatmap grid '" + g.title + "': cell size must be >= 0", "use 0 for automatic");
  std::vector<PanelView> views;
  bool any_value = false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = g.panels[i];
    const std::string name = "heatmap panel " + std::to_string(i) + (p.title.empty() ? "" : " ('" + p.title + "')");
    if (p.rows == 0 || p.cols == 0)
      throw Error(name + " is empty (" + std::to_string(p.rows) + " x " + std::to_string(p.cols) + ")", "give rows, cols > 0");
    if (p.rows > 10000 || p.cols > 10000) throw Error(name + " is too large to draw", "plot at most 10000 rows and columns");
    const std::size_t cells = p.rows * p.cols;
    if (p.values.size() != cells)
      throw Error(name + " has " + std::to_string(p.values.size()) + " values for " + std::to_string(p.rows) + " x " +
                      std::to_string(p.cols) + " cells",
                  "values are [rows, cols] row-major");
    PanelView v{&p, nullptr, nullptr, nullptr};
    auto pick_labels = [&](const std::vector<std::string>& own, const std::vector<std::string>& shared, std::size_t count,
                           const char* axis, bool& is_own) -> const std::vector<std::string>* {
      const auto* labels = !own.empty() ? &own : !shared.empty() ? &shared : nullptr;
      is_own = !own.empty();
      if (labels && labels->size() != count)
        throw Error(name + " has " + std::to_string(count) + (axis[0] == 'x' ? " columns" : " rows") + " but " +
                        std::to_string(labels->size()) + " " + axis + " labels" + (is_own ? "" : " (the grid's)"),
                    std::string("give one ") + axis + " label per " + (axis[0] == 'x' ? "column" : "row") + ", or none");
      return labels;
    };
    v.x_labels = pick_labels(p.x_labels, g.x_labels, p.cols, "x", v.own_x);
    v.y_labels = pick_labels(p.y_labels, g.y_labels, p.rows, "y", v.own_y);
    v.mask = !p.mask.empty() ? &p.mask : !g.mask.empty() ? &g.mask : nullptr;
    if (v.mask && v.mask->size() != cells)
      throw Error(name + " has a mask of " + std::to_string(v.mask->size()) + " values for " + std::to_string(cells) + " cells",
                  "the mask is [rows, cols] like the values, or empty");
    for (double x : p.values) any_value = any_value || finite(x);
    views.push_back(v);
  }
  if (!any_value) throw Error("heatmap grid '" + g.title + "' has no finite values", "check the attention weights for NaN");
  return views;
}

// Masked (padding) and NaN cells of one matrix: grey, hatched with diagonal lines on one lattice
// over the whole matrix, so neighbouring masked cells form one continuous hatched area.
void draw_masked_cells(cairo_t* cr, const Rect& r, double cell, const std::vector<std::pair<std::size_t, std::size_t>>& cells) {
  if (cells.empty()) return;
  cairo_save(cr);
  cairo_new_path(cr);
  for (auto [a, b] : cells) cairo_rectangle(cr, r.x + b * cell, r.y + a * cell, cell, cell);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  set_grey(cr, 0.86);
  cairo_fill_preserve(cr);
  cairo_clip(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  if (cell >= 4) {
    set_grey(cr, 0.62);
    cairo_set_line_width(cr, 0.9);
    const double step = 5;
    for (double d = std::floor((r.x + r.y) / step) * step; d <= r.x + r.y + r.width + r.height + step; d += step) {
      cairo_move_to(cr, d - (r.y + r.height), r.y + r.height);  // the line x + y = d across the matrix
      cairo_line_to(cr, d - r.y, r.y);
    }
    cairo_stroke(cr);
  }
  cairo_restore(cr);
}

constexpr double kPanelFont = 11, kColorbarFont = 10;

// The grid as laid out: cells, tick labels (which panels show them), panel and colorbar places.
struct GridLayout {
  std::size_t rows = 0, cols = 0;  // of the grid
  double cell = 0, box_w = 0, box_h = 0;
  double tick_font = 0;
  std::size_t stride = 1;                        // every stride-th tick label when cells are small
  std::vector<std::vector<std::string>> xl, yl;  // [panel]: cleaned tick labels
  std::vector<bool> shows_x, shows_y;            // [panel]
  bool rotate_x = false;
  double x_gutter = 0, y_gutter = 0;
  std::vector<std::string> panel_titles;
  std::vector<double> col_w, col_x, row_y;
  double content_right = 0, content_bottom = 0;
  std::string title, subtitle, x_title, y_title, cb_title;
  Axis cb;  // the colorbar's value axis
  Ticks cbt;
  double width = 0, height = 0, shift = 0;  // shift: the content centred under a wider title
};

// The cell size, tick labels and gutters, and which panels show tick labels: with shared labels
// only the left column / bottom-most panel of each column; panels with their own labels always.
void lay_out_cells(cairo_t* m, const HeatmapGrid& g, const std::vector<PanelView>& views, GridLayout& l) {
  const std::size_t n = views.size(), gc = l.cols;
  std::size_t max_r = 0, max_c = 0;
  for (const auto& v : views) {
    max_r = std::max(max_r, v.panel->rows);
    max_c = std::max(max_c, v.panel->cols);
  }
  l.cell = g.cell;
  if (l.cell <= 0) {
    const double side = n == 1 ? 380 : gc <= 2 ? 280 : 210;
    l.cell = std::clamp(std::floor(side / double(std::max(max_r, max_c))), 3.0, 30.0);
  }
  l.box_w = max_c * l.cell;
  l.box_h = max_r * l.cell;
  // Tick labels: font from the cell size; every stride-th label when cells are too small.
  l.tick_font = std::clamp(l.cell * 0.72, 7.0, 11.0);
  const double tick_h = line_height(m, l.tick_font);
  l.stride = std::size_t(std::max(1.0, std::ceil((tick_h * 0.9) / l.cell)));
  auto cleaned = [&](const std::vector<std::string>* labels) {
    std::vector<std::string> out;
    if (labels)
      for (const auto& s : *labels) out.push_back(clean_text(s, g.max_label_chars));
    return out;
  };
  l.xl.resize(n);
  l.yl.resize(n);
  bool any_x = false, any_y = false, own_x = false, own_y = false;
  double x_label_w = 0, y_label_w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    l.xl[i] = cleaned(views[i].x_labels);
    l.yl[i] = cleaned(views[i].y_labels);
    any_x = any_x || !l.xl[i].empty();
    any_y = any_y || !l.yl[i].empty();
    own_x = own_x || views[i].own_x;
    own_y = own_y || views[i].own_y;
    x_label_w = std::max(x_label_w, max_text_width(m, l.xl[i], l.tick_font));
    y_label_w = std::max(y_label_w, max_text_width(m, l.yl[i], l.tick_font));
  }
  l.rotate_x = x_label_w > l.cell * l.stride * 0.92;
  l.x_gutter = any_x ? (l.rotate_x ? x_label_w : tick_h) + 8 : 0;
  l.y_gutter = any_y ? y_label_w + 8 : 0;
  std::vector<std::size_t> bottom_of_col(gc, 0);
  for (std::size_t i = 0; i < n; ++i) bottom_of_col[i % gc] = i / gc;
  for (std::size_t i = 0; i < n; ++i) {
    l.shows_x.push_back(!l.xl[i].empty() && (views[i].own_x || own_x || bottom_of_col[i % gc] == i / gc));
    l.shows_y.push_back(!l.yl[i].empty() && (views[i].own_y || own_y || i % gc == 0));
  }
}

// The columns and rows of panels: a column is as wide as its widest panel title (never shortened),
// with a y gutter where a panel in it shows y labels; a row has an x gutter where one shows x labels.
void place_panels(cairo_t* m, const std::vector<PanelView>& views, GridLayout& l) {
  const std::size_t n = views.size(), gc = l.cols, gr = l.rows;
  l.col_w.assign(gc, l.box_w);
  for (std::size_t i = 0; i < n; ++i) {
    l.panel_titles.push_back(clean_text(views[i].panel->title));
    l.col_w[i % gc] = std::max(l.col_w[i % gc], std::ceil(text_width(m, l.panel_titles.back(), kPanelFont)));
  }
  const bool any_panel_title =
      std::any_of(l.panel_titles.begin(), l.panel_titles.end(), [](const std::string& t) { return !t.empty(); });
  const double panel_title_h = any_panel_title ? line_height(m, kPanelFont) + 5 : 0;
  const double title_h = title_block_height(m, l.title, l.subtitle, 12);
  const double axis_title_h = line_height(m, kAxisFont);
  const double col_gap = 16, row_gap = 12;
  l.col_x.resize(gc);
  l.row_y.resize(gr);
  double x = kPad + (l.y_title.empty() ? 0 : axis_title_h + 8);
  for (std::size_t c = 0; c < gc; ++c) {
    bool gutter = false;
    for (std::size_t r = 0; r < gr; ++r)
      if (r * gc + c < n && l.shows_y[r * gc + c]) gutter = true;
    x += gutter ? l.y_gutter : 0;
    l.col_x[c] = std::round(x);
    x += l.col_w[c] + (c + 1 < gc ? col_gap : 0);
  }
  l.content_right = x;
  double y = kPad + title_h;
  for (std::size_t r = 0; r < gr; ++r) {
    y += panel_title_h;
    l.row_y[r] = std::round(y);
    bool gutter = false;
    for (std::size_t c = 0; c < gc; ++c)
      if (r * gc + c < n && l.shows_x[r * gc + c]) gutter = true;
    y += l.box_h + (gutter ? l.x_gutter : 0) + (r + 1 < gr ? row_gap : 0);
  }
  l.content_bottom = y;
}

// The colorbar on the right of the panels, spanning them (at most 420 px), and the figure's size:
// a title wider than the content widens the figure, and the content is centred under it.
Rect place_colorbar(cairo_t* m, const HeatmapGrid& g, GridLayout& l) {
  const double axis_title_h = line_height(m, kAxisFont);
  l.cb.lo = g.vmin;
  l.cb.hi = g.vmax;
  const double panels_h = l.row_y[l.rows - 1] + l.box_h - l.row_y[0];
  const double cb_h = std::clamp(panels_h, std::min(120.0, l.content_bottom - l.row_y[0]), 420.0);
  l.cb.p0 = l.row_y[0] + cb_h;
  l.cb.p1 = l.row_y[0];
  l.cbt = make_ticks(l.cb, std::max(2.0, cb_h / 45));
  const double cb_x = std::round(l.content_right + 22), cb_w = 14;
  l.width = cb_x + cb_w + 7 + max_text_width(m, l.cbt.labels, kColorbarFont) + (l.cb_title.empty() ? 0 : 8 + axis_title_h) + kPad;
  l.height = l.content_bottom + (l.x_title.empty() ? 0 : axis_title_h + 10) + kPad;
  const double title_w = title_block_width(m, l.title, l.subtitle);
  if (title_w > l.width) {
    l.shift = std::round((title_w - l.width) / 2);
    l.width = std::ceil(title_w);
  }
  l.width = std::ceil(l.width);
  l.height = std::ceil(l.height);
  return {cb_x + l.shift, l.cb.p1, cb_w, cb_h};
}

// One panel's cells: one pixel each in an image scaled up without interpolation, so neighbouring
// cells meet without seams and an SVG embeds one small PNG instead of a path per cell. Masked cells
// stay transparent and are hatched after.
void draw_cells(cairo_t* cr, const HeatmapGrid& g, const PanelView& v, const Rect& r, double cell) {
  const HeatmapPanel& p = *v.panel;
  const double span = g.vmax - g.vmin;
  SurfacePtr cells(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(p.cols), static_cast<int>(p.rows)));
  cairo_surface_flush(cells.get());
  unsigned char* pixels = cairo_image_surface_get_data(cells.get());
  const int row_bytes = cairo_image_surface_get_stride(cells.get());
  std::vector<std::pair<std::size_t, std::size_t>> masked;
  for (std::size_t a = 0; a < p.rows; ++a)
    for (std::size_t b = 0; b < p.cols; ++b) {
      auto* px = reinterpret_cast<std::uint32_t*>(pixels + a * static_cast<std::size_t>(row_bytes)) + b;
      const double value = p.values[a * p.cols + b];
      if ((v.mask && (*v.mask)[a * p.cols + b]) || !finite(value)) {
        masked.emplace_back(a, b);
        *px = 0;
        continue;
      }
      const Rgb c = colormap((value - g.vmin) / span);
      const auto byte = [](double x) { return static_cast<std::uint32_t>(std::lround(std::clamp(x, 0.0, 1.0) * 255.0)); };
      *px = 0xFF000000u | (byte(c.r) << 16) | (byte(c.g) << 8) | byte(c.b);
    }
  cairo_surface_mark_dirty(cells.get());
  cairo_save(cr);
  cairo_translate(cr, r.x, r.y);
  cairo_scale(cr, cell, cell);
  cairo_set_source_surface(cr, cells.get(), 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, static_cast<double>(p.cols), static_cast<double>(p.rows));
  cairo_fill(cr);
  cairo_restore(cr);
  draw_masked_cells(cr, r, cell, masked);
  set_grey(cr, 0.35);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, r.x - 0.5, r.y - 0.5, r.width + 1, r.height + 1);
  cairo_stroke(cr);
}

// Panel i's title and tick labels.
void draw_panel_labels(cairo_t* cr, const GridLayout& l, std::size_t i, const HeatmapPanel& p, const Rect& r) {
  set_grey(cr, 0.1);
  draw_text(cr, r.x + std::max(r.width, text_width(cr, l.panel_titles[i], kPanelFont)) / 2, r.y - 5, l.panel_titles[i],
            kPanelFont, HAlign::Center, VAlign::Bottom);
  set_grey(cr, 0.15);
  if (l.shows_y[i])
    for (std::size_t a = 0; a < p.rows; a += l.stride)
      draw_text(cr, r.x - 4, r.y + (a + 0.5) * l.cell, l.yl[i][a], l.tick_font, HAlign::Right, VAlign::Middle);
  if (l.shows_x[i])
    for (std::size_t b = 0; b < p.cols; b += l.stride) {
      const double cx = r.x + (b + 0.5) * l.cell;
      if (l.rotate_x)
        draw_text(cr, cx, r.y + r.height + 4, l.xl[i][b], l.tick_font, HAlign::Right, VAlign::Middle, false, -kPi / 2);
      else
        draw_text(cr, cx, r.y + r.height + 4, l.xl[i][b], l.tick_font, HAlign::Center, VAlign::Top);
    }
}

// The colorbar: a linear gradient through the colormap's control points (exact in PNG and SVG),
// its ticks and its title.
void draw_colorbar(cairo_t* cr, const GridLayout& l, const Rect& cbr) {
  PatternPtr gradient(cairo_pattern_create_linear(0, cbr.y + cbr.height, 0, cbr.y));
  for (std::size_t k = 0; k < kViridis.size(); ++k) {
    const Rgb c = hex(kViridis[k]);
    cairo_pattern_add_color_stop_rgb(gradient.get(), double(k) / (kViridis.size() - 1), c.r, c.g, c.b);
  }
  cairo_rectangle(cr, cbr.x, cbr.y, cbr.width, cbr.height);
  cairo_set_source(cr, gradient.get());
  cairo_fill(cr);
  set_grey(cr, 0.35);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, cbr.x - 0.5, cbr.y - 0.5, cbr.width + 1, cbr.height + 1);
  cairo_stroke(cr);
  double cb_label_w = 0;
  for (std::size_t k = 0; k < l.cbt.values.size(); ++k) {
    const double py = l.cb.map(l.cbt.values[k]);
    set_grey(cr, 0.2);
    cairo_move_to(cr, cbr.x + cbr.width, py);
    cairo_line_to(cr, cbr.x + cbr.width + 4, py);
    cairo_stroke(cr);
    draw_text(cr, cbr.x + cbr.width + 7, py, l.cbt.labels[k], kColorbarFont, HAlign::Left, VAlign::Middle);
    cb_label_w = std::max(cb_label_w, text_width(cr, l.cbt.labels[k], kColorbarFont));
  }
  set_grey(cr, 0.1);
  if (!l.cb_title.empty())
    draw_text(cr, cbr.x + cbr.width + 7 + cb_label_w + 8, cbr.y + cbr.height / 2, fit_text(cr, l.cb_title, kAxisFont, cbr.height),
              kAxisFont, HAlign::Center, VAlign::Top, false, -kPi / 2);
}

}  // namespace

HeatmapLayout heatmap_grid(const fs::path& file, const HeatmapGrid& g) {
  GridLayout l;
  const std::vector<PanelView> views = validate_grid(g, l.rows, l.cols);
  figure_format(file);
  const std::size_t n = views.size();
  l.title = clean_text(g.title);
  l.subtitle = clean_text(g.subtitle);
  l.x_title = clean_text(g.x_axis_label);
  l.y_title = clean_text(g.y_axis_label);
  l.cb_title = clean_text(g.colorbar_label);
  HeatmapLayout layout;
  {
    Scratch scratch;
    lay_out_cells(scratch.cr(), g, views, l);
    place_panels(scratch.cr(), views, l);
    layout.colorbar = place_colorbar(scratch.cr(), g, l);
  }
  layout.size = {int(l.width), int(l.height)};
  layout.cell = l.cell;
  for (std::size_t i = 0; i < n; ++i)
    layout.matrices.push_back(
        {l.col_x[i % l.cols] + l.shift, l.row_y[i / l.cols], views[i].panel->cols * l.cell, views[i].panel->rows * l.cell});

  Figure fig(file, l.width, l.height, g.png_scale);
  cairo_t* cr = fig.cr();
  for (std::size_t i = 0; i < n; ++i) {
    draw_cells(cr, g, views[i], layout.matrices[i], l.cell);
    draw_panel_labels(cr, l, i, *views[i].panel, layout.matrices[i]);
  }
  draw_colorbar(cr, l, layout.colorbar);

  // Axis titles, figure title.
  const double panels_left = l.col_x[0] + l.shift, panels_right = l.content_right + l.shift;
  if (!l.x_title.empty())
    draw_text(cr, (panels_left + panels_right) / 2, l.height - kPad, fit_text(cr, l.x_title, kAxisFont, l.width - 2 * kPad),
              kAxisFont, HAlign::Center, VAlign::Bottom);
  if (!l.y_title.empty())
    draw_text(cr, kPad + l.shift, (l.row_y[0] + l.content_bottom) / 2,
              fit_text(cr, l.y_title, kAxisFont, l.content_bottom - l.row_y[0]), kAxisFont, HAlign::Center, VAlign::Top, false,
              -kPi / 2);
  draw_title(cr, l.width / 2, kPad, l.title, l.subtitle);
  fig.finish();
  return layout;
}

}  // namespace ablate::analysis
