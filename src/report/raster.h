// A laid-out Figure drawn on a Canvas, for the report's PNG: the same shapes
// the page's SVG has, in the bitmap font.
#pragma once

#include "src/report/canvas.h"
#include "src/report/chart.h"

namespace paisoar::report {

// Draws `figure` with its top-left corner at `origin` of `canvas`; what falls
// outside the canvas is clipped.
void draw(const Figure& figure, Canvas& canvas, Point origin);

}  // namespace paisoar::report
