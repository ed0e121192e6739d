// The canvas of plot_canvas.hpp, first part: the figure surface (PNG or SVG, written all or
// nothing), text measured and cleaned for cairo, the colours; and plot.hpp's colour and format helpers.
#include "analysis/plot_canvas.hpp"

#include <cairo-svg.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"

namespace ablate::analysis {
namespace fs = std::filesystem;

namespace canvas {
namespace {

struct FontOptionsDeleter {
  void operator()(cairo_font_options_t* o) const { cairo_font_options_destroy(o); }
};
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

// An SVG figure's text layer, found from any context drawing on the figure's surface.
const cairo_user_data_key_t kSvgTextKey{};

std::string* svg_text_layer(cairo_t* cr) {
  return static_cast<std::string*>(cairo_surface_get_user_data(cairo_get_target(cr), &kSvgTextKey));
}

// A coordinate as SVG text: two decimals (a hundredth of a pixel), no trailing zeros.
std::string svg_number(double v) {
  std::string s = printf_text(v, "%.2f");
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// cairo writes coordinates with six decimals; two are a hundredth of a pixel. Rewrites every
// number with more than two decimals (ids, colours' percentages and base64 data have none).
std::string rounded_numbers(const std::string& svg) {
  std::string out;
  out.reserve(svg.size());
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::size_t i = 0; i < svg.size();) {
    const bool starts =
        is_digit(svg[i]) &&
        (i == 0 || !(std::isalnum(static_cast<unsigned char>(svg[i - 1])) || svg[i - 1] == '.' || svg[i - 1] == '_'));
    if (!starts) {
      out += svg[i++];
      continue;
    }
    std::size_t end = i;
    while (end < svg.size() && is_digit(svg[end])) ++end;
    std::size_t decimals = 0;
    if (end < svg.size() && svg[end] == '.') {
      std::size_t k = end + 1;
      while (k < svg.size() && is_digit(svg[k])) ++k;
      decimals = k - end - 1;
      if (decimals > 0) end = k;
    }
    out += decimals > 2 ? svg_number(std::strtod(svg.substr(i, end - i).c_str(), nullptr)) : svg.substr(i, end - i);
    i = end;
  }
  return out;
}

// cairo's SVG with the text layer on top: the drawing's numbers rounded, the <text> elements
// (their font the one cairo measured with, then look-alikes) before the closing tag.
std::string with_text_layer(const std::string& svg, const std::string& text) {
  std::string out = rounded_numbers(svg);
  const auto close = out.rfind("</svg>");
  if (text.empty() || close == std::string::npos) return out;
  return out.substr(0, close) +
         "<g font-family=\"DejaVu Sans,Verdana,Bitstream Vera Sans,sans-serif\" style=\"white-space:pre\">\n" + text + "</g>\n" +
         out.substr(close);
}

}  // namespace

Figure::Figure(const fs::path& file, double width, double height, double png_scale) : file_(file), format_(figure_format(file)) {
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

Figure::~Figure() {  // the context before the surface
  cr_.reset();
  surface_.reset();
}

void Figure::finish() {
  check(cairo_status(cr_.get()), "drawing");
  cr_.reset();
  std::string bytes;
  if (format_ == FigureFormat::Png) {
    check(cairo_surface_write_to_png_stream(surface_.get(), write_to_string, &bytes), "encoding the PNG");
  } else {
    cairo_surface_finish(surface_.get());
    check(cairo_surface_status(surface_.get()), "writing the SVG");
    bytes = pixelated_images(with_text_layer(svg_, svg_text_));
  }
  surface_.reset();
  write_file_atomically(file_, bytes);
}

void Figure::create_surface(double width, double height, double scale, double device_w, double device_h) {
  if (format_ == FigureFormat::Png) {
    surface_.reset(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(device_w), int(device_h)));
  } else {
    surface_.reset(cairo_svg_surface_create_for_stream(write_to_string, &svg_, width, height));
    cairo_svg_surface_set_document_unit(surface_.get(), CAIRO_SVG_UNIT_PX);
    check(cairo_surface_set_user_data(surface_.get(), &kSvgTextKey, &svg_text_, nullptr), "keeping the text layer");
  }
  check(cairo_surface_status(surface_.get()), "creating the surface");
  cr_.reset(cairo_create(surface_.get()));
  check(cairo_status(cr_.get()), "creating the drawing context");
  cairo_scale(cr_.get(), scale, scale);
  configure_context(cr_.get());
  cairo_set_source_rgb(cr_.get(), 1, 1, 1);
  cairo_paint(cr_.get());
}

void Figure::check(cairo_status_t status, const char* what) const {
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error("cannot render figure " + file_.string() + ": cairo failed " + what + ": " + status_text(status),
                status == CAIRO_STATUS_WRITE_ERROR ? "check the disk space and permissions" : "");
}

Scratch::Scratch() : surface_(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1)), cr_(cairo_create(surface_.get())) {
  configure_context(cr_.get());
}

// ---- Text --------------------------------------------------------------------------------
std::string clean_text(const std::string& s, std::size_t max_chars) {
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

namespace {
void set_font(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}
}  // namespace

double text_width(cairo_t* cr, const std::string& text, double size, bool bold) {
  if (text.empty()) return 0;
  set_font(cr, size, bold);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  return ext.x_advance;
}

double max_text_width(cairo_t* cr, const std::vector<std::string>& texts, double size, bool bold) {
  double w = 0;
  for (const auto& t : texts) w = std::max(w, text_width(cr, t, size, bold));
  return w;
}

double line_height(cairo_t* cr, double size) {
  set_font(cr, size, false);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  return fe.ascent + fe.descent;
}

std::string fit_text(cairo_t* cr, std::string text, double size, double max_width, bool bold) {
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

void draw_text(cairo_t* cr, double x, double y, const std::string& text, double size, HAlign h, VAlign v, bool bold,
               double angle) {
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
  if (std::string* layer = svg_text_layer(cr)) {
    // The anchor and the baseline as cairo measured; the browser aligns by text-anchor, so text
    // in a wider fallback font still ends where a right-aligned label must.
    double px = 0, py = dy, ux = 1, uy = 0;
    cairo_user_to_device(cr, &px, &py);
    cairo_user_to_device_distance(cr, &ux, &uy);
    double r = 0, g = 0, b = 0, a = 1;
    cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);  // not a solid colour: black
    char fill[48];
    std::snprintf(fill, sizeof fill, "#%02x%02x%02x", int(std::lround(r * 255)), int(std::lround(g * 255)),
                  int(std::lround(b * 255)));
    const double degrees = std::atan2(uy, ux) * 180 / kPi;
    std::string e = "<text x=\"" + svg_number(px) + "\" y=\"" + svg_number(py) + "\" font-size=\"" + svg_number(size) + "\"";
    if (bold) e += " font-weight=\"bold\"";
    if (h != HAlign::Left) e += h == HAlign::Center ? " text-anchor=\"middle\"" : " text-anchor=\"end\"";
    e += std::string(" fill=\"") + fill + "\"";
    if (a < 1) e += " fill-opacity=\"" + svg_number(a) + "\"";
    if (std::abs(degrees) > 1e-9)
      e += " transform=\"rotate(" + svg_number(degrees) + " " + svg_number(px) + " " + svg_number(py) + ")\"";
    *layer += e + ">" + xml_escape(text) + "</text>\n";
  } else {
    cairo_move_to(cr, dx, dy);
    cairo_show_text(cr, text.c_str());
  }
  cairo_restore(cr);
}

// ---- Colours -------------------------------------------------------------------------------
Rgb hex(std::uint32_t v) { return {((v >> 16) & 0xFF) / 255.0, ((v >> 8) & 0xFF) / 255.0, (v & 0xFF) / 255.0}; }
void set_colour(cairo_t* cr, const Rgb& c, double alpha) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }
void set_grey(cairo_t* cr, double level, double alpha) { cairo_set_source_rgba(cr, level, level, level, alpha); }

void set_series_dash(cairo_t* cr, std::size_t i) {
  static const std::array<std::vector<double>, 4> kDashes = {std::vector<double>{}, {7, 3.5}, {1.5, 2.5}, {7, 2.5, 1.5, 2.5}};
  const auto& d = kDashes[(i / kOkabeIto.size()) % kDashes.size()];
  cairo_set_dash(cr, d.data(), int(d.size()), 0);
}

}  // namespace canvas

// ---- plot.hpp's helpers -----------------------------------------------------------------------
using canvas::hex;
using canvas::kOkabeIto;
using canvas::kViridis;

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

}  // namespace ablate::analysis

#if defined(__SANITIZE_ADDRESS__)
// cairo's toy text API keeps fontconfig patterns in process-wide caches that are never freed
// (a plain C program drawing one string shows the same "leak"); without this LeakSanitizer fails
// every sanitized executable that draws a figure. Bounded, once per process, fontconfig only.
extern "C" __attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
#endif
