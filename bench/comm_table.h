// The table of `paisoar bench comm`: for each size from 4 KiB to 256 MiB and
// each collective, the time of every implementation under comparison
// (paisoar and its peers: c10d's Gloo, Open MPI), measured in blocks that
// alternate, the one going first rotating, plus this machine's limit (a
// memcpy of the tensor on every rank at once). The table and its JSON are
// written by rank 0. bench/comm_bench.cpp runs it with the Gloo peer;
// bench/comm_mpi_main.cpp (built only where Open MPI is installed) with Open
// MPI's too.
#pragma once

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace paisoar::bench {

// One implementation of the collectives: blocking, in place where the
// collective is, over fp32 (bf16 for allreduce_bf16).
class CommSide {
 public:
  virtual ~CommSide() = default;
  virtual std::string name() const = 0;
  // Whether it has `op` (one of comm_ops()).
  virtual bool has(const std::string& op) const = 0;
  virtual void allreduce(at::Tensor& t, bool average) = 0;
  virtual void reduce_scatter(at::Tensor& out, at::Tensor& in) = 0;
  virtual void allgather_into(at::Tensor& out, at::Tensor& in) = 0;
  virtual void allgather(std::vector<at::Tensor>& outs, at::Tensor& in) = 0;
  virtual void broadcast(at::Tensor& t, int root) = 0;
};

// allreduce, allreduce_avg, allreduce_bf16, reduce_scatter, allgather_into,
// allgather (into a list), broadcast.
const std::vector<std::string>& comm_ops();

struct CommBenchOptions {
  int nproc = 2;
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 256 << 20;
  double seconds_per_point = 0.2;  // target time of one block of calls
  int repeats = 5;                 // blocks per (size, op, side); the median is kept
  std::string ops;                 // comma-separated subset of comm_ops(); empty: all
  std::string json = "comm_bench.json";
};

// The options both programs take.
void add_comm_bench_options(CLI::App& app, CommBenchOptions& o);

// What the ranks need besides the sides: a barrier before every block, and a
// maximum over ranks (so every rank runs the same number of calls).
struct CommBenchRanks {
  int rank = 0;
  int size = 1;
  std::function<void()> barrier;
  std::function<int64_t(int64_t)> max_over_ranks;
};

// Measures every side at every size and op it has; rank 0 prints the table
// and writes o.json. `title` heads the table. Returns 0.
int run_comm_table(const CommBenchOptions& o, const CommBenchRanks& ranks,
                   const std::vector<std::unique_ptr<CommSide>>& sides, const std::string& title);

}  // namespace paisoar::bench
