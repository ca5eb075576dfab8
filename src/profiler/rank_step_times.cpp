// gather_step_times: one allgather of each rank's mean step time.
#include "paisoar/profiler/rank_step_times.h"

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"

namespace paisoar::profiler {

std::vector<double> gather_step_times(comm::Communicator& comm, double mean_step_s) {
  torch::Tensor mine = torch::full({1}, mean_step_s, torch::kFloat64);
  torch::Tensor all = torch::empty({comm.size()}, torch::kFloat64);
  comm.allgather_into(all, mine).wait();
  const double* p = all.data_ptr<double>();
  return std::vector<double>(p, p + comm.size());
}

}  // namespace paisoar::profiler
