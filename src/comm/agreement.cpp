// any_rank: a 1-element MAX allreduce of the local flag.
#include "paisoar/comm/agreement.h"

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"

namespace paisoar::comm {

bool any_rank(const std::shared_ptr<Communicator>& comm, bool local) {
  if (!comm || comm->size() <= 1) return local;
  torch::Tensor flag = torch::full({1}, local ? 1.0f : 0.0f);
  comm->allreduce(flag, ReduceOp::Max).wait();
  return flag.item<float>() > 0;
}

}  // namespace paisoar::comm
