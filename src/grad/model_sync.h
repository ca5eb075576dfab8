// Making ranks agree on a model before training: the same parameter names,
// shapes and dtypes everywhere, then rank 0's values everywhere.
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::grad::detail {

// Collective. Throws c10::Error on every rank when some rank's list of
// (name, tensor) differs from rank 0's, naming `component` (the wrapper the
// user built) and the first difference: e.g. "ZeroOptimizer: the model
// differs across ranks: rank 1 has parameter 'fc.weight' with shape [10, 64], rank 0 [10, 128]".
void check_same_tensors(comm::Communicator& comm, const std::string& component, const std::string& what,
                        const std::vector<std::pair<std::string, torch::Tensor>>& named);

// Collective: copies rank `root`'s values of `tensors` into every rank's,
// one broadcast per dtype/device (the tensors flattened into one buffer).
void broadcast_tensors(comm::Communicator& comm, const std::vector<torch::Tensor>& tensors,
                       int root = 0);

}  // namespace paisoar::grad::detail
