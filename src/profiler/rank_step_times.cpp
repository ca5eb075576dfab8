// gather_rank_rows: one allgather of each rank's row of fp64 numbers.
#include "paisoar/profiler/rank_step_times.h"

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"

namespace paisoar::profiler {

std::vector<std::vector<double>> gather_rank_rows(comm::Communicator& comm, const std::vector<double>& mine) {
  const auto width = static_cast<int64_t>(mine.size());
  torch::Tensor row = torch::tensor(mine, torch::kFloat64).reshape({width});
  torch::Tensor all = torch::empty({comm.size() * width}, torch::kFloat64);
  comm.allgather_into(all, row).wait();
  const double* p = all.data_ptr<double>();
  std::vector<std::vector<double>> rows;
  for (int r = 0; r < comm.size(); ++r) rows.emplace_back(p + r * width, p + (r + 1) * width);
  return rows;
}

std::vector<double> gather_step_times(comm::Communicator& comm, double mean_step_s) {
  std::vector<double> times;
  for (const auto& row : gather_rank_rows(comm, {mean_step_s})) times.push_back(row[0]);
  return times;
}

}  // namespace paisoar::profiler
