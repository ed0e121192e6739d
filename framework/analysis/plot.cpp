// Figures rendered with cairo (see plot.hpp): a small layout engine per figure kind — measure the
// text, place the plot areas, then draw — over one output abstraction that writes PNG or SVG.
// All coordinates are in px (user space); a PNG surface is scaled by png_scale for crisp text.
#include "analysis/plot.hpp"

#include <cairo-svg.h>
#include <cairo.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "core/atomic_file.hpp"

namespace ablate::analysis {
namespace {

namespace fs = std::filesystem;
constexpr double kPi = 3.14159265358979323846;

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
struct FontOptionsDeleter {
  void operator()(cairo_font_options_t* o) const { cairo_font_options_destroy(o); }
};
using SurfacePtr = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using ContextPtr = std::unique_ptr<cairo_t, ContextDeleter>;
using PatternPtr = std::unique_ptr<cairo_pattern_t, PatternDeleter>;
using FontOptionsPtr = std::unique_ptr<cairo_font_options_t, FontOptionsDeleter>;

// Text is measured on a scratch context before the real surface exists, so metrics must not
// depend on the surface: no metric hinting anywhere.
void configure_context(cairo_t* cr) {
  FontOptionsPtr options(cairo_font_options_create());
  cairo_font_options_set_hint_metrics(options.get(), CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_antialias(options.get(), CAIRO_ANTIALIAS_GRAY);
  cairo_set_font_options(cr, options.get());
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
}

std::string status_text(cairo_status_t status) { return cairo_status_to_string(status); }

cairo_status_t write_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// The only images in our SVGs are heatmap cells (one pixel per cell): a viewer must scale them
// without interpolation, which cairo's SVG output does not say.
std::string pixelated_images(std::string svg) {
  const std::string from = "<image ", to = "<image style=\"image-rendering:pixelated\" ";
  for (auto at = svg.find(from); at != std::string::npos; at = svg.find(from, at + to.size())) svg.replace(at, from.size(), to);
  return svg;
}

// One figure being drawn: its directory checked up front (a bad path fails before any drawing),
// the surface, the context. finish() checks every status and writes the file all or nothing
// (write_file_atomically: a killed or failed write leaves the previous figure, or none, never a
// truncated one under the final name).
class Figure {
 public:
  Figure(const fs::path& file, double width, double height, double png_scale) : file_(file), format_(figure_format(file)) {
    if (!(width >= 1 && height >= 1) || !std::isfinite(width) || !std::isfinite(height))
      throw Error(
          "figure " + file.string() + " would have an invalid size " + std::to_string(width) + " x " + std::to_string(height),
          "give a positive width and height");
    if (format_ == FigureFormat::Png && !(png_scale > 0 && png_scale <= 8))
      throw Error("figure " + file.string() + ": png_scale " + std::to_string(png_scale) + " is out of range",
                  "use a scale in (0, 8]");
    const double scale = format_ == FigureFormat::Png ? png_scale : 1.0;
    const double device_w = std::ceil(width * scale), device_h = std::ceil(height * scale);
    if (device_w > 32000 || device_h > 32000)
      throw Error("figure " + file.string() + " would be too large (" + std::to_string(int(device_w)) + " x " +
                      std::to_string(int(device_h)) + " px)",
                  "plot fewer panels or categories per figure, or lower png_scale");
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (::access(dir.c_str(), W_OK) != 0)
      throw Error("cannot write figure " + file.string() + ": " + std::strerror(errno),
                  "check that its directory exists and is writable");
    create_surface(width, height, scale, device_w, device_h);
  }
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;
  ~Figure() {  // the context before the surface
    cr_.reset();
    surface_.reset();
  }

  cairo_t* cr() const { return cr_.get(); }

  void finish() {
    check(cairo_status(cr_.get()), "drawing");
    cr_.reset();
    std::string bytes;
    if (format_ == FigureFormat::Png) {
      check(cairo_surface_write_to_png_stream(surface_.get(), write_to_string, &bytes), "encoding the PNG");
    } else {
      cairo_surface_finish(surface_.get());
      check(cairo_surface_status(surface_.get()), "writing the SVG");
      bytes = pixelated_images(std::move(svg_));
    }
    surface_.reset();
    write_file_atomically(file_, bytes);
  }

 private:
  void create_surface(double width, double height, double scale, double device_w, double device_h) {
    if (format_ == FigureFormat::Png) {
      surface_.reset(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(device_w), int(device_h)));
    } else {
      surface_.reset(cairo_svg_surface_create_for_stream(write_to_string, &svg_, width, height));
      cairo_svg_surface_set_document_unit(surface_.get(), CAIRO_SVG_UNIT_PX);
    }
    check(cairo_surface_status(surface_.get()), "creating the surface");
    cr_.reset(cairo_create(surface_.get()));
    check(cairo_status(cr_.get()), "creating the drawing context");
    cairo_scale(cr_.get(), scale, scale);
    configure_context(cr_.get());
    cairo_set_source_rgb(cr_.get(), 1, 1, 1);
    cairo_paint(cr_.get());
  }

  void check(cairo_status_t status, const char* what) const {
    if (status != CAIRO_STATUS_SUCCESS)
      throw Error("cannot render figure " + file_.string() + ": cairo failed " + what + ": " + status_text(status),
                  status == CAIRO_STATUS_WRITE_ERROR ? "check the disk space and permissions" : "");
  }

  fs::path file_;
  FigureFormat format_;
  std::string svg_;  // an SVG is assembled here, then written at finish()
  SurfacePtr surface_;
  ContextPtr cr_;
};

// A context for measuring text before the figure's size is known.
class Scratch {
 public:
  Scratch() : surface_(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1)), cr_(cairo_create(surface_.get())) {
    configure_context(cr_.get());
  }
  cairo_t* cr() const { return cr_.get(); }

