// The drawing vocabulary a report's charts are laid out in: points in pixels
// (origin top-left, y down), colours, and text anchors. The same laid-out
// chart is written as SVG (the HTML page) and rasterised on a Canvas (the PNG).
#pragma once

#include <cstdint>
#include <string>

namespace paisoar::report {

struct Point {
  double x = 0, y = 0;
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  // "#rrggbb", for SVG and CSS.
  std::string hex() const;
};

// Where a text's x lies: its left end, middle or right end. Its y is the
// baseline-free vertical middle of the text (so labels centre on a tick).
enum class TextAnchor { Start, Middle, End };

// Text of pixel height `size` is drawn on a Canvas in the bitmap font at this
// scale (7 * scale pixels tall): 1 below 12, else 2.
int pixel_font_scale(double size);
// The width a layout reserves for `text` at `size`: enough for the bitmap
// font and for a proportional font in a browser.
double text_extent(const std::string& text, double size);

}  // namespace paisoar::report
