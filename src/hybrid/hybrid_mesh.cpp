// HybridMesh: the layout check, the three dimension groups (DeviceMesh) and
// the model group of each data coordinate.
#include "paisoar/hybrid/hybrid_mesh.h"

#include <c10/util/Exception.h>

#include <stdexcept>

namespace paisoar::hybrid {

comm::DeviceMesh HybridMesh::checked_mesh(const std::shared_ptr<comm::Communicator>& world,
                                          const ParallelLayout& layout) {
  if (!world) C10_THROW_ERROR(ValueError, "HybridMesh: the world communicator is null");
  const std::string problem = layout_problem(layout, world->size());
  if (!problem.empty()) C10_THROW_ERROR(ValueError, "HybridMesh: " + problem);
  return comm::DeviceMesh(world, {layout.data, layout.pipeline, layout.tensor}, {"data", "pipeline", "tensor"});
}

HybridMesh::HybridMesh(std::shared_ptr<comm::Communicator> world, ParallelLayout layout)
    : world_(world), layout_(layout), mesh_(checked_mesh(world, layout)) {
  // Every rank enumerates the data coordinates in the same order, as new_group requires.
  const int replica = layout_.pipeline * layout_.tensor;
  for (int d = 0; d < layout_.data; ++d) {
    std::vector<int> members;
    for (int i = 0; i < replica; ++i) members.push_back(d * replica + i);
    auto group = world_->new_group(members);
    if (group) model_group_ = group;
  }
}

}  // namespace paisoar::hybrid
