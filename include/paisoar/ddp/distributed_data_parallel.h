// DistributedDataParallel: wraps a module so that backward averages its
// gradients across ranks, overlapped with backward itself; PyTorch's DDP for
// LibTorch. Usage:
//
//   auto comm = paisoar::comm::Communicator::from_env();
//   Net net;
//   paisoar::ddp::DistributedDataParallel<Net> ddp(net, comm);  // broadcasts rank 0's weights
//   torch::optim::SGD opt(net->parameters(), 0.1);
//   for (auto& [x, y] : my_shard) {
//     opt.zero_grad();
//     auto loss = torch::nll_loss(ddp(x), y);
//     loss.backward();                                      // gradients averaged here
//     opt.step();
//   }
//
// Gradient accumulation: `{ auto guard = ddp.no_sync(); ... backward(); }` for
// all micro-batches but the last.
#pragma once

#include <torch/types.h>

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/grad/no_sync.h"

namespace paisoar::ddp {

template <typename ModuleHolder>
class DistributedDataParallel {
 public:
  // Collective: see GradientReducer's constructor for what it checks and syncs.
  DistributedDataParallel(ModuleHolder module, std::shared_ptr<comm::Communicator> comm,
                          DdpOptions options = {})
      : module_(std::move(module)),
        reducer_(std::make_unique<GradientReducer>(module_.ptr(), std::move(comm), options)) {}

  // The wrapped module's forward, with the reducer armed around it.
  template <typename... Args>
  auto operator()(Args&&... args) {
    reducer_->pre_forward();
    auto out = module_->forward(std::forward<Args>(args)...);
    reducer_->post_forward(tensors_of(out));
    return out;
  }

  // While the guard lives, backward accumulates gradients without communicating.
  using NoSync = grad::NoSync<GradientReducer>;
  NoSync no_sync() { return NoSync(*reducer_); }

  ModuleHolder& module() { return module_; }
  GradientReducer& reducer() { return *reducer_; }

 private:
  static std::vector<torch::Tensor> tensors_of(const torch::Tensor& t) { return {t}; }
  static std::vector<torch::Tensor> tensors_of(const std::vector<torch::Tensor>& v) { return v; }
  template <typename... Ts>
  static std::vector<torch::Tensor> tensors_of(const std::tuple<Ts...>& tuple) {
    std::vector<torch::Tensor> out;
    std::apply([&](const auto&... item) { (append(out, item), ...); }, tuple);
    return out;
  }
  template <typename T>
  static void append(std::vector<torch::Tensor>& out, const T& item) {
    if constexpr (std::is_same_v<T, torch::Tensor>) out.push_back(item);
  }
  // Outputs of other types: no tensors to search, unused parameters are found
  // at the end of backward instead (their buckets just start later).
  template <typename T>
  static std::vector<torch::Tensor> tensors_of(const T&) { return {}; }

  ModuleHolder module_;
  std::unique_ptr<GradientReducer> reducer_;
};

}  // namespace paisoar::ddp

namespace paisoar {
// The short name the article and most user code use.
template <typename ModuleHolder>
using DistributedDataParallel = ddp::DistributedDataParallel<ModuleHolder>;
}  // namespace paisoar
