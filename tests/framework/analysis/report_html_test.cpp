// Tests for report.html (framework/analysis/report): the page is opened in a real headless browser
// (Debian's chromium): it logs nothing to the console (a page that does is caught, so the check can
// fail), the browser's DOM holds the arms and effects tables, and its screenshot shows the figure.
#include <cairo.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/compare.hpp"
#include "analysis/plot.hpp"
#include "analysis/report.hpp"
#include "framework/test_dirs.hpp"

namespace ablate::analysis {
namespace {
namespace fs = std::filesystem;

const char* kChromium = "/usr/bin/chromium";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs headless chromium on `page` with `flag` (--screenshot=FILE or --dump-dom); returns stdout
// and puts the browser's log (console messages included) in `log`.
std::string chromium(const fs::path& page, const std::string& flag, std::string& log) {
  const fs::path out = page.parent_path() / "chromium.out", err = page.parent_path() / "chromium.log";
  const std::string command = std::string(kChromium) +
                              " --headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0 "
                              "--window-size=1100,2400 " +
                              flag + " file://" + page.string() + " > " + out.string() + " 2> " + err.string();
  EXPECT_EQ(std::system(command.c_str()), 0) << slurp(err);
  log = slurp(err);
  return slurp(out);
}

// The browser's console messages: chromium logs each as "...:CONSOLE:<line>] "<text>", source: ...".
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos) out.push_back(line);
  return out;
}

Comparison grid_comparison() {
  std::vector<RunSummary> runs;
  int i = 0;
  for (const char* block : {"post_norm", "pre_norm"})
    for (const char* ffn : {"relu", "gelu"})
      for (const int seed : {1, 2}) {
        RunSummary r;
        r.run_id = "run" + std::to_string(++i);
        r.path = "sweep/run" + std::to_string(i) + "/run.h5";
        r.status = "completed";
        r.config = {{"model.block", block}, {"model.ffn", ffn}, {"train.seed", std::to_string(seed)}};
        r.final_metrics["exact_match"] = 0.8 + 0.05 * (std::string(block) == "pre_norm") + 0.01 * seed + 0.003 * i;
        runs.push_back(r);
      }
  return compare(runs);
}

TEST(ReportHtml, OpensInHeadlessChromiumWithTablesAndAFigure) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << kChromium << " is not installed (scripts/setup.sh installs it)";
  const fs::path dir = ablate::testing::fresh_dir("report_html", false);

  // A figure whose only series is drawn in palette colour 0, thick enough to find in a screenshot.
  LinePlot plot;
  plot.title = "exact_match per arm";
  plot.x_label = "step";
  plot.y_label = "exact_match";
  Series s;
  s.label = "post_norm · relu";
  for (int k = 0; k < 20; ++k) {
    s.x.push_back(k * 50.0);
    s.mean.push_back(0.05 * k);
    s.lower.push_back(0.05 * k - 0.1);
    s.upper.push_back(0.05 * k + 0.1);
  }
  plot.series.push_back(s);
  line_plot(dir / "curves.svg", plot);

  const Comparison c = grid_comparison();
  ASSERT_TRUE(c.factorial.defined) << c.factorial.note;
  const HtmlFigure figure{"curves", "mean over seeds", slurp(dir / "curves.svg")};
  std::vector<std::vector<HtmlFigure>> per_arm(c.arms.size(), std::vector<HtmlFigure>{figure});
  const fs::path page = dir / "report.html";
  std::ofstream(page) << report_html(c, {figure}, per_arm);
  const std::string html = slurp(page);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained and script-free
  // Nothing fetched from the network: the only URLs are the inline SVGs' namespace names.
  for (std::size_t at = 0; (at = html.find("http", at)) != std::string::npos; ++at) {
    const std::string before = html.substr(at >= 13 ? at - 13 : 0, at >= 13 ? 13 : at);
    EXPECT_TRUE(before.ends_with("xmlns=\"") || before.ends_with("xmlns:xlink=\"")) << html.substr(at, 60);
  }
  // Figures go in as their SVG text (a few characters percent-encoded), not base64's 4/3.
  EXPECT_EQ(html.find(";base64,"), std::string::npos);
  const std::size_t figure_count = 1 + c.arms.size();
  EXPECT_LT(html.size(), figure_count * figure.svg.size() * 21 / 20 + 20000) << "figures embedded larger than their SVG";

  // The check can fail: a page that logs to the console is caught.
  const fs::path noisy = dir / "noisy.html";
  std::ofstream(noisy) << "<!DOCTYPE html><html><body><script>console.error('broken')</script></body></html>";
  std::string log;
  chromium(noisy, "--dump-dom", log);
  EXPECT_EQ(console_lines(log).size(), 1u) << log;

  // The report: no console messages, the tables are in the DOM the browser built.
  const std::string dom = chromium(page, "--dump-dom", log);
  EXPECT_TRUE(console_lines(log).empty()) << log;
  EXPECT_NE(dom.find("<h2>Main effects</h2>"), std::string::npos);
  for (const auto& arm : c.arms) EXPECT_NE(dom.find("<td>" + arm.label + "</td>"), std::string::npos) << arm.label;
  EXPECT_NE(dom.find("<td>model.block</td><td>pre_norm − post_norm</td>"), std::string::npos) << dom;

  // The screenshot shows the figure: pixels of palette colour 0, which nothing else on the page uses.
  const fs::path shot = dir / "report.png";
  chromium(page, "--screenshot=" + shot.string(), log);
  cairo_surface_t* png = cairo_image_surface_create_from_png(shot.c_str());
  ASSERT_EQ(cairo_surface_status(png), CAIRO_STATUS_SUCCESS) << shot;
  const int w = cairo_image_surface_get_width(png), h = cairo_image_surface_get_height(png);
  const int stride = cairo_image_surface_get_stride(png);
  const unsigned char* data = cairo_image_surface_get_data(png);
  const Rgb want = palette_colour(0);
  int matching = 0, dark = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const auto* px = reinterpret_cast<const std::uint32_t*>(data + y * stride) + x;  // ARGB32
      const int r = (*px >> 16) & 0xff, g = (*px >> 8) & 0xff, b = *px & 0xff;
      matching += std::abs(r - static_cast<int>(want.r * 255)) < 12 && std::abs(g - static_cast<int>(want.g * 255)) < 12 &&
                  std::abs(b - static_cast<int>(want.b * 255)) < 12;
      dark += r < 80 && g < 80 && b < 80;  // text
    }
  cairo_surface_destroy(png);
  EXPECT_GT(matching, 200) << "the figure's line is not in the screenshot " << shot;
  EXPECT_GT(dark, 2000) << "no text in the screenshot " << shot;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ablate::analysis
