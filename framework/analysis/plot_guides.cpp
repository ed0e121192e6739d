// The canvas of plot_canvas.hpp, second part: axes and ticks (1-2-5 steps, log decades,
// labels that agree along an axis), legends (boxed or flowed into rows), titles and axis titles.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/plot_canvas.hpp"

namespace ablate::analysis::canvas {

// ---- Axes and ticks ------------------------------------------------------------------------
namespace {

double nice_step(double span, double target_count) {
  const double raw = span / std::max(1.0, target_count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// Ticks at multiples of a 1-2-5 step inside [lo, hi].
std::vector<double> linear_ticks(double lo, double hi, double target_count, double* step_out = nullptr) {
  const double step = nice_step(hi - lo, target_count);
  if (step_out) *step_out = step;
  std::vector<double> ticks;
  const double eps = step * 1e-6;
  for (double k = std::ceil((lo - eps) / step); k * step <= hi + eps && ticks.size() < 100; k += 1) {
    double v = k * step;
    if (std::abs(v) < eps) v = 0;
    ticks.push_back(v);
  }
  return ticks;
}

// "0.25", "120", "2.5e-5": decimals from the step, or scientific (for a whole axis at once, so its
// labels agree); negative numbers get a typographic minus sign.
std::string format_number(double v, double step, bool scientific) {
  if (v == 0) return "0";
  char buf[64];
  std::string s;
  if (scientific) {
    int e = int(std::floor(std::log10(std::abs(v))));
    double m = v / std::pow(10.0, e);
    if (std::abs(std::round(m * 100) / 100) >= 10) {
      m /= 10;
      ++e;
    }
    std::snprintf(buf, sizeof buf, "%.2f", m);
    s = buf;
    while (s.back() == '0') s.pop_back();  // "2.50" -> "2.5", "1.00" -> "1"
    if (s.back() == '.') s.pop_back();
    s += 'e';  // (not "e" + ...: GCC 12 warns falsely of an overlapping copy there)
    s += std::to_string(e);
  } else {
    const int decimals = std::clamp(int(std::ceil(-std::log10(step) - 1e-9)), 0, 10);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    s = buf;
    if (s.find_first_not_of("-0.") == std::string::npos) return "0";
  }
  if (s[0] == '-') s = "\u2212" + s.substr(1);
  return s;
}

bool needs_scientific(const std::vector<double>& values, double step) {
  if (step < 1e-4) return true;
  for (double v : values)
    if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-4)) return true;
  return false;
}

}  // namespace

Ticks make_ticks(const Axis& a, double target_count) {
  Ticks t;
  if (a.log) {
    const int e0 = int(std::floor(std::log10(a.lo))), e1 = int(std::ceil(std::log10(a.hi)));
    const int decades = e1 - e0;
    std::vector<double> mults = decades <= 3 ? std::vector<double>{1, 2, 5} : std::vector<double>{1};
    const int every = std::max(1, int(std::ceil(decades / std::max(1.0, target_count))));
    for (int e = e0; e <= e1; ++e) {
      if ((e - e0) % every != 0) continue;
      for (double m : mults) {
        const double v = m * std::pow(10.0, e);
        if (v >= a.lo * (1 - 1e-9) && v <= a.hi * (1 + 1e-9)) t.values.push_back(v);
      }
    }
    if (t.values.size() >= 2) {
      const bool sci = needs_scientific(t.values, t.values.front());
      for (double v : t.values) t.labels.push_back(format_number(v, std::min(v, 1.0), sci));
      return t;
    }
    t.values.clear();  // a narrow range on a log axis: plain 1-2-5 ticks read better
  }
  double step = 1;
  t.values = linear_ticks(a.lo, a.hi, target_count, &step);
  const bool sci = needs_scientific(t.values, step);
  for (double v : t.values) t.labels.push_back(format_number(v, step, sci));
  return t;
}

std::pair<double, double> padded_range(double lo, double hi, bool log, double frac) {
  if (!std::isfinite(hi - lo))
    throw Error("values from " + std::to_string(lo) + " to " + std::to_string(hi) + " are too far apart to plot",
                "check the data for overflowing values");
  if (hi - lo <= 1e-9 * std::max(std::abs(lo), std::abs(hi))) hi = lo;
  if (log) {
    if (hi <= lo) return {lo / 2, hi * 2};
    const double f = std::pow(hi / lo, frac);
    return {lo / f, hi * f};
  }
  if (hi <= lo) {
    const double d = lo == 0 ? 1 : std::abs(lo) * 0.1;
    return {lo - d, hi + d};
  }
  const double d = (hi - lo) * frac;
  return {lo - d, hi + d};
}

void draw_frame(cairo_t* cr, const Rect& r) {
  set_grey(cr, 0.2);
  cairo_set_line_width(cr, 1);
  cairo_set_dash(cr, nullptr, 0, 0);
  cairo_rectangle(cr, snap(r.x), snap(r.y), std::round(r.width), std::round(r.height));
  cairo_stroke(cr);
}

void draw_y_axis(cairo_t* cr, const Rect& area, const Axis& y, const Ticks& ticks, double font, bool grid) {
  cairo_set_dash(cr, nullptr, 0, 0);
  for (std::size_t i = 0; i < ticks.values.size(); ++i) {
    const double py = y.map(ticks.values[i]);
    if (grid) {
      set_grey(cr, 0.9);
      cairo_set_line_width(cr, 1);
      cairo_move_to(cr, area.x, snap(py));
      cairo_line_to(cr, area.x + area.width, snap(py));
      cairo_stroke(cr);
    }
    set_grey(cr, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, area.x - 4, snap(py));
    cairo_line_to(cr, area.x, snap(py));
    cairo_stroke(cr);
    draw_text(cr, area.x - 7, py, ticks.labels[i], font, HAlign::Right, VAlign::Middle);
  }
}

void draw_x_tick(cairo_t* cr, const Rect& area, double px, const std::string& label, double font, bool rotate) {
  set_grey(cr, 0.2);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, snap(px), area.y + area.height);
  cairo_line_to(cr, snap(px), area.y + area.height + 4);
  cairo_stroke(cr);
  if (rotate)
    draw_text(cr, px, area.y + area.height + 7, label, font, HAlign::Right, VAlign::Middle, false, -kPi / 2);
  else
    draw_text(cr, px, area.y + area.height + 7, label, font, HAlign::Center, VAlign::Top);
}

