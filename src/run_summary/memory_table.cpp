// gather_memory_reports: a [world, 8] int64 table, each rank filling its row,
// summed by one allreduce.
#include "src/run_summary/memory_table.h"

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"

namespace paisoar::train {

std::vector<memory::MemoryReport> gather_memory_reports(comm::Communicator& comm,
                                                        const memory::MemoryReport& mine) {
  constexpr int64_t kFields = 8;
  const int64_t world = comm.size();
  torch::Tensor table = torch::zeros({world, kFields}, torch::kLong);
  const int64_t row[kFields] = {mine.parameter_bytes,          mine.gradient_bytes,
                                mine.optimizer_state_bytes,    mine.peak_activation_bytes,
                                mine.allocator.current_bytes,  mine.allocator.peak_bytes,
                                mine.allocator.reserved_bytes, mine.resident_bytes};
  for (int64_t f = 0; f < kFields; ++f) table[comm.rank()][f] = row[f];
  comm.allreduce(table).wait();
  std::vector<memory::MemoryReport> reports;
  for (int64_t r = 0; r < world; ++r) {
    auto v = table[r];
    memory::MemoryReport m;
    m.rank = static_cast<int>(r);
    m.device = mine.device;
    m.parameter_bytes = v[0].item<int64_t>();
    m.gradient_bytes = v[1].item<int64_t>();
    m.optimizer_state_bytes = v[2].item<int64_t>();
    m.peak_activation_bytes = v[3].item<int64_t>();
    m.allocator.current_bytes = v[4].item<int64_t>();
    m.allocator.peak_bytes = v[5].item<int64_t>();
    m.allocator.reserved_bytes = v[6].item<int64_t>();
    m.resident_bytes = v[7].item<int64_t>();
    reports.push_back(m);
  }
  return reports;
}

}  // namespace paisoar::train