 private:
  SurfacePtr surface_;
  ContextPtr cr_;
};

// ---- Text --------------------------------------------------------------------------------
// cairo's toy text API puts the context in an error state on invalid UTF-8: every string is
// cleaned first (invalid bytes -> '?', control characters -> ' ') and shortened to max_chars.
std::string clean_text(const std::string& s, std::size_t max_chars = 0) {
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (valid && len > 1) {  // reject overlong forms, surrogates and code points past U+10FFFF
      std::uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      valid = !(cp < (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u)) && !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
    }
    if (max_chars > 0 && chars + 1 > max_chars && i < s.size()) {
      // Keep room for the ellipsis: drop the last kept character.
      std::size_t cut = out.size();
      while (cut > 0 && (static_cast<unsigned char>(out[cut - 1]) >> 6) == 0x2) --cut;
      if (cut > 0) out.resize(cut - 1);
      out += "\u2026";
      return out;
    }
    if (!valid) {
      out += '?';
      i += 1;
    } else {
      if (len == 1 && (c < 0x20 || c == 0x7F))
        out += ' ';
      else
        out.append(s, i, len);
      i += len;
    }
    ++chars;
  }
  return out;
}

enum class HAlign { Left, Center, Right };
enum class VAlign { Top, Middle, Baseline, Bottom };

void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

// The advance width of already-cleaned text.
double text_width(cairo_t* cr, const std::string& text, double size, bool bold = false) {
  if (text.empty()) return 0;
  set_font(cr, size, bold);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  return ext.x_advance;
}

double max_text_width(cairo_t* cr, const std::vector<std::string>& texts, double size, bool bold = false) {
  double w = 0;
  for (const auto& t : texts) w = std::max(w, text_width(cr, t, size, bold));
  return w;
}

// The height a line of text takes: the font's ascent + descent.
double line_height(cairo_t* cr, double size) {
  set_font(cr, size, false);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  return fe.ascent + fe.descent;
}

// Shortens cleaned text with '…' until it fits max_width.
std::string fit_text(cairo_t* cr, std::string text, double size, double max_width, bool bold = false) {
  if (max_width <= 0) return {};
  if (text_width(cr, text, size, bold) <= max_width) return text;
  std::vector<std::size_t> starts;  // code point starts
  for (std::size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) >> 6) != 0x2) starts.push_back(i);
  for (std::size_t n = starts.size(); n-- > 0;) {
    std::string shorter = text.substr(0, starts[n]) + "\u2026";
    if (text_width(cr, shorter, size, bold) <= max_width || n == 0) return n == 0 ? std::string{} : shorter;
  }
  return {};
}

// Draws cleaned text anchored at (x, y); `angle` turns it about the anchor (-pi/2: reads upwards).
void draw_text(cairo_t* cr, double x, double y, const std::string& text, double size, HAlign h, VAlign v, bool bold = false,
               double angle = 0) {
  if (text.empty()) return;
  set_font(cr, size, bold);
  cairo_text_extents_t te;
  cairo_text_extents(cr, text.c_str(), &te);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double dx = h == HAlign::Left ? 0 : h == HAlign::Center ? -te.x_advance / 2 : -te.x_advance;
  double dy = v == VAlign::Top      ? fe.ascent
              : v == VAlign::Middle ? (fe.ascent - fe.descent) / 2
              : v == VAlign::Bottom ? -fe.descent
                                    : 0;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (angle != 0) cairo_rotate(cr, angle);
  cairo_move_to(cr, dx, dy);
  cairo_show_text(cr, text.c_str());
  cairo_restore(cr);
}

// ---- Colours -------------------------------------------------------------------------------
constexpr std::array<std::uint32_t, 8> kOkabeIto = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7,
                                                    0xE69F00, 0x56B4E9, 0x000000, 0xF0E442};
// viridis at t = 0, 1/8, ..., 1 (the published 9-step viridis).
constexpr std::array<std::uint32_t, 9> kViridis = {0x440154, 0x472D7B, 0x3B528B, 0x2C728E, 0x21908C,
                                                   0x27AD81, 0x5DC863, 0xAADC32, 0xFDE725};

