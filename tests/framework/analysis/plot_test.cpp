// Tests for framework/analysis/plot: the files are real PNG (signature, IHDR size = size × scale)
// and well-formed SVG (parsed by Debian's python3) of the requested size, heatmap cells have their
// colormap colour (read back with cairo), and bad input throws ablate::Error instead of crashing.
#include "analysis/plot.hpp"

#include <cairo.h>
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "framework/test_dirs.hpp"

namespace ablate::analysis {
namespace {

namespace fs = std::filesystem;

class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ablate::testing::fresh_dir("plot_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct PngSize {
  std::uint32_t width = 0, height = 0;
};

// The PNG signature, then the IHDR chunk first: length(4) "IHDR" width(4, big-endian) height(4).
PngSize png_size(const fs::path& p) {
  const std::string bytes = read_all(p);
  EXPECT_GE(bytes.size(), 24u);
  if (bytes.size() < 24) return {};
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

// The pixel size of the PNG `file`.
void expect_png_size(const fs::path& file, std::int64_t width, std::int64_t height) {
  const PngSize png = png_size(file);
  EXPECT_EQ(png.width, std::uint32_t(width)) << file;
  EXPECT_EQ(png.height, std::uint32_t(height)) << file;
}

bool svg_parses(const fs::path& p) {
  const std::string cmd =
      "/usr/bin/python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '" + p.string() + "'";
  return std::system(cmd.c_str()) == 0;
}

// The value of attribute `name` on the root <svg> element.
std::string svg_attribute(const fs::path& p, const std::string& name) {
  const std::string text = read_all(p);
  const auto svg = text.find("<svg");
  if (svg == std::string::npos) return {};
  const auto end = text.find('>', svg);
  const std::string tag = text.substr(svg, end - svg);
  const auto at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return {};
  const auto start = at + name.size() + 3;
  return tag.substr(start, tag.find('"', start) - start);
}

// A PNG read back with cairo: pixel (x, y) in device pixels as 0-255 channels.
class PngImage {
 public:
  explicit PngImage(const fs::path& p) : surface_(cairo_image_surface_create_from_png(p.c_str())) {}
  bool ok() const { return cairo_surface_status(surface_.get()) == CAIRO_STATUS_SUCCESS; }
  int width() const { return cairo_image_surface_get_width(surface_.get()); }
  int height() const { return cairo_image_surface_get_height(surface_.get()); }
  std::array<int, 3> rgb(double x, double y) const {
    cairo_surface_flush(surface_.get());
    const unsigned char* data = cairo_image_surface_get_data(surface_.get());
    const int stride = cairo_image_surface_get_stride(surface_.get());
    const auto px = *reinterpret_cast<const std::uint32_t*>(data + int(y) * stride + int(x) * 4);  // opaque ARGB32
    return {int((px >> 16) & 0xFF), int((px >> 8) & 0xFF), int(px & 0xFF)};
  }

 private:
  struct Destroy {
    void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
  };
  std::unique_ptr<cairo_surface_t, Destroy> surface_;
};

void expect_colour(const std::array<int, 3>& got, const Rgb& want) {
  EXPECT_NEAR(got[0], want.r * 255, 1.5);
  EXPECT_NEAR(got[1], want.g * 255, 1.5);
  EXPECT_NEAR(got[2], want.b * 255, 1.5);
}

LinePlot two_series() {
  LinePlot p;
  p.title = "loss";
  p.x_label = "step";
  p.y_label = "loss";
  for (int s = 0; s < 2; ++s) {
    Series se;
    se.label = "arm " + std::to_string(s);
    for (int i = 0; i < 50; ++i) {
      const double m = 2.0 * std::exp(-i / (10.0 + 10 * s)) + 0.1;
      se.x.push_back(i * 10);
      se.mean.push_back(m);
      se.lower.push_back(m * 0.9);
      se.upper.push_back(m * 1.1);
    }
    p.series.push_back(se);
  }
  p.reference = 0.5;
  p.reference_label = "threshold";
  return p;
}

HeatmapPanel panel(std::size_t rows, std::size_t cols, const std::string& title = "layer 0 · head 0") {
  HeatmapPanel p;
  p.title = title;
  p.rows = rows;
  p.cols = cols;
  for (std::size_t i = 0; i < rows * cols; ++i) p.values.push_back(double(i) / double(rows * cols - 1));
  return p;
}

GroupedPoints entropy_points() {
  GroupedPoints g;
  g.title = "entropy";
  g.y_label = "nats";
  g.categories = {"L0·H0", "L0·H1", "L1·H0", "L1·H1"};
  g.series = {{"baseline", {1.0, 1.2, 0.8, NAN}, {0.1, 0.2, 0.1, 0.1}}, {"ablated", {1.5, 1.1, 0.9, 1.3}, {}}};
  return g;
}

TEST_F(PlotTest, PlotFormatByExtension) {
  EXPECT_EQ(figure_format("a/b.png"), FigureFormat::Png);
  EXPECT_EQ(figure_format("B.PNG"), FigureFormat::Png);
  EXPECT_EQ(figure_format("c.svg"), FigureFormat::Svg);
  for (const char* bad : {"x.pdf", "x", "x.png.gz", "x.jpeg"}) {
    try {
      figure_format(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.hint()).find(".png, .svg"), std::string::npos) << e.hint();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST_F(PlotTest, PlotLinePngHasRequestedSize) {
  const LinePlot p = two_series();
  const FigureSize size = line_plot(dir_ / "loss.png", p).size;
  EXPECT_EQ(size.width, 900);
  EXPECT_EQ(size.height, 560);
  expect_png_size(dir_ / "loss.png", 1800, 1120);  // default png_scale 2

  LinePlot small = p;
  small.width = 400;
  small.height = 300;
  small.png_scale = 1;
  line_plot(dir_ / "small.png", small);
  expect_png_size(dir_ / "small.png", 400, 300);
  // The figure is not blank: the first series' colour appears somewhere.
  PngImage img(dir_ / "small.png");
  ASSERT_TRUE(img.ok());
  const Rgb c0 = palette_colour(0);
  int hits = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) {
      const auto px = img.rgb(x, y);
      hits += std::abs(px[0] - c0.r * 255) < 3 && std::abs(px[1] - c0.g * 255) < 3 && std::abs(px[2] - c0.b * 255) < 3;
    }
  EXPECT_GT(hits, 50);
}

TEST_F(PlotTest, PlotLineSvgParsesWithSize) {
  LinePlot p = two_series();
  p.title = "loss <&> \"quoted\" · ünïcode";
  p.y_scale = YScale::Log;
  line_plot(dir_ / "loss.svg", p);
  EXPECT_TRUE(svg_parses(dir_ / "loss.svg"));
  EXPECT_EQ(svg_attribute(dir_ / "loss.svg", "width"), "900px");
  EXPECT_EQ(svg_attribute(dir_ / "loss.svg", "height"), "560px");
}

// An SVG's text is SVG <text> (selectable; report.html was 7.4 MB of glyph outlines), escaped,
// drawn over the plot, the y title turned to read upwards; coordinates carry two decimals at most.
TEST_F(PlotTest, SvgTextIsTextAndNumbersAreRounded) {
  LinePlot p = two_series();
  p.title = "loss <&> \"quoted\" · ünïcode";
  p.y_label = "loss (nats)";
  line_plot(dir_ / "text.svg", p);
  const std::string svg = read_all(dir_ / "text.svg");
  EXPECT_EQ(svg.find("<symbol"), std::string::npos) << "glyph outlines are still drawn";
  const auto title = svg.find(">loss &lt;&amp;&gt; &quot;quoted&quot; · ünïcode</text>");
  ASSERT_NE(title, std::string::npos);
  EXPECT_NE(svg.rfind("font-weight=\"bold\"", title), std::string::npos);
  const auto y_title = svg.find(">loss (nats)</text>");
  ASSERT_NE(y_title, std::string::npos);
  const auto y_tag = svg.rfind("<text ", y_title);
  EXPECT_NE(svg.substr(y_tag, y_title - y_tag).find("transform=\"rotate(-90 "), std::string::npos)
      << svg.substr(y_tag, y_title - y_tag);
  EXPECT_GT(svg.find("<text "), svg.rfind("<path")) << "text must lie over the drawing";
  for (std::size_t i = 0; (i = svg.find('.', i)) != std::string::npos; ++i) {
    std::size_t digits = 0;
    while (i + 1 + digits < svg.size() && std::isdigit(static_cast<unsigned char>(svg[i + 1 + digits]))) ++digits;
    ASSERT_LE(digits, 2u) << "a number with more decimals: " << svg.substr(i > 12 ? i - 12 : 0, 24);
  }
  EXPECT_TRUE(svg_parses(dir_ / "text.svg"));
}

TEST_F(PlotTest, PlotLineSkipsNanAndNonPositiveOnLog) {
  LinePlot p = two_series();
  p.series[0].mean[3] = NAN;
  p.series[0].mean[4] = std::numeric_limits<double>::infinity();
  p.series[0].x[10] = NAN;
  p.series[1].lower[7] = NAN;
  p.series[1].mean.assign(p.series[1].mean.size(), NAN);  // an all-NaN series: legend only
  p.series[0].mean[20] = -1;                              // skipped on a log axis
  p.y_scale = YScale::Log;
  EXPECT_NO_THROW(line_plot(dir_ / "gaps.png", p));
  EXPECT_EQ(png_size(dir_ / "gaps.png").width, 1800u);

  Series single;  // one finite point: a dot
  single.label = "one";
  single.x = {1};
  single.mean = {2};
  LinePlot one;
  one.series = {single};
  EXPECT_NO_THROW(line_plot(dir_ / "one.svg", one));
  EXPECT_TRUE(svg_parses(dir_ / "one.svg"));
}

TEST_F(PlotTest, PlotLineRejectsBadInput) {
  LinePlot none;
  EXPECT_THROW(line_plot(dir_ / "a.png", none), Error);

  LinePlot p = two_series();
  p.series[1].mean.pop_back();
  EXPECT_THROW(line_plot(dir_ / "b.png", p), Error);

  p = two_series();
  p.series[0].upper.clear();  // lower without upper
  EXPECT_THROW(line_plot(dir_ / "c.png", p), Error);

  p = two_series();
  for (auto& s : p.series) {
    s.mean.assign(s.mean.size(), NAN);
    s.lower.clear();
    s.upper.clear();
  }
  p.reference.reset();
  EXPECT_THROW(line_plot(dir_ / "d.png", p), Error);

  p = two_series();
  for (auto& s : p.series)
    for (auto* v : {&s.mean, &s.lower, &s.upper}) v->assign(v->size(), -1.0);
  p.reference.reset();
  p.y_scale = YScale::Log;
  EXPECT_THROW(line_plot(dir_ / "e.png", p), Error);

  EXPECT_THROW(line_plot(dir_ / "f.pdf", two_series()), Error);
  EXPECT_THROW(line_plot(dir_ / "no_such_dir" / "g.png", two_series()), Error);
  for (const char* name : {"a.png", "b.png", "c.png", "d.png", "e.png", "f.pdf"}) EXPECT_FALSE(fs::exists(dir_ / name)) << name;
}

TEST_F(PlotTest, PlotColormapAndPalette) {
  // viridis's ends and middle.
  expect_colour({0x44, 0x01, 0x54}, colormap(0));
  expect_colour({0x21, 0x90, 0x8C}, colormap(0.5));
  expect_colour({0xFD, 0xE7, 0x25}, colormap(1));
  expect_colour({0x44, 0x01, 0x54}, colormap(-3));  // clamped
  expect_colour({0xFD, 0xE7, 0x25}, colormap(7));
  // Perceptual: brightness grows with t.
  double prev = -1;
  for (int i = 0; i <= 20; ++i) {
    const Rgb c = colormap(i / 20.0);
    const double lum = 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
    EXPECT_GT(lum, prev);
    prev = lum;
  }
  // Eight distinct series colours.
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = i + 1; j < 8; ++j) {
      const Rgb a = palette_colour(i), b = palette_colour(j);
      EXPECT_GT(std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b), 0.1) << i << " " << j;
    }
}

TEST_F(PlotTest, PlotHeatmapCellHasColormapColour) {
  HeatmapGrid g;
  g.title = "attention";
  g.grid_rows = 1;
  g.grid_cols = 2;
  g.panels = {panel(3, 4, "layer 0 · head 0"), panel(3, 4, "layer 0 · head 1")};
  g.panels[1].values[5] = NAN;
  g.x_labels = {"<bos>", "a", "b", "<eos>"};
  g.y_labels = {"x", "y", "z"};
  g.mask.assign(12, 0);
  g.mask[11] = 1;  // the last cell is padding
  g.cell = 20;
  const fs::path file = dir_ / "grid.png";
  const HeatmapLayout layout = heatmap_grid(file, g);
  ASSERT_EQ(layout.matrices.size(), 2u);
  EXPECT_EQ(layout.cell, 20);
  EXPECT_EQ(layout.matrices[0].width, 80);
  EXPECT_EQ(layout.matrices[0].height, 60);

  expect_png_size(file, layout.size.width * 2, layout.size.height * 2);
  PngImage img(file);
  ASSERT_TRUE(img.ok());
  const double scale = 2;
  auto centre = [&](std::size_t panel_index, std::size_t row, std::size_t col) {
    const Rect& r = layout.matrices[panel_index];
    return img.rgb((r.x + (col + 0.5) * layout.cell) * scale, (r.y + (row + 0.5) * layout.cell) * scale);
  };
  for (std::size_t p = 0; p < 2; ++p)
    for (std::size_t row = 0; row < 3; ++row)
      for (std::size_t col = 0; col < 4; ++col) {
        const std::size_t i = row * 4 + col;
        SCOPED_TRACE("panel " + std::to_string(p) + " cell " + std::to_string(i));
        const auto px = centre(p, row, col);
        if (i == 11 || (p == 1 && i == 5)) {  // padding / NaN: grey, not a colormap colour
          EXPECT_EQ(px[0], px[1]);
          EXPECT_EQ(px[1], px[2]);
          EXPECT_GT(px[0], 100);
          continue;
        }
        expect_colour(px, colormap(g.panels[p].values[i]));
      }
  // The colorbar runs through the colormap from the bottom (vmin) to the top (vmax).
  const Rect& cb = layout.colorbar;
  for (double t : {0.02, 0.25, 0.5, 0.75, 0.98}) {
    SCOPED_TRACE("colorbar at " + std::to_string(t));
    const double device_y = std::floor((cb.y + (1 - t) * cb.height) * scale);
    const double at = 1 - ((device_y + 0.5) / scale - cb.y) / cb.height;  // t at that pixel row's centre
    expect_colour(img.rgb((cb.x + cb.width / 2) * scale, device_y), colormap(at));
  }
}

TEST_F(PlotTest, PlotHeatmapValueRangeAndAutoCell) {
  HeatmapGrid g;
  g.panels = {panel(2, 2)};
  g.panels[0].values = {-1, 0, 1, 3};  // vmin = -1, vmax = 1: 3 is clamped
  g.vmin = -1;
  g.vmax = 1;
  const HeatmapLayout layout = heatmap_grid(dir_ / "range.png", g);
  EXPECT_GT(layout.cell, 0);
  PngImage img(dir_ / "range.png");
  ASSERT_TRUE(img.ok());
  const Rect& r = layout.matrices[0];
  auto at = [&](int row, int col) {
    return img.rgb((r.x + (col + 0.5) * layout.cell) * 2, (r.y + (row + 0.5) * layout.cell) * 2);
  };
  expect_colour(at(0, 0), colormap(0));
  expect_colour(at(0, 1), colormap(0.5));
  expect_colour(at(1, 0), colormap(1));
  expect_colour(at(1, 1), colormap(1));
}

TEST_F(PlotTest, PlotHeatmapSvgParsesWithLayoutSize) {
  HeatmapGrid g;
  g.title = "cross-attention per decode step";
  g.grid_rows = 2;
  g.grid_cols = 4;
  std::vector<std::string> tokens = {"▁Die", "▁Katze", "<pad>", "very-long-token-that-gets-shortened", "&amp;", "\xff\xfe"};
  g.x_labels = tokens;
  g.y_labels = {"▁The", "▁cat", "</s>"};
  for (int i = 0; i < 7; ++i)
    g.panels.push_back(panel(3, 6, "layer " + std::to_string(i / 4) + " · head " + std::to_string(i % 4)));
  const HeatmapLayout layout = heatmap_grid(dir_ / "grid.svg", g);
  EXPECT_TRUE(svg_parses(dir_ / "grid.svg"));
  EXPECT_EQ(svg_attribute(dir_ / "grid.svg", "width"), std::to_string(layout.size.width) + "px");
  EXPECT_EQ(svg_attribute(dir_ / "grid.svg", "height"), std::to_string(layout.size.height) + "px");
  // The same grid as PNG: the panels do not overlap each other or the colorbar.
  const HeatmapLayout png = heatmap_grid(dir_ / "grid.png", g);
  for (std::size_t i = 0; i < png.matrices.size(); ++i) {
    const Rect& a = png.matrices[i];
    EXPECT_LE(a.x + a.width, png.colorbar.x);
    EXPECT_LE(a.y + a.height, png.size.height);
    for (std::size_t j = i + 1; j < png.matrices.size(); ++j) {
      const Rect& b = png.matrices[j];
      EXPECT_TRUE(a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y)
          << i << " " << j;
    }
  }
}

TEST_F(PlotTest, PlotHeatmapRejectsBadInput) {
  auto grid = [] {
    HeatmapGrid g;
    g.grid_rows = 1;
    g.grid_cols = 2;
    g.panels = {panel(2, 3), panel(2, 3)};
    return g;
  };
  EXPECT_NO_THROW(heatmap_grid(dir_ / "ok.png", grid()));
  HeatmapGrid g;
  EXPECT_THROW(heatmap_grid(dir_ / "a.png", g), Error);  // no panels
  g = grid();
  g.panels[1].values.pop_back();
  EXPECT_THROW(heatmap_grid(dir_ / "b.png", g), Error);
  g = grid();
  g.x_labels = {"a", "b"};  // 3 columns
  EXPECT_THROW(heatmap_grid(dir_ / "c.png", g), Error);
  g = grid();
  g.panels[0].y_labels = {"a", "b", "c"};  // 2 rows
  EXPECT_THROW(heatmap_grid(dir_ / "d.png", g), Error);
  g = grid();
  g.mask = {1, 0};
  EXPECT_THROW(heatmap_grid(dir_ / "e.png", g), Error);
  g = grid();
  g.panels.push_back(panel(2, 3));  // 3 panels in a 1 x 2 grid
  EXPECT_THROW(heatmap_grid(dir_ / "f.png", g), Error);
  g = grid();
  for (auto& p : g.panels) p.values.assign(p.values.size(), NAN);
  EXPECT_THROW(heatmap_grid(dir_ / "g.png", g), Error);
  g = grid();
  g.vmin = g.vmax = 1;
  EXPECT_THROW(heatmap_grid(dir_ / "h.png", g), Error);
  g = grid();
  g.panels[0].rows = 0;
  g.panels[0].values.clear();
  EXPECT_THROW(heatmap_grid(dir_ / "i.png", g), Error);
  EXPECT_THROW(heatmap_grid(dir_ / "j.jpg", grid()), Error);
  for (const char* name : {"a.png", "b.png", "c.png", "d.png", "e.png", "f.png", "g.png", "h.png", "i.png", "j.jpg"})
    EXPECT_FALSE(fs::exists(dir_ / name)) << name;
}

TEST_F(PlotTest, PlotGroupedPointsPngAndSvg) {
  const GroupedPoints g = entropy_points();
  const FigureSize size = grouped_points(dir_ / "entropy.png", g).size;
  EXPECT_GE(size.width, 400);
  EXPECT_EQ(size.height, 480);
  expect_png_size(dir_ / "entropy.png", size.width * 2, 960);

  GroupedPoints fixed = g;
  fixed.width = 700;
  fixed.height = 400;
  fixed.include_zero = true;
  const FigureSize s = grouped_points(dir_ / "entropy.svg", fixed).size;
  EXPECT_EQ(s.width, 700);
  EXPECT_TRUE(svg_parses(dir_ / "entropy.svg"));
  EXPECT_EQ(svg_attribute(dir_ / "entropy.svg", "width"), "700px");
  EXPECT_EQ(svg_attribute(dir_ / "entropy.svg", "height"), "400px");

  // 36 arms (a leaderboard's): the legend wraps into rows and the figure grows by them, where a
  // fixed 480 left no room for the plot.
  GroupedPoints many = g;
  many.series.clear();
  for (int i = 0; i < 36; ++i)
    many.series.push_back({"model.attention.qk_norm=layer_norm arm " + std::to_string(i), {1.0, 1.1, 0.9, 1.2}, {}});
  const PlotLayout tall = grouped_points(dir_ / "many.svg", many);
  EXPECT_GT(tall.size.height, 480);
  EXPECT_GE(tall.area.height, 200) << "the plot keeps its room";
  EXPECT_EQ(tall.legend.size(), 36u);
  for (const Rect& box : tall.legend_boxes) EXPECT_LE(box.y + box.height, tall.size.height) << "every legend row inside";
}

// The arms of a 2 x 2 x 2 grid by their short labels (values only), as group_runs() names them.
std::vector<std::string> grid_arm_labels() {
  std::vector<std::string> labels;
  for (const char* block : {"post_norm", "pre_norm"})
    for (const char* pos : {"learned", "sinusoidal"})
      for (const char* ffn : {"gelu", "swiglu"}) labels.push_back(std::string(block) + " · " + pos + " · " + ffn + " (n=3)");
  return labels;
}

// Every legend label drawn whole, once, inside the figure, no two overlapping.
void expect_whole_legend(const PlotLayout& layout, const std::vector<std::string>& labels) {
  EXPECT_EQ(layout.legend, labels);
  ASSERT_EQ(layout.legend_boxes.size(), labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const Rect& a = layout.legend_boxes[i];
    EXPECT_GT(a.width, 0) << labels[i];
    EXPECT_GE(a.x, 0) << labels[i];
    EXPECT_LE(a.x + a.width, layout.size.width) << labels[i];
    EXPECT_LE(a.y + a.height, layout.size.height) << labels[i];
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      const Rect& b = layout.legend_boxes[j];
      EXPECT_TRUE(a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y + 0.01 || b.y + b.height <= a.y + 0.01)
          << labels[i] << " overlaps " << labels[j];
    }
  }
}

TEST_F(PlotTest, PlotLegendShowsEightGridArmsWhole) {
  const std::vector<std::string> labels = grid_arm_labels();
  LinePlot p = two_series();
  p.series.clear();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    Series s = two_series().series[0];
    s.label = labels[i];
    for (double& m : s.mean) m += 0.1 * double(i);
    p.series.push_back(s);
  }
  p.reference.reset();
  const PlotLayout layout = line_plot(dir_ / "eight.png", p);
  expect_whole_legend(layout, labels);
  EXPECT_EQ(std::set<std::string>(layout.legend.begin(), layout.legend.end()).size(), 8u);
  EXPECT_EQ(png_size(dir_ / "eight.png").height, std::uint32_t(layout.size.height * 2));

