// A laid-out Figure as an inline SVG element, for the report's HTML page:
// dots carry their value as a tooltip (<title>), text is escaped.
#pragma once

#include <string>

#include "src/report/chart.h"

namespace paisoar::report {

// `text` with &, <, >, " and ' as XML/HTML entities.
std::string escape_xml(const std::string& text);

// An <svg> element of the figure's size; `label` is its accessible title.
std::string to_svg(const Figure& figure, const std::string& label);

}  // namespace paisoar::report
