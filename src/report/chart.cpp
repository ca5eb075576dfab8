// lay_out: margins from the tick labels and the legend, nice ticks covering
// the data, then the data mapped into the plot box (stacked series summed
// point by point). Every size is in pixels of the final picture.
#include "src/report/chart.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace paisoar::report {
namespace {

constexpr double kTitleSize = 14, kLabelSize = 12, kTickSize = 11;
constexpr Rgb kInk{40, 40, 40}, kGrid{225, 225, 225}, kAxis{150, 150, 150}, kPaper{255, 255, 255};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

Shape text(Point at, std::string s, double size, TextAnchor anchor = TextAnchor::Start, bool vertical = false) {
  Shape t;
  t.kind = Shape::Kind::Text;
  t.points = {at};
  t.color = kInk;
  t.text = std::move(s);
  t.size = size;
  t.anchor = anchor;
  t.vertical = vertical;
  return t;
}

Shape line(std::vector<Point> points, Rgb color, double width, bool dashed = false) {
  Shape l;
  l.kind = Shape::Kind::Line;
  l.points = std::move(points);
  l.color = color;
  l.width = width;
  l.dashed = dashed;
  return l;
}

// The y value a chart plots (log2 under log_y; NaN for what it leaves out).
double plotted(const Chart& chart, double y) {
  if (!chart.log_y) return y;
  return y > 0 ? std::log2(y) : std::numeric_limits<double>::quiet_NaN();
}

// Stacked charts: each series' points raised by the ones before it.
std::vector<std::vector<Point>> tops(const Chart& chart) {
  std::vector<std::vector<Point>> out;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    std::vector<Point> points = chart.series[s].points;
    for (auto& p : points) {
      p.y = plotted(chart, p.y);
      if (chart.stacked && !std::isfinite(p.y)) p.y = 0;
    }
    if (chart.stacked && s > 0) {
      const auto& below = out.back();
      for (size_t i = 0; i < points.size() && i < below.size(); ++i) points[i].y += below[i].y;
    }
    out.push_back(std::move(points));
  }
  return out;
}

std::vector<double> log_ticks(double lo, double hi) {
  double first = std::floor(lo), last = std::ceil(hi);
  if (first == last) {
    first -= 1;
    last += 1;
  }
  const double every = std::max(1.0, std::ceil((last - first) / 6));
  std::vector<double> ticks;
  for (double t = first; t <= last + 1e-9; t += every) ticks.push_back(t);
  if (ticks.back() < last) ticks.push_back(ticks.back() + every);
  return ticks;
}

std::string tick_label(const Chart& chart, double value, bool y) {
  return format_number(y && chart.log_y ? std::exp2(value) : value);
}

}  // namespace

bool Chart::has_data() const {
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      if (std::isfinite(p.x) && std::isfinite(plotted(*this, p.y))) return true;
    }
  }
  return false;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "nice_ticks: need finite lo <= hi, got ", lo,
              ", ", hi);
  if (!std::isfinite(hi - lo)) {
    // The span overflows a double (values near +-1.8e308): the ticks of the
    // halved range, doubled, are as nice and finite.
    std::vector<double> ticks = nice_ticks(lo / 2, hi / 2, count);
    for (double& t : ticks) t = std::clamp(t, -std::numeric_limits<double>::max() / 2, std::numeric_limits<double>::max() / 2) * 2;
    return ticks;
  }
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double rough = (hi - lo) / std::max(count, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= rough) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  // At most count * 2 + 2 ticks: a step that rounding made too small for the
  // range cannot make the list grow without bound.
  for (int i = 0; i <= 2 * std::max(count, 1) + 1; ++i) {
    const double t = first + i * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::abs(v);
  char text[32];
  const char* suffix = "";
  double shown = v;
  if (a >= 1e9) {
    shown = v / 1e9;
    suffix = "G";
  } else if (a >= 1e6) {
    shown = v / 1e6;
    suffix = "M";
  } else if (a >= 1e4) {
    shown = v / 1e3;
    suffix = "k";
  }
  if (a != 0 && a < 1e-3) {
    std::snprintf(text, sizeof(text), "%.2e", v);
    return text;
  }
  std::snprintf(text, sizeof(text), "%.4g%s", shown, suffix);
  return text;
}

