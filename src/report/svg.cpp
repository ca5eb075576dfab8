// to_svg: one element per Shape, paths broken where a point is not finite.
#include "src/report/svg.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace paisoar::report {
namespace {

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

// "M x y L x y ...", a new M after each non-finite point; `close` ends each run with Z.
std::string path_data(const std::vector<Point>& points, bool close) {
  std::string d;
  bool pen_down = false;
  for (const auto& p : points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) {
      pen_down = false;
      continue;
    }
    d += pen_down ? 'L' : 'M';
    d += num(p.x);
    d += ' ';
    d += num(p.y);
    d += ' ';
    pen_down = true;
  }
  if (close && !d.empty()) d += "Z";
  return d;
}

const char* anchor_name(TextAnchor anchor) {
  switch (anchor) {
    case TextAnchor::Start: return "start";
    case TextAnchor::Middle: return "middle";
    case TextAnchor::End: return "end";
  }
  return "start";
}

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string to_svg(const Figure& f, const std::string& label) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(f.width) << "\" height=\"" << num(f.height)
      << "\" viewBox=\"0 0 " << num(f.width) << " " << num(f.height) << "\" role=\"img\"><title>"
      << escape_xml(label) << "</title>\n";
  for (const Shape& s : f.shapes) {
    switch (s.kind) {
      case Shape::Kind::Rect:
        svg << "<rect x=\"" << num(s.points[0].x) << "\" y=\"" << num(s.points[0].y) << "\" width=\""
            << num(s.points[1].x - s.points[0].x) << "\" height=\"" << num(s.points[1].y - s.points[0].y)
            << "\" fill=\"" << s.color.hex() << "\" fill-opacity=\"" << s.opacity << "\"/>\n";
        break;
      case Shape::Kind::Line:
        svg << "<path d=\"" << path_data(s.points, false) << "\" fill=\"none\" stroke=\"" << s.color.hex()
            << "\" stroke-width=\"" << s.width << "\" stroke-linejoin=\"round\""
            << (s.dashed ? " stroke-dasharray=\"4 4\"" : "") << "/>\n";
        break;
      case Shape::Kind::Area:
        svg << "<path d=\"" << path_data(s.points, true) << "\" fill=\"" << s.color.hex() << "\" fill-opacity=\""
            << s.opacity << "\" stroke=\"none\"/>\n";
        break;
      case Shape::Kind::Dot:
        svg << "<circle cx=\"" << num(s.points[0].x) << "\" cy=\"" << num(s.points[0].y) << "\" r=\"" << s.width
            << "\" fill=\"" << s.color.hex() << "\"><title>" << escape_xml(s.text) << "</title></circle>\n";
        break;
      case Shape::Kind::Text: {
        const Point at = s.points[0];
        svg << "<text x=\"" << num(at.x) << "\" y=\"" << num(at.y) << "\" font-size=\"" << s.size
            << "\" fill=\"" << s.color.hex() << "\" text-anchor=\"" << anchor_name(s.anchor)
            << "\" dominant-baseline=\"central\"";
        if (s.vertical) svg << " transform=\"rotate(-90 " << num(at.x) << " " << num(at.y) << ")\"";
        svg << ">" << escape_xml(s.text) << "</text>\n";
        break;
      }
    }
  }
  svg << "</svg>";
  return svg.str();
}

}  // namespace paisoar::report
