// Rgb::hex (the one place colours become CSS/SVG text) and the text metrics
// layouts use.
#include "src/report/draw.h"

#include <algorithm>
#include <cstdio>

#include "src/report/canvas.h"

namespace paisoar::report {

std::string Rgb::hex() const {
  char text[8];
  std::snprintf(text, sizeof(text), "#%02x%02x%02x", r, g, b);
  return text;
}

int pixel_font_scale(double size) { return size < 12 ? 1 : 2; }

double text_extent(const std::string& text, double size) {
  // 0.62 em per character covers common sans-serif fonts' digits and letters.
  return std::max<double>(Canvas::text_width(text, pixel_font_scale(size)), 0.62 * size * text.size());
}

}  // namespace paisoar::report
