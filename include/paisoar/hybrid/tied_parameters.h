// TiedParameters: parameters that more than one pipeline stage holds, such as
// a tied embedding (the first stage's token embedding is the last stage's
// output projection). Every holding stage computes a part of the gradient;
// after the data-parallel average the holding stages sum their parts, so
// every copy takes the same update and stays equal to the one-rank model
// (Megatron-LM's embedding group). A global gradient norm counts each such
// parameter on its first holding stage only.
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/pipeline/partition.h"

namespace paisoar::hybrid {

class TiedParameters {
 public:
  // The parameters of `layers` (the whole model, named as in it) that the
  // stages of `plan` hold more than once, and the groups of the ranks that
  // sum them: one per (data, tensor) coordinate, its members the holding
  // stages. Collective over the mesh's world (the groups); null when no
  // parameter is held twice.
  static std::unique_ptr<TiedParameters> of(const models::LayerSequence& layers, const pipeline::PartitionPlan& plan,
                                            const HybridMesh& mesh);

  // The tied parameters this rank holds, by name ("" on ranks that hold none).
  const std::vector<std::string>& names() const { return names_; }
  // Whether this rank's stage counts the parameter in a global norm (the
  // first holding stage); false for one it does not hold.
  bool counts(const std::string& name) const;
  // Collective over the holding ranks: `held(name)` is this rank's gradient
  // of the parameter (the whole gradient, or its data-parallel shard: the
  // same elements on every holding stage), summed in place across them.
  void sum_gradients(const std::function<std::vector<torch::Tensor>(const std::string&)>& held);

 private:
  // The parameters one set of stages holds, and this rank's group of them.
  struct Tie {
    std::vector<std::string> names;
    std::shared_ptr<comm::Communicator> group;
  };
  std::vector<Tie> ties_;             // those this rank holds
  std::vector<std::string> names_;    // of ties_
  std::vector<std::string> counted_;  // names_ this stage counts
};

}  // namespace paisoar::hybrid