  // A label longer than the figure is wide: drawn whole below the plot, the figure widened for it.
  p.series[3].label = std::string(300, 'x');
  const PlotLayout wide = line_plot(dir_ / "wide.svg", p);
  EXPECT_TRUE(wide.legend_below);
  EXPECT_EQ(wide.legend[3], std::string(300, 'x'));
  EXPECT_GT(wide.size.width, p.width);
  EXPECT_GT(wide.size.height, p.height) << "the legend rows add to the height";
  EXPECT_GT(wide.legend_boxes[3].y, wide.area.y + wide.area.height) << "below the plot area";
  expect_whole_legend(wide, wide.legend);
  EXPECT_EQ(svg_attribute(dir_ / "wide.svg", "width"), std::to_string(wide.size.width) + "px");

  GroupedPoints g = entropy_points();
  g.series.clear();
  for (std::size_t i = 0; i < labels.size(); ++i) g.series.push_back({labels[i], {1.0 + 0.1 * double(i), 1.2, 0.8, 1.0}, {}});
  const PlotLayout points = grouped_points(dir_ / "points.png", g);
  expect_whole_legend(points, labels);
  for (const Rect& box : points.legend_boxes)
    EXPECT_LT(box.y + box.height, points.area.y) << "the legend rows are above the plot";
}

TEST_F(PlotTest, PlotGroupedPointsRejectsBadInput) {
  GroupedPoints g = entropy_points();
  g.categories.clear();
  EXPECT_THROW(grouped_points(dir_ / "a.png", g), Error);
  g = entropy_points();
  g.series.clear();
  EXPECT_THROW(grouped_points(dir_ / "b.png", g), Error);
  g = entropy_points();
  g.series[0].mean.pop_back();
  EXPECT_THROW(grouped_points(dir_ / "c.png", g), Error);
  g = entropy_points();
  g.series[1].err = {0.1};
  EXPECT_THROW(grouped_points(dir_ / "d.png", g), Error);
  g = entropy_points();
  for (auto& s : g.series) s.mean.assign(s.mean.size(), NAN);
  EXPECT_THROW(grouped_points(dir_ / "e.png", g), Error);
  EXPECT_THROW(grouped_points(dir_ / "f.txt", entropy_points()), Error);
  for (const char* name : {"a.png", "b.png", "c.png", "d.png", "e.png", "f.txt"}) EXPECT_FALSE(fs::exists(dir_ / name)) << name;
}

}  // namespace
}  // namespace ablate::analysis