Rgb hex(std::uint32_t v) { return {((v >> 16) & 0xFF) / 255.0, ((v >> 8) & 0xFF) / 255.0, (v & 0xFF) / 255.0}; }
void set_colour(cairo_t* cr, const Rgb& c, double alpha = 1) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }
void set_grey(cairo_t* cr, double level, double alpha = 1) { cairo_set_source_rgba(cr, level, level, level, alpha); }

// Series past the palette's length repeat its colours with a dash pattern.
void set_series_dash(cairo_t* cr, std::size_t i) {
  static const std::array<std::vector<double>, 4> kDashes = {std::vector<double>{}, {7, 3.5}, {1.5, 2.5}, {7, 2.5, 1.5, 2.5}};
  const auto& d = kDashes[(i / kOkabeIto.size()) % kDashes.size()];
  cairo_set_dash(cr, d.data(), int(d.size()), 0);
}

// ---- Axes and ticks ------------------------------------------------------------------------
bool finite(double v) { return std::isfinite(v); }

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
    s += "e" + std::to_string(e);
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

// [lo, hi] padded by `frac` of the span (multiplicatively on a log axis); a zero span (or one
// below double precision's resolution at that magnitude) is widened.
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

double snap(double v) { return std::round(v) + 0.5; }  // a 1px line centred on a pixel row

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

// ---- Legend --------------------------------------------------------------------------------
struct LegendEntry {
  std::string label;  // cleaned
  Rgb colour;
  std::size_t dash_index = 0;  // series index for set_series_dash
  bool band = false;
  bool reference = false;  // a dashed grey line
  bool marker = false;     // a point marker instead of a line
};

constexpr double kLegendFont = 11;
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

// A boxed legend, one entry per row, top-left corner at (x, y).
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

constexpr double kPad = 16;
constexpr double kTitleFont = 15, kSubtitleFont = 12, kAxisFont = 13, kTickFont = 11;
constexpr double kLegendGap = 18;  // between two legend entries on a row

// A legend flowed into centred rows under (or above) a plot: entries in order, a new row when the
// next would pass max_width. Labels are never shortened; an entry wider than max_width gets a row
// of its own, and min_width says how wide the figure must be for it.
struct LegendFlow {
  std::vector<std::vector<std::size_t>> rows;
  double height = 0;     // rows × row height
  double min_width = 0;  // the widest entry plus the figure's side padding
};

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

// Draws a flowed legend with its rows centred on centre_x, the first row's top at `top`; returns
// where each entry's label lies, in entry order.
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

// The figure title (bold) and its subtitle (a caption line under it), neither ever shortened:
// title_block_width says how wide the figure must be for them.
double title_block_height(cairo_t* cr, const std::string& title, const std::string& subtitle, double gap) {
  double h = title.empty() ? 0 : line_height(cr, kTitleFont) + gap;
  if (!subtitle.empty()) h += line_height(cr, kSubtitleFont) + (title.empty() ? gap : 4);
  return h;
}
double title_block_width(cairo_t* cr, const std::string& title, const std::string& subtitle) {
  return std::ceil(std::max(text_width(cr, title, kTitleFont, true), text_width(cr, subtitle, kSubtitleFont)) + 2 * kPad);
}
void draw_title(cairo_t* cr, double centre_x, double top, const std::string& title, const std::string& subtitle = {}) {
  set_grey(cr, 0.05);
  if (!title.empty()) {
    draw_text(cr, centre_x, top, title, kTitleFont, HAlign::Center, VAlign::Top, true);
    top += line_height(cr, kTitleFont) + 4;
  }
  set_grey(cr, 0.3);
  draw_text(cr, centre_x, top, subtitle, kSubtitleFont, HAlign::Center, VAlign::Top);
}

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

std::vector<std::string> legend_labels(const std::vector<LegendEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.label);
  return out;
}

// ---- Line plot helpers ---------------------------------------------------------------------
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

}  // namespace

// ---- Public helpers ------------------------------------------------------------------------
Rgb palette_colour(std::size_t i) { return hex(kOkabeIto[i % kOkabeIto.size()]); }

Rgb colormap(double t) {
  if (std::isnan(t)) return {0.85, 0.85, 0.85};
  t = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 1);
  const std::size_t k = std::min<std::size_t>(std::size_t(t), kViridis.size() - 2);
  const double f = t - double(k);
  const Rgb a = hex(kViridis[k]), b = hex(kViridis[k + 1]);
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

FigureFormat figure_format(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".png") return FigureFormat::Png;
  if (ext == ".svg") return FigureFormat::Svg;
  throw Error("cannot write figure " + file.string() + ": unknown format '" + file.extension().string() + "'",
              "use one of the extensions: .png, .svg");
}

