// Chart: a plot of series against the step (lines, or areas stacked in
// series order), and lay_out, which turns it into a Figure: shapes in pixels
// (axes, ticks, labels, legend, the curves) that svg.h writes for the page
// and raster.h draws for the PNG, so both show the same chart.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "src/report/draw.h"

namespace paisoar::report {

struct Series {
  std::string label;
  Rgb color;
  std::vector<Point> points;  // data coordinates, x ascending; a non-finite y breaks the line
};

struct Chart {
  std::string title;
  std::string x_label = "step";
  std::string y_label;
  std::vector<Series> series;
  bool stacked = false;  // areas, each on top of the ones before (they share x)
  bool log_y = false;    // base-2 y axis (the loss scale); y <= 0 is left out
  bool markers = false;  // a dot at each point (few points: evaluations)
  // Steps the x axis covers besides the data's (NaN: none), so a chart with
  // few points lines up with the run's other charts.
  double x_from = std::numeric_limits<double>::quiet_NaN();
  double x_to = std::numeric_limits<double>::quiet_NaN();

  // At least one finite point (positive under log_y).
  bool has_data() const;
};

struct Shape {
  enum class Kind { Rect, Line, Area, Dot, Text };
  Kind kind = Kind::Line;
  // Rect: {top-left, bottom-right}; Line, Area: the path; Dot, Text: {at}.
  std::vector<Point> points;
  Rgb color;
  double width = 1;    // Line: stroke; Dot: radius
  double opacity = 1;  // Area, Rect
  bool dashed = false; // Line (grid lines)
  std::string text;    // Text; Dot: its tooltip on the page
  double size = 12;    // Text: pixel height
  TextAnchor anchor = TextAnchor::Start;
  bool vertical = false;  // Text: reads bottom to top
};

struct Figure {
  double width = 0, height = 0;
  std::vector<Shape> shapes;
};

// The chart in a width x height box. A chart without data gets its title and
// a line saying so. REQUIRES: width, height >= 100.
Figure lay_out(const Chart& chart, double width, double height);

// Tick positions covering the data range [lo, hi] (the first at or below lo,
// the last at or above hi): multiples of 1, 2 or 5 x 10^k, about `count` + 1
// of them. lo == hi gives ticks around it. REQUIRES: finite lo <= hi.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

// A number in at most 4 significant figures, with k/M/G for thousands up
// ("0.0123", "12.5", "65.5k"); "nan"/"inf" for those.
std::string format_number(double value);

// The i-th colour of the report's palette (cycles).
Rgb palette(size_t i);

}  // namespace paisoar::report
