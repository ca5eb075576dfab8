// Placements: ZeRO's stages as data, and a rank's coordinate in the mesh.
#include "paisoar/layout/placements.h"

#include <c10/util/Exception.h>

namespace paisoar::layout {

DataSharding DataSharding::of_zero_stage(int64_t stage) {
  TORCH_CHECK_VALUE(stage >= 0 && stage <= 3, "zero.stage: ", stage, " is not a ZeRO stage; give 0 (none), 1 "
                    "(optimizer state), 2 (+ gradients) or 3 (+ parameters)");
  DataSharding s;
  s.optimizer_state = stage >= 1;
  s.gradients = stage >= 2;
  s.parameters = stage >= 3;
  return s;
}

bool DataSharding::shards(StateKind kind) const {
  switch (kind) {
    case StateKind::Parameters:
      return parameters;
    case StateKind::Gradients:
      return gradients;
    case StateKind::OptimizerState:
      break;
  }
  return optimizer_state;
}

std::optional<DataSharding> DataSharding::more() const {
  if (parameters) return std::nullopt;
  return of_zero_stage(stage() + 1);
}

int DataSharding::stage() const { return parameters ? 3 : gradients ? 2 : optimizer_state ? 1 : 0; }

std::string DataSharding::what() const {
  if (parameters) return "optimizer state, gradients and parameters";
  if (gradients) return "optimizer state and gradients";
  return optimizer_state ? "optimizer state" : "none";
}

Placements::Placements(hybrid::ParallelLayout mesh, DataSharding sharding, MeshCoordinate at)
    : mesh_(mesh), sharding_(sharding), at_(at) {
  TORCH_CHECK_VALUE(at.data >= 0 && at.data < mesh.data && at.pipeline >= 0 && at.pipeline < mesh.pipeline &&
                        at.tensor >= 0 && at.tensor < mesh.tensor,
                    "Placements: coordinate (", at.data, ", ", at.pipeline, ", ", at.tensor, ") is outside the mesh ",
                    mesh.to_string());
}

int64_t Placements::shards(StateKind kind) const { return sharding_.shards(kind) ? mesh_.data : 1; }

std::string Placements::describe() const {
  std::string text = mesh_.to_string() + ", ";
  if (!sharding_.any()) return text + "DDP";
  return text + "ZeRO-" + std::to_string(sharding_.stage()) + " (" + sharding_.what() + " sharded over the " +
         std::to_string(mesh_.data) + " data rank" + (mesh_.data == 1 ? "" : "s") + ")";
}

}  // namespace paisoar::layout
