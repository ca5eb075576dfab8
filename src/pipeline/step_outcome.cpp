// agree_on_outcome: the allgather of (failed, loss) and the broadcast of the
// first failure's text.
#include "src/pipeline/step_outcome.h"

#include <torch/types.h>

#include <cstring>

namespace paisoar::pipeline::detail {

StepOutcome agree_on_outcome(comm::Communicator& group, const std::string& error, double loss) {
  const int size = group.size();
  torch::Tensor mine = torch::tensor({error.empty() ? 0.0 : 1.0, loss}, torch::kFloat64);
  torch::Tensor all = mine;
  if (size > 1) {
    // c10d's allgather, not allgather_into: its tags do not depend on how many
    // sends and recvs each rank issued, and those differ between stages.
    all = torch::empty({size, 2}, torch::kFloat64);
    std::vector<torch::Tensor> rows;
    for (int r = 0; r < size; ++r) rows.push_back(all[r]);
    group.allgather(rows, mine).wait();
  }
  const auto* a = all.data_ptr<double>();
  StepOutcome out;
  out.loss = a[2 * (size - 1) + 1];
  for (int r = 0; r < size && out.failed_rank < 0; ++r) {
    if (a[2 * r] != 0) out.failed_rank = r;
  }
  if (out.failed_rank < 0) return out;
  out.failed = true;
  if (size == 1) {
    out.error = error;
    return out;
  }
  // Its length, then its bytes.
  torch::Tensor length = torch::tensor({static_cast<int64_t>(error.size())}, torch::kInt64);
  group.broadcast(length, out.failed_rank).wait();
  torch::Tensor bytes = torch::empty({length.item<int64_t>()}, torch::kUInt8);
  if (group.rank() == out.failed_rank) std::memcpy(bytes.data_ptr(), error.data(), error.size());
  if (bytes.numel() > 0) group.broadcast(bytes, out.failed_rank).wait();
  out.error.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
  return out;
}

}  // namespace paisoar::pipeline::detail
