// Canvas: an RGB pixel buffer that charts are rasterised on for the report's
// PNG, with anti-aliased lines, filled polygons and text in a built-in 5x7
// bitmap font (so a PNG needs no font files and looks the same everywhere).
// Not thread-safe: one thread draws on a canvas.
#pragma once

#include <string_view>
#include <vector>

#include "paisoar/data/image.h"
#include "src/report/draw.h"

namespace paisoar::report {

class Canvas {
 public:
  // Throws c10::ValueError unless 0 < width, height <= 16384.
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }

  // Parts outside the canvas are clipped; nothing is drawn for a rectangle
  // of zero or negative size.
  void fill_rect(double x, double y, double w, double h, Rgb color);
  // Joined segments of `width` pixels (>= 1), anti-aliased; fewer than two
  // points draw nothing. Points with a non-finite coordinate break the line.
  void polyline(const std::vector<Point>& points, Rgb color, double width = 1.5);
  // The polygon's inside (non-zero winding), blended at `opacity` in [0, 1].
  void fill_polygon(const std::vector<Point>& points, Rgb color, double opacity = 1);
  // `text` (printable ASCII; anything else shows as '?') in the built-in font,
  // each font pixel drawn as scale x scale pixels (7 * scale pixels tall; the
  // tails of g j p q y , ; hang one more font row below).
  // `vertical`: turned 90 degrees anticlockwise, reading bottom to top, with
  // `at` and `anchor` applying along the turned text.
  void text(Point at, std::string_view text, Rgb color, int scale = 2, TextAnchor anchor = TextAnchor::Start,
            bool vertical = false);
  // The width in pixels `text` takes at `scale`.
  static int text_width(std::string_view text, int scale = 2);

  // Colour at (x, y). REQUIRES: inside the canvas.
  Rgb at(int x, int y) const;
  // The pixels as a 3-channel image (for data::encode_png).
  const data::Image& image() const { return image_; }

 private:
  // Blends `color` into pixel (x, y) with `coverage` in [0, 1]; ignores pixels outside.
  void blend(int x, int y, Rgb color, double coverage);

  int width_, height_;
  data::Image image_;
};

}  // namespace paisoar::report
