// Canvas: rasterises a report's charts into an RGB image. Rectangles are
// sampled at pixel centres, thick lines are anti-aliased by each pixel's
// distance to the line, polygons are filled by non-zero winding on four
// sub-scanlines a row, and text is stamped from the built-in bitmap font.
#include "src/report/canvas.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "src/report/bitmap_font.h"

namespace paisoar::report {
namespace {

constexpr int kMaxSide = 16384;
constexpr int kSubRows = 4;  // sub-scanlines a pixel row in fill_polygon

int checked_side(int value, const char* name) {
  if (value <= 0 || value > kMaxSide) {
    C10_THROW_ERROR(ValueError, std::string("Canvas: ") + name + " " + std::to_string(value) + " is outside 1.." +
                                    std::to_string(kMaxSide) + "; pass a size in that range");
  }
  return value;
}

bool finite(const Point& p) { return std::isfinite(p.x) && std::isfinite(p.y); }

// The pixels [first, end) of a row or column of `size` whose centres lie in
// [lo, hi); empty when the range is empty, NaN or off the canvas.
std::pair<int, int> centres_in(double lo, double hi, int size) {
  if (!(lo < hi)) return {0, 0};
  auto index = [size](double v) { return static_cast<int>(std::clamp(std::ceil(v - 0.5), 0.0, double(size))); };
  return {index(lo), index(hi)};
}

// The whole pixel nearest `v` (halves round up), held far inside int64_t.
int64_t snap(double v) { return static_cast<int64_t>(std::floor(std::clamp(v, -1e12, 1e12) + 0.5)); }

double distance_to_segment(Point p, Point a, Point b) {
  const double dx = b.x - a.x, dy = b.y - a.y, length2 = dx * dx + dy * dy;
  const double t = length2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / length2, 0.0, 1.0) : 0.0;
  const double ex = p.x - (a.x + t * dx), ey = p.y - (a.y + t * dy);
  return std::sqrt(ex * ex + ey * ey);
}

uint8_t mix(uint8_t from, uint8_t to, double coverage) {
  return static_cast<uint8_t>(std::lround(from + (to - from) * coverage));
}

}  // namespace

Canvas::Canvas(int width, int height, Rgb background)
    : width_(checked_side(width, "width")),
      height_(checked_side(height, "height")),
      image_(height_, width_, 3) {
  for (int64_t i = 0; i < height_ * int64_t{width_}; ++i) {
    image_.pixels[3 * i] = background.r;
    image_.pixels[3 * i + 1] = background.g;
    image_.pixels[3 * i + 2] = background.b;
  }
}

void Canvas::blend(int x, int y, Rgb color, double coverage) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_ || !(coverage > 0)) return;
  coverage = std::min(coverage, 1.0);
  uint8_t* p = &image_.at(y, x, 0);
  p[0] = mix(p[0], color.r, coverage);
  p[1] = mix(p[1], color.g, coverage);
  p[2] = mix(p[2], color.b, coverage);
}

Rgb Canvas::at(int x, int y) const {
  TORCH_CHECK(x >= 0 && y >= 0 && x < width_ && y < height_, "Canvas::at(", x, ", ", y, "): outside the ", width_,
              "x", height_, " canvas");
  return {image_.at(y, x, 0), image_.at(y, x, 1), image_.at(y, x, 2)};
}

void Canvas::fill_rect(double x, double y, double w, double h, Rgb color) {
  if (!(w > 0 && h > 0)) return;
  const auto [x0, x1] = centres_in(x, x + w, width_);
  const auto [y0, y1] = centres_in(y, y + h, height_);
  for (int row = y0; row < y1; ++row) {
    for (int column = x0; column < x1; ++column) blend(column, row, color, 1);
  }
}

// A pixel's coverage is clamp(width / 2 + 0.5 - distance, 0, 1), its centre's
// distance to the nearest segment. Taking the largest over the polyline's
// segments (one row at a time, then blending once) keeps joints from being
// blended twice.
void Canvas::polyline(const std::vector<Point>& points, Rgb color, double width) {
  if (!(width >= 1)) width = 1;
  const double reach = width / 2 + 0.5;  // no coverage at this distance or more
  std::vector<std::pair<Point, Point>> segments;
  double top = INFINITY, bottom = -INFINITY;
  for (size_t i = 1; i < points.size(); ++i) {
    if (!finite(points[i - 1]) || !finite(points[i])) continue;
    segments.emplace_back(points[i - 1], points[i]);
    top = std::min({top, points[i - 1].y, points[i].y});
    bottom = std::max({bottom, points[i - 1].y, points[i].y});
  }
  if (segments.empty()) return;

  std::vector<float> cover(width_, 0.0f);
  const auto [first_row, end_row] = centres_in(top - reach, bottom + reach, height_);
  for (int y = first_row; y < end_row; ++y) {
    const double cy = y + 0.5;
    int lo = width_, hi = 0;
    for (const auto& [a, b] : segments) {
      // Only the part of the segment within `reach` of this row can cover its
      // pixels, and only those within `reach` of that part's x extent.
      double t0 = 0, t1 = 1;
      const double dy = b.y - a.y;
      if (dy == 0) {
        if (std::abs(a.y - cy) >= reach) continue;
      } else {
        t0 = (cy - reach - a.y) / dy;
        t1 = (cy + reach - a.y) / dy;
        if (t0 > t1) std::swap(t0, t1);
        t0 = std::max(t0, 0.0);
        t1 = std::min(t1, 1.0);
        if (t0 > t1) continue;
      }
      const double xa = a.x + t0 * (b.x - a.x), xb = a.x + t1 * (b.x - a.x);
      const auto [first, end] = centres_in(std::min(xa, xb) - reach, std::max(xa, xb) + reach, width_);
      for (int x = first; x < end; ++x) {
        const double coverage = reach - distance_to_segment({x + 0.5, cy}, a, b);
        cover[x] = std::max(cover[x], static_cast<float>(std::min(coverage, 1.0)));
      }
      lo = std::min(lo, first);
      hi = std::max(hi, end);
    }
    for (int x = lo; x < hi; ++x) {
      blend(x, y, color, cover[x]);
      cover[x] = 0;
    }
  }
}

