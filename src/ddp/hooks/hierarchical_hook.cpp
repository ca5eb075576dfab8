// The hierarchical hook for ranks that span nodes: reduce-scatter inside the
// node, allreduce each shard across nodes (among the ranks with the same local
// rank, so every local rank uses its own inter-node link for 1/L of the data),
// allgather inside the node. Inter-node traffic per rank is 1/L of a flat
// allreduce's. The first phase starts during backward; the others run when the
// bucket is finished.
#include <torch/torch.h>

#include <map>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/device_mesh.h"
#include "src/ddp/hooks/builtin_hooks.h"

namespace paisoar::ddp::detail {
namespace {

class HierarchicalHook : public CommHook {
 public:
  HierarchicalHook(std::shared_ptr<comm::Communicator> comm, int ranks_per_node)
      : world_(comm->size()),
        mesh_(comm, {comm->size() / ranks_per_node, ranks_per_node}, {"node", "local"}),
        local_(mesh_.group("local")),
        cross_(mesh_.group("node")) {}

  void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    const int64_t parts = local_->size();
    const int64_t shard = (flat.numel() + parts - 1) / parts;
    auto& s = state_[bucket];
    if (!s.padded.defined() || s.padded.numel() != shard * parts) {
      s.padded = torch::zeros({shard * parts}, flat.options());
      s.shard = torch::empty({shard}, flat.options());
    }
    s.padded.narrow(0, 0, flat.numel()).copy_(flat);
    count_bytes(s.padded);
    s.pending = local_->reduce_scatter(s.shard, s.padded, comm::ReduceOp::Sum);
  }

  void finish(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    auto& s = state_.at(bucket);
    s.pending.wait();
    count_bytes(s.shard);
    cross_->allreduce(s.shard, comm::ReduceOp::Sum).wait();
    s.shard.div_(world_);
    count_bytes(s.shard);
    local_->allgather_into(s.padded, s.shard).wait();
    flat.copy_(s.padded.narrow(0, 0, flat.numel()));
  }

  void reset() override { state_.clear(); }

 private:
  struct State {
    torch::Tensor padded, shard;
    comm::Work pending;
  };
  int world_;
  comm::DeviceMesh mesh_;
  std::shared_ptr<comm::Communicator> local_, cross_;
  std::map<size_t, State> state_;
};

}  // namespace

std::unique_ptr<CommHook> make_hierarchical_hook(std::shared_ptr<comm::Communicator> comm,
                                                 int ranks_per_node) {
  TORCH_CHECK(ranks_per_node > 0 && comm->size() % ranks_per_node == 0,
              "hierarchical allreduce: ", comm->size(), " ranks do not split into nodes of ",
              ranks_per_node, "; set DdpOptions::ranks_per_node to a divisor of the world size");
  return std::make_unique<HierarchicalHook>(std::move(comm), ranks_per_node);
}

}  // namespace paisoar::ddp::detail
