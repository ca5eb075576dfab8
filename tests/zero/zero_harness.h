// Test harness for ZeRO: the same tiny training recipe run by plain DDP (the
// reference) and by ZeroOptimizer at stages 1-3, on N thread ranks, returning
// every rank's final parameters.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <mutex>
#include <vector>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/ddp.h"
#include "paisoar/zero.h"
#include "tests/support/thread_ranks.h"

namespace paisoar::testing {

struct Recipe {
  bool adamw = false;    // else SGD with momentum 0.9
  bool scaler = false;   // GradScaler (with the Communicator)
  int micro = 1;         // micro-steps per step (no_sync on all but the last)
  double clip = 0;       // > 0: clip by global norm before the step
  int steps = 3;
};

// data[step][micro][rank]
struct Batch {
  torch::Tensor x, y;
};
using Data = std::vector<std::vector<std::vector<Batch>>>;

inline Data make_data(int world, const Recipe& r, int64_t batch = 4) {
  torch::manual_seed(11);
  Data data(r.steps);
  for (auto& step : data) {
    step.resize(r.micro);
    for (auto& micro : step) {
      for (int k = 0; k < world; ++k) micro.push_back({torch::randn({batch, 8}), torch::randint(4, {batch})});
    }
  }
  return data;
}

// 8 -> 13 -> 4 (so no unit divides evenly by 2 or 3): 117 + 13 + 52 + 4 = 186 parameters.
inline torch::nn::Sequential make_net() {
  return torch::nn::Sequential(torch::nn::Linear(8, 13), torch::nn::Functional(torch::relu),
                               torch::nn::Linear(13, 4));
}

inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Recipe& r, std::vector<torch::Tensor> params) {
  if (r.adamw) {
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  }
  return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1).momentum(0.9));
}

inline zero::ZeroOptions zero_options(int stage) {
  zero::ZeroOptions o;
  o.stage = stage;
  o.first_bucket_mb = o.bucket_cap_mb = 0.0002;  // ~200 bytes: several units
  o.warn_single_rank = false;
  return o;
}

// One training step shared by DDP and ZeRO: `forward`, `no_sync` (a guard
// factory) and the optimizer differ.
template <typename Forward, typename NoSync, typename Clip>
void train_step(const Recipe& r, const std::vector<std::vector<Batch>>& step, int rank, Forward forward,
                NoSync no_sync, Clip clip, torch::optim::Optimizer& opt, amp::GradScaler& scaler) {
  for (int m = 0; m < r.micro; ++m) {
    auto run = [&] {
      auto loss = torch::cross_entropy_loss(forward(step[m][rank].x), step[m][rank].y) / r.micro;
      (r.scaler ? scaler.scale(loss) : loss).backward();
    };
    if (m + 1 < r.micro) {
      auto guard = no_sync();
      run();
    } else {
      run();
    }
  }
  if (r.clip > 0) {
    if (r.scaler) scaler.unscale_(opt);
    clip(r.clip);
  }
  if (r.scaler) {
    scaler.step(opt);
    scaler.update();
  } else {
    opt.step();
  }
}

inline torch::nn::Sequential rank_net(int rank, std::mutex& mutex) {
  std::lock_guard<std::mutex> lock(mutex);
  torch::manual_seed(100 + rank);  // differs per rank: both DDP and ZeRO broadcast rank 0's
  return make_net();
}

inline amp::GradScaler make_scaler(const Recipe& r, std::shared_ptr<comm::Communicator> comm) {
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  o.enabled = r.scaler;
  return amp::GradScaler(o, std::move(comm));
}

// Every rank's final parameters under plain DDP.
inline std::vector<std::vector<torch::Tensor>> run_ddp(int world, const Recipe& r, const Data& data) {
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> out(world);
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto net = rank_net(rank, mutex);
    DistributedDataParallel<torch::nn::Sequential> ddp(net, comm);
    auto opt = make_optimizer(r, net->parameters());
    auto scaler = make_scaler(r, comm);
    for (const auto& step : data) {
      opt->zero_grad();
      train_step(
          r, step, rank, [&](const torch::Tensor& x) { return ddp(x); }, [&] { return ddp.no_sync(); },
          [&](double max_norm) { torch::nn::utils::clip_grad_norm_(net->parameters(), max_norm); }, *opt, scaler);
    }
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& p : net->parameters()) out[rank].push_back(p.detach().clone());
  });
  return out;
}

// The model ZeRO trains: the Sequential itself (stages 1-2) or a LayerList over it (stage 3).
inline std::shared_ptr<torch::nn::Module> zero_model(torch::nn::Sequential net, int stage) {
  if (stage == 3) return zero::LayerList(net).ptr();
  return net.ptr();
}

inline torch::Tensor zero_forward(const std::shared_ptr<torch::nn::Module>& model, int stage, const torch::Tensor& x) {
  if (stage == 3) return std::dynamic_pointer_cast<zero::LayerListImpl>(model)->forward(x);
  return std::dynamic_pointer_cast<torch::nn::SequentialImpl>(model)->forward(x);
}

inline zero::OptimizerFactory factory(const Recipe& r) {
  return [r](const std::vector<zero::ShardParam>& shard) { return make_optimizer(r, zero::tensors_of(shard)); };
}

// Every rank's final parameters (gathered whole) under ZeRO `stage`.
inline std::vector<std::vector<torch::Tensor>> run_zero(int world, int stage, const Recipe& r, const Data& data) {
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> out(world);
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = zero_model(rank_net(rank, mutex), stage);
    zero::ZeroOptimizer opt(model, comm, factory(r), zero_options(stage));
    auto scaler = make_scaler(r, comm);
    for (const auto& step : data) {
      opt.zero_grad();
      train_step(
          r, step, rank, [&](const torch::Tensor& x) { return zero_forward(model, stage, x); },
          [&] { return opt.no_sync(); }, [&](double max_norm) { opt.clip_grad_norm_(max_norm); }, opt, scaler);
    }
    auto full = opt.full_parameters();
    std::lock_guard<std::mutex> lock(mutex);
    out[rank] = full;
  });
  return out;
}

inline void expect_close(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                         double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], want[i], rtol, atol))
        << "tensor " << i << " max diff " << (got[i] - want[i]).abs().max().item<double>();
  }
}

}  // namespace paisoar::testing