// ---- Line plot -----------------------------------------------------------------------------
PlotLayout line_plot(const fs::path& file, const LinePlot& plot) {
  validate_series(plot);
  figure_format(file);
  const bool log = plot.y_scale == YScale::Log;
  auto y_ok = [&](double v) { return finite(v) && (!log || v > 0); };

  // Data ranges over every drawable value.
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
    throw Error("line plot '" + plot.title + "' has no finite" + std::string(log ? ", positive" : "") + " values to draw",
                log ? "a log axis needs values > 0; use a linear scale" : "check the series for NaN values");
  if (plot.reference && y_ok(*plot.reference)) {
    ylo = std::min(ylo, *plot.reference);
    yhi = std::max(yhi, *plot.reference);
  }

  Scratch scratch;
  cairo_t* m = scratch.cr();
  const std::string title = clean_text(plot.title), subtitle = clean_text(plot.subtitle), x_title = clean_text(plot.x_label),
                    y_title = clean_text(plot.y_label);
  // Legend entries: whole labels. The figure widens for a title or legend entry wider than it.
  std::vector<LegendEntry> legend = series_legend(plot.series, false);
  if (plot.reference && !plot.reference_label.empty()) legend.push_back({clean_text(plot.reference_label), {}, 0, false, true});
  const double W = std::max({double(plot.width), title_block_width(m, title, subtitle), flow_legend(m, legend, 1e9).min_width});
  const double H = plot.height;  // the plot's own height; a legend below the plot adds to it

  Axis x, y;
  std::tie(x.lo, x.hi) = padded_range(xlo, xhi, false, 0.02);
  y.log = log;
  std::tie(y.lo, y.hi) = padded_range(ylo, yhi, log, 0.05);

  const double title_h = title_block_height(m, title, subtitle, 12);
  const double axis_title_h = line_height(m, kAxisFont);
  const double tick_h = line_height(m, kTickFont);
  const double top = kPad + title_h + tick_h / 2;
  const double bottom = H - kPad - (x_title.empty() ? 0 : axis_title_h + 6) - tick_h - 8;
  const Ticks yt = make_ticks(y, std::max(2.0, (bottom - top) / 55));
  const double left = kPad + (y_title.empty() ? 0 : axis_title_h + 8) + max_text_width(m, yt.labels, kTickFont) + 8;

  // Legend: a box inside the plot area in an empty corner when it is small; else rows below the
  // plot, as many as the labels need (the figure grows by their height).
  const Rect lsize = legend_box_size(m, legend);
  double right = W - kPad;
  const bool legend_large = lsize.width > 0.4 * (right - left) || lsize.height > 0.6 * (bottom - top);
  const LegendFlow below = flow_legend(m, legend, W - 2 * kPad);

  // x ticks: fewer until their labels do not touch.
  Ticks xt;
  for (double target = std::max(2.0, (right - left) / 80); target >= 1; target = target > 2 ? target - 1 : 0.5) {
    x.p0 = left;
    x.p1 = right;
    xt = make_ticks(x, target);
    double widest = max_text_width(m, xt.labels, kTickFont);
    double spacing = xt.values.size() > 1 ? (x.map(xt.values[1]) - x.map(xt.values[0])) : 1e9;
    if (widest + 10 < spacing || target <= 1) break;
  }
  // The last x tick label must not run off the right edge.
  if (!xt.values.empty()) {
    const double over = x.map(xt.values.back()) + text_width(m, xt.labels.back(), kTickFont) / 2 - (W - 4);
    if (over > 0) right -= over;
  }
  const Rect area{left, top, right - left, bottom - top};
  x.p0 = area.x;
  x.p1 = area.x + area.width;
  y.p0 = area.y + area.height;
  y.p1 = area.y;

  // The inside corner whose legend box covers the fewest drawn points; the legend goes below the
  // plot when it is large or no corner is free of data.
  const double m8 = 8;
  const std::array<std::pair<double, double>, 4> corners = {
      std::pair{area.x + area.width - lsize.width - m8, area.y + m8},                               // top right
      std::pair{area.x + m8, area.y + m8},                                                          // top left
      std::pair{area.x + area.width - lsize.width - m8, area.y + area.height - lsize.height - m8},  // bottom right
      std::pair{area.x + m8, area.y + area.height - lsize.height - m8}};                            // bottom left
  std::array<std::size_t, 4> hits{};
  auto count = [&](double px, double py) {
    for (std::size_t c = 0; c < 4; ++c)
      if (px >= corners[c].first && px <= corners[c].first + lsize.width && py >= corners[c].second &&
          py <= corners[c].second + lsize.height)
        ++hits[c];
  };
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
  const std::size_t best = std::size_t(std::min_element(hits.begin(), hits.end()) - hits.begin());
  const bool legend_below = legend_large || hits[best] > 0;
  const double total_h = legend_below && !legend.empty() ? std::ceil(H + below.height + 6) : H;

  Figure fig(file, W, total_h, plot.png_scale);
  cairo_t* cr = fig.cr();

  // Grid, bands, reference, lines (clipped to the area).
  draw_y_axis(cr, area, y, yt, kTickFont, true);
  for (std::size_t i = 0; i < xt.values.size(); ++i) {
    const double px = x.map(xt.values[i]);
    set_grey(cr, 0.9);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, snap(px), area.y);
    cairo_line_to(cr, snap(px), area.y + area.height);
    cairo_stroke(cr);
    set_grey(cr, 0.2);
    cairo_move_to(cr, snap(px), area.y + area.height);
    cairo_line_to(cr, snap(px), area.y + area.height + 4);
    cairo_stroke(cr);
    draw_text(cr, px, area.y + area.height + 7, xt.labels[i], kTickFont, HAlign::Center, VAlign::Top);
  }

  cairo_save(cr);
  cairo_rectangle(cr, area.x, area.y, area.width, area.height);
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
    cairo_move_to(cr, area.x, y.map(*plot.reference));
    cairo_line_to(cr, area.x + area.width, y.map(*plot.reference));
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
  draw_frame(cr, area);

  // Titles.
  set_grey(cr, 0.1);
  if (!x_title.empty())
    draw_text(cr, area.x + area.width / 2, H - kPad, fit_text(cr, x_title, kAxisFont, W - 2 * kPad), kAxisFont, HAlign::Center,
              VAlign::Bottom);
  if (!y_title.empty())
    draw_text(cr, kPad, area.y + area.height / 2, fit_text(cr, y_title, kAxisFont, area.height), kAxisFont, HAlign::Center,
              VAlign::Top, false, -kPi / 2);
  draw_title(cr, W / 2, kPad, title, subtitle);

  // Legend placement: below, or the inside corner whose box covers the fewest drawn points.
  PlotLayout layout{{int(W), int(total_h)}, area, legend_labels(legend), {}, legend_below};
  if (legend_below)
    layout.legend_boxes = draw_legend_flow(cr, below, legend, W / 2, H - 4);
  else if (!legend.empty())
    layout.legend_boxes = draw_legend_box(cr, corners[best].first, corners[best].second, legend);
  fig.finish();
  return layout;
}

