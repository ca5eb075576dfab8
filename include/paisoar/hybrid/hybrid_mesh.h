// HybridMesh: the world's ranks as a data x pipeline x tensor grid, with the
// groups each kind of parallelism talks over: the tensor group splits layers,
// the pipeline group passes activations between stages, the data group
// averages gradients between replicas, and the model group is one whole
// replica (pipeline x tensor), over which a global gradient norm is summed.
#pragma once

#include <memory>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/device_mesh.h"
#include "paisoar/hybrid/parallel_layout.h"

namespace paisoar::hybrid {

// Ranks are laid out row-major over (data, pipeline, tensor): the tensor
// coordinate varies fastest, so a tensor group is consecutive ranks (on one
// node when T divides the ranks per node, as Megatron-LM places them).
class HybridMesh {
 public:
  // Collective over `world`: every rank builds the same mesh. Throws
  // c10::ValueError with layout_problem()'s text when the layout does
  // not fit the world (every rank throws the same, before any collective).
  HybridMesh(std::shared_ptr<comm::Communicator> world, ParallelLayout layout);

  const ParallelLayout& layout() const { return layout_; }
  int data_rank() const { return mesh_.coordinate()[0]; }
  int pipeline_rank() const { return mesh_.coordinate()[1]; }
  int tensor_rank() const { return mesh_.coordinate()[2]; }

  const std::shared_ptr<comm::Communicator>& world() const { return world_; }
  std::shared_ptr<comm::Communicator> data_group() const { return mesh_.group(0); }
  std::shared_ptr<comm::Communicator> pipeline_group() const { return mesh_.group(1); }
  std::shared_ptr<comm::Communicator> tensor_group() const { return mesh_.group(2); }
  // The P x T ranks that share this rank's data coordinate.
  const std::shared_ptr<comm::Communicator>& model_group() const { return model_group_; }
  const comm::DeviceMesh& mesh() const { return mesh_; }

 private:
  static comm::DeviceMesh checked_mesh(const std::shared_ptr<comm::Communicator>& world,
                                       const ParallelLayout& layout);
  std::shared_ptr<comm::Communicator> world_;
  ParallelLayout layout_;
  comm::DeviceMesh mesh_;
  std::shared_ptr<comm::Communicator> model_group_;
};

}  // namespace paisoar::hybrid