// ---- Legend --------------------------------------------------------------------------------
namespace {

constexpr double kLegendFont = 11;
constexpr double kLegendGap = 18;  // between two legend entries on a row
constexpr double kSwatch = 26;

double legend_row_height(cairo_t* cr) { return line_height(cr, kLegendFont) + 5; }

double legend_entry_width(cairo_t* cr, const LegendEntry& e) { return kSwatch + 6 + text_width(cr, e.label, kLegendFont); }

void draw_swatch(cairo_t* cr, double x, double y, const LegendEntry& e) {
  if (e.band) {
    set_colour(cr, e.colour, 0.2);
    cairo_rectangle(cr, x, y - 5, kSwatch, 10);
    cairo_fill(cr);
  }
  if (e.marker) {
    set_colour(cr, e.colour);
    cairo_set_dash(cr, nullptr, 0, 0);
    cairo_set_line_width(cr, 1.4);
    cairo_move_to(cr, x + kSwatch / 2, y - 6);
    cairo_line_to(cr, x + kSwatch / 2, y + 6);
    cairo_stroke(cr);
    cairo_arc(cr, x + kSwatch / 2, y, 4, 0, 2 * kPi);
    cairo_fill(cr);
    return;
  }
  if (e.reference) {
    set_grey(cr, 0.3);
    const double d[] = {5, 3};
    cairo_set_dash(cr, d, 2, 0);
    cairo_set_line_width(cr, 1.3);
  } else {
    set_colour(cr, e.colour);
    set_series_dash(cr, e.dash_index);
    cairo_set_line_width(cr, 2.2);
  }
  cairo_move_to(cr, x, y);
  cairo_line_to(cr, x + kSwatch, y);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
}

}  // namespace

Rect legend_box_size(cairo_t* cr, const std::vector<LegendEntry>& entries) {
  double w = 0;
  for (const auto& e : entries) w = std::max(w, legend_entry_width(cr, e));
  return {0, 0, w + 20, entries.size() * legend_row_height(cr) + 10};
}