// ---- Heatmap grid --------------------------------------------------------------------------
namespace {

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

}  // namespace

HeatmapLayout heatmap_grid(const fs::path& file, const HeatmapGrid& g) {
  std::size_t gr = 0, gc = 0;
  const std::vector<PanelView> views = validate_grid(g, gr, gc);
  figure_format(file);
  const std::size_t n = views.size();

  std::size_t max_r = 0, max_c = 0;
  for (const auto& v : views) {
    max_r = std::max(max_r, v.panel->rows);
    max_c = std::max(max_c, v.panel->cols);
  }
  double cell = g.cell;
  if (cell <= 0) {
    const double side = n == 1 ? 380 : gc <= 2 ? 280 : 210;
    cell = std::clamp(std::floor(side / double(std::max(max_r, max_c))), 3.0, 30.0);
  }
  const double box_w = max_c * cell, box_h = max_r * cell;

  Scratch scratch;
  cairo_t* m = scratch.cr();
  // Tick labels: font from the cell size; every stride-th label when cells are too small.
  const double tick_font = std::clamp(cell * 0.72, 7.0, 11.0);
  const double tick_h = line_height(m, tick_font);
  const std::size_t stride = std::size_t(std::max(1.0, std::ceil((tick_h * 0.9) / cell)));
  auto cleaned = [&](const std::vector<std::string>* labels) {
    std::vector<std::string> out;
    if (labels)
      for (const auto& s : *labels) out.push_back(clean_text(s, g.max_label_chars));
    return out;
  };
  std::vector<std::vector<std::string>> xl(n), yl(n);
  bool any_x = false, any_y = false, own_x = false, own_y = false;
  double x_label_w = 0, y_label_w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    xl[i] = cleaned(views[i].x_labels);
    yl[i] = cleaned(views[i].y_labels);
    any_x = any_x || !xl[i].empty();
    any_y = any_y || !yl[i].empty();
    own_x = own_x || views[i].own_x;
    own_y = own_y || views[i].own_y;
    x_label_w = std::max(x_label_w, max_text_width(m, xl[i], tick_font));
    y_label_w = std::max(y_label_w, max_text_width(m, yl[i], tick_font));
  }
  const bool rotate_x = x_label_w > cell * stride * 0.92;
  const double x_gutter = any_x ? (rotate_x ? x_label_w : tick_h) + 8 : 0;
  const double y_gutter = any_y ? y_label_w + 8 : 0;

  // Which panels show tick labels: with shared labels only the left column / bottom-most panel
  // of each column; panels with their own labels always.
  std::vector<std::size_t> bottom_of_col(gc, 0);
  for (std::size_t i = 0; i < n; ++i) bottom_of_col[i % gc] = i / gc;
  auto shows_x = [&](std::size_t i) { return !xl[i].empty() && (views[i].own_x || own_x || bottom_of_col[i % gc] == i / gc); };
  auto shows_y = [&](std::size_t i) { return !yl[i].empty() && (views[i].own_y || own_y || i % gc == 0); };

  const std::string title = clean_text(g.title), subtitle = clean_text(g.subtitle), x_title = clean_text(g.x_axis_label),
                    y_title = clean_text(g.y_axis_label), cb_title = clean_text(g.colorbar_label);
  // Panel titles are never shortened: a column is as wide as its widest panel title.
  const double panel_font = 11;
  std::vector<std::string> panel_titles;
  std::vector<double> col_w(gc, box_w);
  for (std::size_t i = 0; i < n; ++i) {
    panel_titles.push_back(clean_text(views[i].panel->title));
    col_w[i % gc] = std::max(col_w[i % gc], std::ceil(text_width(m, panel_titles.back(), panel_font)));
  }
  const bool any_panel_title =
      std::any_of(panel_titles.begin(), panel_titles.end(), [](const std::string& t) { return !t.empty(); });
  const double panel_title_h = any_panel_title ? line_height(m, panel_font) + 5 : 0;
  const double title_h = title_block_height(m, title, subtitle, 12);
  const double axis_title_h = line_height(m, kAxisFont);
  const double col_gap = 16, row_gap = 12;

  std::vector<double> col_x(gc), row_y(gr);
  double x = kPad + (y_title.empty() ? 0 : axis_title_h + 8);
  for (std::size_t c = 0; c < gc; ++c) {
    bool gutter = false;
    for (std::size_t r = 0; r < gr; ++r)
      if (r * gc + c < n && shows_y(r * gc + c)) gutter = true;
    x += gutter ? y_gutter : 0;
    col_x[c] = std::round(x);
    x += col_w[c] + (c + 1 < gc ? col_gap : 0);
  }
  const double content_right = x;
  double y = kPad + title_h;
  for (std::size_t r = 0; r < gr; ++r) {
    y += panel_title_h;
    row_y[r] = std::round(y);
    bool gutter = false;
    for (std::size_t c = 0; c < gc; ++c)
      if (r * gc + c < n && shows_x(r * gc + c)) gutter = true;
    y += box_h + (gutter ? x_gutter : 0) + (r + 1 < gr ? row_gap : 0);
  }
  const double content_bottom = y;

  // Colorbar on the right of the panels, spanning them (at most 420 px).
  Axis cb;
  cb.lo = g.vmin;
  cb.hi = g.vmax;
  const double panels_h = row_y[gr - 1] + box_h - row_y[0];
  const double cb_h = std::clamp(panels_h, std::min(120.0, content_bottom - row_y[0]), 420.0);
  cb.p0 = row_y[0] + cb_h;
  cb.p1 = row_y[0];
  const Ticks cbt = make_ticks(cb, std::max(2.0, cb_h / 45));
  const double cb_font = 10;
  const double cb_x = std::round(content_right + 22), cb_w = 14;
  double width = cb_x + cb_w + 7 + max_text_width(m, cbt.labels, cb_font) + (cb_title.empty() ? 0 : 8 + axis_title_h) + kPad;
  double height = content_bottom + (x_title.empty() ? 0 : axis_title_h + 10) + kPad;
  // A title wider than the content widens the figure; the content is centred under it.
  double shift = 0;
  const double title_w = title_block_width(m, title, subtitle);
  if (title_w > width) {
    shift = std::round((title_w - width) / 2);
    width = std::ceil(title_w);
  }
  width = std::ceil(width);
  height = std::ceil(height);

  HeatmapLayout layout;
  layout.size = {int(width), int(height)};
  layout.cell = cell;
  layout.colorbar = {cb_x + shift, cb.p1, cb_w, cb_h};
  for (std::size_t i = 0; i < n; ++i)
    layout.matrices.push_back({col_x[i % gc] + shift, row_y[i / gc], views[i].panel->cols * cell, views[i].panel->rows * cell});

  Figure fig(file, width, height, g.png_scale);
  cairo_t* cr = fig.cr();
  const double span = g.vmax - g.vmin;
  for (std::size_t i = 0; i < n; ++i) {
    const HeatmapPanel& p = *views[i].panel;
    const Rect& r = layout.matrices[i];
    // Cells: one pixel each in an image scaled up without interpolation, so neighbouring cells meet
    // without seams and an SVG embeds one small PNG instead of a path per cell. Masked cells stay
    // transparent and are hatched after.
    SurfacePtr cells(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(p.cols), static_cast<int>(p.rows)));
    cairo_surface_flush(cells.get());
    unsigned char* pixels = cairo_image_surface_get_data(cells.get());
    const int row_bytes = cairo_image_surface_get_stride(cells.get());
    std::vector<std::pair<std::size_t, std::size_t>> masked;
    for (std::size_t a = 0; a < p.rows; ++a)
      for (std::size_t b = 0; b < p.cols; ++b) {
        auto* px = reinterpret_cast<std::uint32_t*>(pixels + a * static_cast<std::size_t>(row_bytes)) + b;
        const double v = p.values[a * p.cols + b];
        if ((views[i].mask && (*views[i].mask)[a * p.cols + b]) || !finite(v)) {
          masked.emplace_back(a, b);
          *px = 0;
          continue;
        }
        const Rgb c = colormap((v - g.vmin) / span);
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

    set_grey(cr, 0.1);
    draw_text(cr, r.x + std::max(r.width, text_width(cr, panel_titles[i], panel_font)) / 2, r.y - 5, panel_titles[i], panel_font,
              HAlign::Center, VAlign::Bottom);
    set_grey(cr, 0.15);
    if (shows_y(i))
      for (std::size_t a = 0; a < p.rows; a += stride)
        draw_text(cr, r.x - 4, r.y + (a + 0.5) * cell, yl[i][a], tick_font, HAlign::Right, VAlign::Middle);
    if (shows_x(i))
      for (std::size_t b = 0; b < p.cols; b += stride) {
        const double cx = r.x + (b + 0.5) * cell;
        if (rotate_x)
          draw_text(cr, cx, r.y + r.height + 4, xl[i][b], tick_font, HAlign::Right, VAlign::Middle, false, -kPi / 2);
        else
          draw_text(cr, cx, r.y + r.height + 4, xl[i][b], tick_font, HAlign::Center, VAlign::Top);
      }
  }

  // Colorbar: a linear gradient through the colormap's control points (exact in PNG and SVG).
  const Rect& cbr = layout.colorbar;
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
  for (std::size_t k = 0; k < cbt.values.size(); ++k) {
    const double py = cb.map(cbt.values[k]);
    set_grey(cr, 0.2);
    cairo_move_to(cr, cbr.x + cbr.width, py);
    cairo_line_to(cr, cbr.x + cbr.width + 4, py);
    cairo_stroke(cr);
    draw_text(cr, cbr.x + cbr.width + 7, py, cbt.labels[k], cb_font, HAlign::Left, VAlign::Middle);
    cb_label_w = std::max(cb_label_w, text_width(cr, cbt.labels[k], cb_font));
  }
  set_grey(cr, 0.1);
  if (!cb_title.empty())
    draw_text(cr, cbr.x + cbr.width + 7 + cb_label_w + 8, cbr.y + cbr.height / 2, fit_text(cr, cb_title, kAxisFont, cbr.height),
              kAxisFont, HAlign::Center, VAlign::Top, false, -kPi / 2);

  // Axis titles, figure title.
  const double panels_left = col_x[0] + shift, panels_right = content_right + shift;
  if (!x_title.empty())
    draw_text(cr, (panels_left + panels_right) / 2, height - kPad, fit_text(cr, x_title, kAxisFont, width - 2 * kPad), kAxisFont,
              HAlign::Center, VAlign::Bottom);
  if (!y_title.empty())
    draw_text(cr, kPad + shift, (row_y[0] + content_bottom) / 2, fit_text(cr, y_title, kAxisFont, content_bottom - row_y[0]),
              kAxisFont, HAlign::Center, VAlign::Top, false, -kPi / 2);
  draw_title(cr, width / 2, kPad, title, subtitle);
  fig.finish();
  return layout;
}