Rgb palette(size_t i) {
  static constexpr Rgb kColors[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                    {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                    {188, 189, 34},  {23, 190, 207}};
  return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
}

Figure lay_out(const Chart& chart, double width, double height) {
  TORCH_CHECK(width >= 100 && height >= 100, "lay_out: a chart needs at least 100 x 100 pixels, got ", width, " x ",
              height);
  Figure f{width, height, {}};
  Shape paper;
  paper.kind = Shape::Kind::Rect;
  paper.points = {{0, 0}, {width, height}};
  paper.color = kPaper;
  f.shapes.push_back(paper);
  f.shapes.push_back(text({10, 14}, chart.title, kTitleSize));
  if (!chart.has_data()) {
    f.shapes.push_back(text({width / 2, height / 2}, "no data in this run", kLabelSize, TextAnchor::Middle));
    return f;
  }

  // The legend, wrapped under the title.
  double legend_y = 34, legend_x = 10;
  std::vector<Shape> legend;
  if (chart.series.size() > 1 || !chart.series[0].label.empty()) {
    for (const auto& s : chart.series) {
      const double entry = 16 + text_extent(s.label, kTickSize) + 12;
      if (legend_x + entry > width - 10 && legend_x > 10) {
        legend_x = 10;
        legend_y += 16;
      }
      Shape swatch;
      swatch.kind = Shape::Kind::Rect;
      swatch.points = {{legend_x, legend_y - 5}, {legend_x + 11, legend_y + 5}};
      swatch.color = s.color;
      legend.push_back(swatch);
      legend.push_back(text({legend_x + 16, legend_y}, s.label, kTickSize));
      legend_x += entry;
    }
    legend_y += 14;
  } else {
    legend_y = 26;
  }

  const auto lifted = tops(chart);
  Range xs, ys;
  for (const auto& points : lifted) {
    for (const auto& p : points) {
      if (!std::isfinite(p.y)) continue;
      xs.add(p.x);
      ys.add(p.y);
    }
  }
  if (chart.stacked) ys.add(0);
  xs.add(chart.x_from);
  xs.add(chart.x_to);
  const std::vector<double> xt = nice_ticks(xs.lo, xs.hi, 6);
  const std::vector<double> yt = chart.log_y ? log_ticks(ys.lo, ys.hi) : nice_ticks(ys.lo, ys.hi, 5);

  double label_w = 0;
  for (double t : yt) label_w = std::max(label_w, text_extent(tick_label(chart, t, true), kTickSize));
  const double left = 10 + (chart.y_label.empty() ? 0 : 18) + label_w + 8;
  const double top = legend_y + 6, right = width - 14, bottom = height - 40;
  TORCH_CHECK(right - left > 20 && bottom - top > 20, "lay_out: ", width, " x ", height,
              " pixels leave no room to plot '", chart.title, "'");
  const double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  // In halves, so that a range as wide as a double's stays finite.
  const auto px = [&](double x) { return left + (x / 2 - x0 / 2) / (x1 / 2 - x0 / 2) * (right - left); };
  const auto py = [&](double y) { return bottom - (y / 2 - y0 / 2) / (y1 / 2 - y0 / 2) * (bottom - top); };

  for (double t : yt) {
    f.shapes.push_back(line({{left, py(t)}, {right, py(t)}}, kGrid, 1, true));
    f.shapes.push_back(text({left - 6, py(t)}, tick_label(chart, t, true), kTickSize, TextAnchor::End));
  }
  for (double t : xt) {
    f.shapes.push_back(line({{px(t), bottom}, {px(t), bottom + 4}}, kAxis, 1));
    f.shapes.push_back(text({px(t), bottom + 12}, tick_label(chart, t, false), kTickSize, TextAnchor::Middle));
  }
  f.shapes.push_back(line({{left, top}, {left, bottom}, {right, bottom}}, kAxis, 1));
  f.shapes.push_back(text({(left + right) / 2, height - 10}, chart.x_label, kLabelSize, TextAnchor::Middle));
  if (!chart.y_label.empty()) {
    f.shapes.push_back(text({18, (top + bottom) / 2}, chart.y_label, kLabelSize, TextAnchor::Middle, true));
  }
  for (auto& s : legend) f.shapes.push_back(std::move(s));

  for (size_t s = 0; s < chart.series.size(); ++s) {
    const auto& points = lifted[s];
    std::vector<Point> path;
    for (const auto& p : points) {
      path.push_back(std::isfinite(p.y) ? Point{px(p.x), py(p.y)}
                                        : Point{px(p.x), std::numeric_limits<double>::quiet_NaN()});
    }
    if (chart.stacked) {
      Shape area;
      area.kind = Shape::Kind::Area;
      area.color = chart.series[s].color;
      area.opacity = 0.85;
      area.points = path;
      if (s == 0) {
        area.points.push_back({path.back().x, py(0)});
        area.points.push_back({path.front().x, py(0)});
      } else {
        const auto& below = lifted[s - 1];
        for (size_t i = below.size(); i-- > 0;) area.points.push_back({px(below[i].x), py(below[i].y)});
      }
      f.shapes.push_back(std::move(area));
      continue;
    }
    f.shapes.push_back(line(path, chart.series[s].color, 2));
    const bool lonely = std::count_if(path.begin(), path.end(), [](const Point& p) { return std::isfinite(p.y); }) == 1;
    if (chart.markers || lonely) {
      for (size_t i = 0; i < path.size(); ++i) {
        if (!std::isfinite(path[i].y)) continue;
        Shape dot;
        dot.kind = Shape::Kind::Dot;
        dot.points = {path[i]};
        dot.color = chart.series[s].color;
        dot.width = 3.5;
        dot.text = chart.series[s].label + (chart.series[s].label.empty() ? "" : ": ") + "step " +
                   format_number(points[i].x) + ", " + format_number(chart.series[s].points[i].y);
        f.shapes.push_back(std::move(dot));
      }
    }
  }
  return f;
}

}  // namespace paisoar::report
