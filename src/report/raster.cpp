// draw: shapes to Canvas calls; dashes are cut from the line here and dots
// are 16-sided polygons.
#include "src/report/raster.h"

#include <cmath>

namespace paisoar::report {
namespace {

constexpr double kDash = 4, kGap = 4;

void dashed(Canvas& canvas, const std::vector<Point>& points, Rgb color, double width) {
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const Point a = points[i], b = points[i + 1];
    const double length = std::hypot(b.x - a.x, b.y - a.y);
    if (!std::isfinite(length) || length == 0) continue;
    for (double t = 0; t < length; t += kDash + kGap) {
      const double u = t / length, v = std::min(t + kDash, length) / length;
      canvas.polyline({{a.x + u * (b.x - a.x), a.y + u * (b.y - a.y)}, {a.x + v * (b.x - a.x), a.y + v * (b.y - a.y)}},
                      color, width);
    }
  }
}

}  // namespace

void draw(const Figure& figure, Canvas& canvas, Point origin) {
  for (const Shape& s : figure.shapes) {
    std::vector<Point> points = s.points;
    for (auto& p : points) {
      p.x += origin.x;
      p.y += origin.y;
    }
    switch (s.kind) {
      case Shape::Kind::Rect:
        if (s.opacity >= 1) {
          canvas.fill_rect(points[0].x, points[0].y, points[1].x - points[0].x, points[1].y - points[0].y, s.color);
        } else {
          canvas.fill_polygon({points[0], {points[1].x, points[0].y}, points[1], {points[0].x, points[1].y}}, s.color,
                              s.opacity);
        }
        break;
      case Shape::Kind::Line:
        if (s.dashed) {
          dashed(canvas, points, s.color, s.width);
        } else {
          canvas.polyline(points, s.color, s.width);
        }
        break;
      case Shape::Kind::Area: canvas.fill_polygon(points, s.color, s.opacity); break;
      case Shape::Kind::Dot: {
        std::vector<Point> circle;
        for (int k = 0; k < 16; ++k) {
          const double a = 2 * M_PI * k / 16;
          circle.push_back({points[0].x + s.width * std::cos(a), points[0].y + s.width * std::sin(a)});
        }
        canvas.fill_polygon(circle, s.color);
        break;
      }
      case Shape::Kind::Text:
        canvas.text(points[0], s.text, s.color, pixel_font_scale(s.size), s.anchor, s.vertical);
        break;
    }
  }
}

}  // namespace paisoar::report
