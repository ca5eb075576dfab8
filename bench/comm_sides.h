// The two sides of `bench comm` that every build has: paisoar's Communicator
// (on what Backend::Auto chose: shared memory for ranks on one host) and raw
// c10d ProcessGroupGloo on the same store and transport (comm_table.h).
#pragma once

#include "bench/comm_table.h"
#include "paisoar/comm.h"
#include "src/comm/raw_gloo_peer.h"

namespace paisoar::bench {

class PaisoarSide : public CommSide {
 public:
  explicit PaisoarSide(comm::Communicator& comm) : comm_(comm) {}
  std::string name() const override { return "paisoar"; }
  bool has(const std::string&) const override { return true; }
  void allreduce(at::Tensor& t, bool average) override {
    comm_.allreduce(t, average ? comm::ReduceOp::Avg : comm::ReduceOp::Sum).wait();
  }
  void reduce_scatter(at::Tensor& out, at::Tensor& in) override { comm_.reduce_scatter(out, in).wait(); }
  void allgather_into(at::Tensor& out, at::Tensor& in) override { comm_.allgather_into(out, in).wait(); }
  void allgather(std::vector<at::Tensor>& outs, at::Tensor& in) override { comm_.allgather(outs, in).wait(); }
  void broadcast(at::Tensor& t, int root) override { comm_.broadcast(t, root).wait(); }

 private:
  comm::Communicator& comm_;
};

// Gloo's own calls: AVG and bf16 reduced by Gloo 2.x itself; reduce-scatter
// and allgather into one tensor are c10d's _reduce_scatter_base and
// _allgather_base.
class GlooSide : public CommSide {
 public:
  explicit GlooSide(comm::Communicator& comm) : gloo_(comm) {}
  std::string name() const override { return "gloo"; }
  bool has(const std::string&) const override { return true; }
  void allreduce(at::Tensor& t, bool average) override { gloo_.allreduce(t, average); }
  void reduce_scatter(at::Tensor& out, at::Tensor& in) override { gloo_.reduce_scatter(out, in); }
  void allgather_into(at::Tensor& out, at::Tensor& in) override { gloo_.allgather_into(out, in); }
  void allgather(std::vector<at::Tensor>& outs, at::Tensor& in) override { gloo_.allgather(outs, in); }
  void broadcast(at::Tensor& t, int root) override { gloo_.broadcast(t, root); }

 private:
  comm::RawGlooPeer gloo_;
};

// The CommBenchRanks of `comm`.
inline CommBenchRanks ranks_of(comm::Communicator& comm) {
  CommBenchRanks r;
  r.rank = comm.rank();
  r.size = comm.size();
  r.barrier = [&comm] { comm.barrier().wait(); };
  r.max_over_ranks = [&comm](int64_t v) {
    auto t = at::tensor({v});
    comm.allreduce(t, comm::ReduceOp::Max).wait();
    return t.item<int64_t>();
  };
  return r;
}

}  // namespace paisoar::bench