// ---- Grouped points ------------------------------------------------------------------------
PlotLayout grouped_points(const fs::path& file, const GroupedPoints& plot) {
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

  Scratch scratch;
  cairo_t* m = scratch.cr();
  const std::string title = clean_text(plot.title), subtitle = clean_text(plot.subtitle), x_title = clean_text(plot.x_label),
                    y_title = clean_text(plot.y_label);
  std::vector<std::string> cats;
  for (const auto& c : plot.categories) cats.push_back(clean_text(c, 20));
  const std::vector<LegendEntry> legend = series_legend(plot.series, true);

  // Automatic width: a slot per category wide enough for its arms, narrower past ~2400 px.
  // Upright category labels when they need at most 80 px.
  const double cat_w = max_text_width(m, cats, kTickFont);
  double slot_auto = std::max({24.0, 9.0 * ns + 10, cat_w + 10 <= 80 ? cat_w + 10 : 0.0});
  if (nc * slot_auto > 2200) slot_auto = std::max(2200.0 / double(nc), 6.0 * ns + 4);
  Axis y;
  std::tie(y.lo, y.hi) = padded_range(ylo, yhi, false, 0.06);
  if (plot.include_zero && ylo >= 0) y.lo = std::max(y.lo, 0.0);  // do not pad below a zero floor
  const double H = plot.height;
  const double tick_h = line_height(m, kTickFont);
  const double axis_title_h = line_height(m, kAxisFont);
  const double title_h = title_block_height(m, title, subtitle, 10);
  const double provisional_h = H - 160;
  const Ticks yt = make_ticks(y, std::max(2.0, provisional_h / 50));
  const double left = kPad + (y_title.empty() ? 0 : axis_title_h + 8) + max_text_width(m, yt.labels, kTickFont) + 8;
  const double right_pad = kPad + 4;
  double W = plot.width > 0 ? plot.width : std::max(520.0, std::ceil(left + nc * slot_auto + right_pad));
  // Legend rows under the title, wrapped to the figure width; the figure widens for a title or
  // an entry wider than it (labels are never shortened).
  W = std::max({W, title_block_width(m, title, subtitle), flow_legend(m, legend, 1e9).min_width});
  const LegendFlow flow = flow_legend(m, legend, W - 2 * kPad);
  const double slot = (W - left - right_pad) / double(nc);
  if (slot < 4)
    throw Error("grouped points '" + plot.title + "': " + std::to_string(nc) + " categories do not fit in width " +
                    std::to_string(plot.width),
                "use a larger width, or 0 for automatic");
  const bool rotate = cat_w + 6 > slot;

  const double top = kPad + title_h + flow.height + 10;
  const double bottom = H - kPad - (x_title.empty() ? 0 : axis_title_h + 8) - (rotate ? cat_w : tick_h) - 8;
  if (bottom - top < 40)
    throw Error("grouped points '" + plot.title + "': height " + std::to_string(plot.height) + " leaves no room for the plot",
                "use a larger height or shorter category names");
  const Rect area{left, top, W - left - right_pad, bottom - top};
  y.p0 = area.y + area.height;
  y.p1 = area.y;

  Figure fig(file, W, H, plot.png_scale);
  cairo_t* cr = fig.cr();
  // Alternate category shading, then grid and frame.
  for (std::size_t c = 0; c < nc; c += 2) {
    set_grey(cr, 0.955);
    cairo_rectangle(cr, area.x + c * slot, area.y, slot, area.height);
    cairo_fill(cr);
  }
  draw_y_axis(cr, area, y, yt, kTickFont, true);
  if (y.lo < 0 && y.hi > 0) {  // the zero line
    set_grey(cr, 0.55);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, area.x, snap(y.map(0)));
    cairo_line_to(cr, area.x + area.width, snap(y.map(0)));
    cairo_stroke(cr);
  }
  const double dx = std::min(11.0, slot * 0.8 / double(ns));
  for (std::size_t si = 0; si < ns; ++si) {
    const auto& s = plot.series[si];
    const Rgb colour = palette_colour(si);
    for (std::size_t c = 0; c < nc; ++c) {
      if (!finite(s.mean[c])) continue;
      const double px = area.x + (c + 0.5) * slot + (double(si) - (ns - 1) / 2.0) * dx;
      const double py = y.map(s.mean[c]);
      set_colour(cr, colour);
      if (!s.err.empty() && finite(s.err[c]) && s.err[c] != 0) {
        const double e = std::abs(s.err[c]);
        const double y0 = y.map(s.mean[c] - e), y1 = y.map(s.mean[c] + e);
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
  draw_frame(cr, area);

  // Category labels.
  set_grey(cr, 0.15);
  for (std::size_t c = 0; c < nc; ++c) {
    const double px = area.x + (c + 0.5) * slot;
    set_grey(cr, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, snap(px), area.y + area.height);
    cairo_line_to(cr, snap(px), area.y + area.height + 4);
    cairo_stroke(cr);
    if (rotate)
      draw_text(cr, px, area.y + area.height + 7, cats[c], kTickFont, HAlign::Right, VAlign::Middle, false, -kPi / 2);
    else
      draw_text(cr, px, area.y + area.height + 7, cats[c], kTickFont, HAlign::Center, VAlign::Top);
  }
  set_grey(cr, 0.1);
  if (!x_title.empty())
    draw_text(cr, area.x + area.width / 2, H - kPad, fit_text(cr, x_title, kAxisFont, W - 2 * kPad), kAxisFont, HAlign::Center,
              VAlign::Bottom);
  if (!y_title.empty())
    draw_text(cr, kPad, area.y + area.height / 2, fit_text(cr, y_title, kAxisFont, area.height), kAxisFont, HAlign::Center,
              VAlign::Top, false, -kPi / 2);
  draw_title(cr, W / 2, kPad, title, subtitle);
  PlotLayout layout{
      {int(W), int(H)}, area, legend_labels(legend), draw_legend_flow(cr, flow, legend, W / 2, kPad + title_h), false};
  fig.finish();
  return layout;
}

}  // namespace ablate::analysis

#if defined(__SANITIZE_ADDRESS__)
// cairo's toy text API keeps fontconfig patterns in process-wide caches that are never freed
// (a plain C program drawing one string shows the same "leak"); without this LeakSanitizer fails
// every sanitized executable that draws a figure. Bounded, once per process, fontconfig only.
extern "C" __attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
#endif