std::vector<Rect> draw_legend_box(cairo_t* cr, double x, double y, const std::vector<LegendEntry>& entries) {
  const Rect size = legend_box_size(cr, entries);
  cairo_set_dash(cr, nullptr, 0, 0);
  cairo_rectangle(cr, snap(x), snap(y), std::round(size.width), std::round(size.height));
  cairo_set_source_rgba(cr, 1, 1, 1, 0.88);
  cairo_fill_preserve(cr);
  set_grey(cr, 0.75);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  const double rh = legend_row_height(cr);
  std::vector<Rect> boxes;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double cy = y + 5 + rh * (i + 0.5);
    draw_swatch(cr, x + 10, cy, entries[i]);
    set_grey(cr, 0.1);
    draw_text(cr, x + 10 + kSwatch + 6, cy, entries[i].label, kLegendFont, HAlign::Left, VAlign::Middle);
    boxes.push_back({x + 10 + kSwatch + 6, cy - rh / 2, text_width(cr, entries[i].label, kLegendFont), rh});
  }
  return boxes;
}

LegendFlow flow_legend(cairo_t* cr, const std::vector<LegendEntry>& entries, double max_width) {
  LegendFlow flow;
  double row_w = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double w = legend_entry_width(cr, entries[i]);
    flow.min_width = std::max(flow.min_width, std::ceil(w + 2 * kPad));
    if (flow.rows.empty() || (row_w > 0 && row_w + kLegendGap + w > max_width)) {
      flow.rows.emplace_back();
      row_w = 0;
    }
    row_w += (row_w > 0 ? kLegendGap : 0) + w;
    flow.rows.back().push_back(i);
  }
  flow.height = double(flow.rows.size()) * legend_row_height(cr);
  return flow;
}

std::vector<Rect> draw_legend_flow(cairo_t* cr, const LegendFlow& flow, const std::vector<LegendEntry>& entries, double centre_x,
                                   double top) {
  std::vector<Rect> boxes(entries.size());
  const double rh = legend_row_height(cr);
  for (std::size_t r = 0; r < flow.rows.size(); ++r) {
    double row_w = 0;
    for (std::size_t i : flow.rows[r]) row_w += (row_w > 0 ? kLegendGap : 0) + legend_entry_width(cr, entries[i]);
    double lx = centre_x - row_w / 2;
    const double cy = top + (r + 0.5) * rh;
    for (std::size_t i : flow.rows[r]) {
      draw_swatch(cr, lx, cy, entries[i]);
      set_grey(cr, 0.1);
      draw_text(cr, lx + kSwatch + 6, cy, entries[i].label, kLegendFont, HAlign::Left, VAlign::Middle);
      boxes[i] = {lx + kSwatch + 6, cy - rh / 2, text_width(cr, entries[i].label, kLegendFont), rh};
      lx += legend_entry_width(cr, entries[i]) + kLegendGap;
    }
  }
  return boxes;
}

double title_block_height(cairo_t* cr, const std::string& title, const std::string& subtitle, double gap) {
  double h = title.empty() ? 0 : line_height(cr, kTitleFont) + gap;
  if (!subtitle.empty()) h += line_height(cr, kSubtitleFont) + (title.empty() ? gap : 4);
  return h;
}
double title_block_width(cairo_t* cr, const std::string& title, const std::string& subtitle) {
  return std::ceil(std::max(text_width(cr, title, kTitleFont, true), text_width(cr, subtitle, kSubtitleFont)) + 2 * kPad);
}
void draw_title(cairo_t* cr, double centre_x, double top, const std::string& title, const std::string& subtitle) {
  set_grey(cr, 0.05);
  if (!title.empty()) {
    draw_text(cr, centre_x, top, title, kTitleFont, HAlign::Center, VAlign::Top, true);
    top += line_height(cr, kTitleFont) + 4;
  }
  set_grey(cr, 0.3);
  draw_text(cr, centre_x, top, subtitle, kSubtitleFont, HAlign::Center, VAlign::Top);
}

std::vector<std::string> legend_labels(const std::vector<LegendEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.label);
  return out;
}

void draw_axis_titles(cairo_t* cr, const Rect& area, double W, double H, const std::string& x_title, const std::string& y_title) {
  set_grey(cr, 0.1);
  if (!x_title.empty())
    draw_text(cr, area.x + area.width / 2, H - kPad, fit_text(cr, x_title, kAxisFont, W - 2 * kPad), kAxisFont, HAlign::Center,
              VAlign::Bottom);
  if (!y_title.empty())
    draw_text(cr, kPad, area.y + area.height / 2, fit_text(cr, y_title, kAxisFont, area.height), kAxisFont, HAlign::Center,
              VAlign::Top, false, -kPi / 2);
}

}  // namespace ablate::analysis::canvas