// Each sub-scanline adds, to every pixel, the length of it (in pixels, exact
// along x) that lies inside, over kSubRows. Points with a non-finite
// coordinate are left out of the polygon.
void Canvas::fill_polygon(const std::vector<Point>& points, Rgb color, double opacity) {
  if (!(opacity > 0)) return;
  opacity = std::min(opacity, 1.0);
  std::vector<Point> ring;
  for (const Point& p : points) {
    if (finite(p)) ring.push_back(p);
  }
  if (ring.size() < 3) return;
  double top = INFINITY, bottom = -INFINITY;
  for (const Point& p : ring) {
    top = std::min(top, p.y);
    bottom = std::max(bottom, p.y);
  }

  std::vector<float> cover(width_, 0.0f);
  std::vector<std::pair<double, int>> crossings;  // x, +1 for an edge going down, -1 going up
  const int first_row = static_cast<int>(std::clamp(std::floor(top), 0.0, double(height_)));
  const int end_row = static_cast<int>(std::clamp(std::ceil(bottom), 0.0, double(height_)));
  for (int y = first_row; y < end_row; ++y) {
    int lo = width_, hi = 0;
    auto add_span = [&](double from, double to) {
      from = std::max(from, 0.0);
      to = std::min(to, double(width_));
      if (!(from < to)) return;
      const int first = static_cast<int>(from), end = static_cast<int>(std::ceil(to));
      for (int x = first; x < end; ++x) {
        cover[x] += static_cast<float>((std::min(to, x + 1.0) - std::max(from, double(x))) / kSubRows);
      }
      lo = std::min(lo, first);
      hi = std::max(hi, end);
    };
    for (int k = 0; k < kSubRows; ++k) {
      const double sy = y + (k + 0.5) / kSubRows;
      crossings.clear();
      for (size_t i = 0; i < ring.size(); ++i) {
        const Point& a = ring[i];
        const Point& b = ring[(i + 1) % ring.size()];
        if ((a.y <= sy) == (b.y <= sy)) continue;  // the edge does not cross this sub-scanline
        crossings.emplace_back(a.x + (sy - a.y) * (b.x - a.x) / (b.y - a.y), b.y > a.y ? 1 : -1);
      }
      std::sort(crossings.begin(), crossings.end());
      int winding = 0;
      double start = 0;
      for (const auto& [x, direction] : crossings) {
        const int before = winding;
        winding += direction;
        if (before == 0) start = x;
        if (winding == 0) add_span(start, x);
      }
    }
    for (int x = lo; x < hi; ++x) {
      blend(x, y, color, opacity * std::min(cover[x], 1.0f));
      cover[x] = 0;
    }
  }
}

int Canvas::text_width(std::string_view text, int scale) {
  if (text.empty() || scale < 1) return 0;
  return (kGlyphAdvance * static_cast<int>(text.size()) - 1) * scale;
}

// Font pixel (column, row) of the i-th character lies `along` pixels from the
// text's start and `across` from its top; horizontal text runs right from
// `start`, vertical text runs up from `start` with its top on the left. The
// kGlyphHeight-row box is what is centred on `at`; descenders hang below it.
void Canvas::text(Point at, std::string_view text, Rgb color, int scale, TextAnchor anchor, bool vertical) {
  if (text.empty() || scale < 1 || !finite(at)) return;
  const double length = text_width(text, scale);
  const double shift = anchor == TextAnchor::Start ? 0 : anchor == TextAnchor::Middle ? length / 2 : length;
  const int64_t top = snap((vertical ? at.x : at.y) - kGlyphHeight * scale / 2.0);
  const int64_t start = vertical ? snap(at.y + shift) - 1 : snap(at.x - shift);
  auto put = [&](int64_t along, int64_t across) {
    const int64_t x = vertical ? top + across : start + along;
    const int64_t y = vertical ? start - along : top + across;
    if (x >= 0 && y >= 0 && x < width_ && y < height_) blend(static_cast<int>(x), static_cast<int>(y), color, 1);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const Glyph& g = glyph(text[i]);
    for (int row = 0; row < kGlyphRows; ++row) {
      for (int column = 0; column < kGlyphWidth; ++column) {
        if (!glyph_ink(g, column, row)) continue;
        const int64_t along = (static_cast<int64_t>(i) * kGlyphAdvance + column) * scale;
        for (int dy = 0; dy < scale; ++dy) {
          for (int dx = 0; dx < scale; ++dx) put(along + dx, int64_t{row} * scale + dy);
        }
      }
    }
  }
}

}  // namespace paisoar::report
