// ParallelLayout's text and its check against the world size.
#include "paisoar/hybrid/parallel_layout.h"

namespace paisoar::hybrid {

std::string ParallelLayout::to_string() const {
  return "data " + std::to_string(data) + " x pipeline " + std::to_string(pipeline) + " x tensor " +
         std::to_string(tensor);
}

std::string layout_problem(const ParallelLayout& layout, int world_size) {
  if (layout.data < 1 || layout.pipeline < 1 || layout.tensor < 1) {
    return layout.to_string() + ": every size must be at least 1";
  }
  if (layout.size() != world_size) {
    return layout.to_string() + " = " + std::to_string(layout.size()) + " ranks, but the world has " +
           std::to_string(world_size) + " ranks; choose sizes whose product is " + std::to_string(world_size);
  }
  return "";
}

}  // namespace paisoar::hybrid
