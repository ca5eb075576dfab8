// Chart layout: ticks that cover the data at 1-2-5 steps, data mapped into
// the plot box the right way up, stacked areas summed, and the SVG and
// raster writers showing the same figure.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "src/report/chart.h"
#include "src/report/raster.h"
#include "src/report/svg.h"

namespace paisoar::report {
namespace {

TEST(NiceTicks, CoverTheRangeInStepsOfOneTwoOrFive) {
  for (auto [lo, hi] : std::vector<std::pair<double, double>>{{0, 97}, {0.013, 0.058}, {-3, 1234}, {5, 5}, {1e-7, 3e-7}}) {
    const auto t = nice_ticks(lo, hi);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    EXPECT_LE(t.size(), 12u);
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
        << "step " << step;
  }
  EXPECT_EQ(nice_ticks(0, 100), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_THROW(nice_ticks(2, 1), c10::Error);
}

TEST(FormatNumber, KeepsFourFiguresAndNamesThousands) {
  EXPECT_EQ(format_number(0.012346), "0.01235");
  EXPECT_EQ(format_number(12.5), "12.5");
  EXPECT_EQ(format_number(65536), "65.54k");
  EXPECT_EQ(format_number(2.5e6), "2.5M");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(NAN), "nan");
}

// The curve's path in the figure (the one Line drawn in the series' colour).
std::vector<Point> curve(const Figure& f, Rgb color) {
  for (const auto& s : f.shapes) {
    if (s.kind == Shape::Kind::Line && s.color.hex() == color.hex()) return s.points;
  }
  return {};
}

TEST(LayOut, MapsTheDataIntoTheBoxRightWayUp) {
  Chart c;
  c.title = "loss";
  c.series.push_back({"", palette(0), {{0, 3.0}, {50, 2.0}, {100, 1.0}}});
  const Figure f = lay_out(c, 400, 300);
  const auto path = curve(f, palette(0));
  ASSERT_EQ(path.size(), 3u);
  for (const auto& p : path) {
    EXPECT_GT(p.x, 0);
    EXPECT_LT(p.x, 400);
    EXPECT_GT(p.y, 0);
    EXPECT_LT(p.y, 300);
  }
  EXPECT_LT(path[0].x, path[2].x);
  EXPECT_LT(path[0].y, path[2].y) << "a falling loss goes down the picture";
  EXPECT_NEAR(path[1].x - path[0].x, path[2].x - path[1].x, 1e-9);
  EXPECT_NEAR(path[1].y - path[0].y, path[2].y - path[1].y, 1e-9);
}

TEST(LayOut, StacksAreasOnTopOfEachOther) {
  Chart c;
  c.stacked = true;
  c.series.push_back({"a", palette(0), {{0, 1}, {10, 1}}});
  c.series.push_back({"b", palette(1), {{0, 2}, {10, 2}}});
  const Figure f = lay_out(c, 400, 300);
  std::vector<const Shape*> areas;
  for (const auto& s : f.shapes) {
    if (s.kind == Shape::Kind::Area) areas.push_back(&s);
  }
  ASSERT_EQ(areas.size(), 2u);
  // b's top edge is at 3, a's at 1, the floor at 0: b's band is twice as tall as a's.
  const double floor = areas[0]->points[2].y, a_top = areas[0]->points[0].y, b_top = areas[1]->points[0].y;
  EXPECT_NEAR(floor - b_top, 3 * (floor - a_top), 1e-6);
  EXPECT_NEAR(areas[1]->points.back().y, a_top, 1e-9) << "b's lower edge is a's top";
}

TEST(LayOut, AChartWithoutDataSaysSo) {
  Chart c;
  c.title = "empty";
  c.series.push_back({"", palette(0), {{0, NAN}}});
  const Figure f = lay_out(c, 300, 200);
  EXPECT_TRUE(std::any_of(f.shapes.begin(), f.shapes.end(),
                          [](const Shape& s) { return s.text == "no data in this run"; }));
  Chart logged;
  logged.log_y = true;
  logged.series.push_back({"", palette(0), {{0, 0}, {1, -1}}});
  EXPECT_FALSE(logged.has_data()) << "log axes leave y <= 0 out";
}

TEST(Svg, EscapesTextAndBreaksPathsAtMissingPoints) {
  Chart c;
  c.title = "a <b> & \"c\"";
  c.series.push_back({"x", palette(0), {{0, 1}, {1, NAN}, {2, 2}, {3, 3}}});
  const std::string svg = to_svg(lay_out(c, 400, 300), c.title);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("=\"nan"), std::string::npos);
  EXPECT_EQ(svg.find("=\"-nan"), std::string::npos);
  const size_t path = svg.find("stroke-width=\"2\"");
  ASSERT_NE(path, std::string::npos);
  const size_t d = svg.rfind("d=\"", path);
  const std::string data = svg.substr(d, path - d);
  EXPECT_EQ(std::count(data.begin(), data.end(), 'M'), 2) << data;
  EXPECT_EQ(data.find("nan"), std::string::npos) << data;
}

TEST(Raster, DrawsTheCurveInItsColour) {
  Chart c;
  c.series.push_back({"", palette(3), {{0, 0}, {10, 10}}});
  Canvas canvas(400, 300, Rgb{255, 255, 255});
  draw(lay_out(c, 400, 300), canvas, {0, 0});
  const auto path = curve(lay_out(c, 400, 300), palette(3));
  ASSERT_EQ(path.size(), 2u);
  const Point mid{(path[0].x + path[1].x) / 2, (path[0].y + path[1].y) / 2};
  // The 2-pixel anti-aliased line covers at least one pixel next to its middle fully.
  bool covered = false;
  for (int dx = -1; dx <= 1; ++dx) {
    for (int dy = -1; dy <= 1; ++dy) {
      covered = covered || canvas.at(static_cast<int>(mid.x) + dx, static_cast<int>(mid.y) + dy).hex() == palette(3).hex();
    }
  }
  EXPECT_TRUE(covered);
}

}  // namespace
}  // namespace paisoar::report
