// N-rank DDP (threads over a HashStore) gives the same parameters after K SGD
// steps as one process averaging the N slices' losses, for an MLP, a CNN with
// BatchNorm and a model with unused parameters, with one or many buckets,
// with and without overlap and bucket rebuild, and with no_sync accumulation.
// Tolerance: rtol 1e-5, atol 1e-6 (fp32 sums in a different order).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <limits>
#include <mutex>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/ddp.h"
#include "tests/ddp/ddp_models.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;
using paisoar::testing::expect_close;
using paisoar::testing::snapshot;

namespace {

constexpr int kSteps = 3;
constexpr double kLr = 0.1;

struct Data {
  torch::Tensor x, y;
};

// Per step, per slice: inputs and targets.
std::vector<std::vector<Data>> make_data(int slices, std::vector<int64_t> shape, int64_t classes) {
  torch::manual_seed(7);
  std::vector<std::vector<Data>> steps(kSteps);
  for (auto& step : steps) {
    for (int s = 0; s < slices; ++s) {
      step.push_back({torch::randn(shape), torch::randint(classes, {shape[0]})});
    }
  }
  return steps;
}

template <typename Holder, typename Forward>
std::vector<torch::Tensor> reference(Holder model, const std::vector<std::vector<Data>>& data,
                                     Forward forward) {
  torch::optim::SGD opt(model->parameters(), kLr);
  for (const auto& step : data) {
    opt.zero_grad();
    torch::Tensor loss = torch::zeros({});
    for (size_t s = 0; s < step.size(); ++s) {
      loss = loss + torch::cross_entropy_loss(forward(model, step[s].x, static_cast<int>(s)),
                                             step[s].y);
    }
    (loss / static_cast<double>(step.size())).backward();
    opt.step();
  }
  return snapshot(*model);
}

// Rank `rank`'s model, seeded differently per rank (DDP must broadcast rank
// 0's); `mutex` serialises the global generator between rank threads.
template <typename Make>
auto rank_model(Make make, int rank, std::mutex& mutex) {
  std::lock_guard<std::mutex> lock(mutex);
  torch::manual_seed(100 + rank);
  return make();
}

template <typename Make, typename Forward>
void expect_ddp_matches_reference(int world, Make make, Forward forward,
                                  std::vector<int64_t> shape, ddp::DdpOptions options) {
  auto data = make_data(world, shape, 4);
  torch::manual_seed(100);  // rank 0's initial weights
  auto want = reference(make(), data, forward);
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> got(world);
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = rank_model(make, rank, mutex);
    DistributedDataParallel<decltype(model)> ddp(model, comm, options);
    torch::optim::SGD opt(model->parameters(), kLr);
    for (const auto& step : data) {
      opt.zero_grad();
      torch::cross_entropy_loss(forward(ddp, step[rank].x, rank), step[rank].y).backward();
      opt.step();
    }
    std::lock_guard<std::mutex> lock(mutex);
    got[rank] = snapshot(*model);
  });
  for (int r = 0; r < world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_close(got[r], want, 1e-5, 1e-6);
  }
}

// A module holder's forward, or the DDP wrapper's operator().
template <typename M, typename... Args>
torch::Tensor call(M& m, Args&&... args) {
  return m->forward(std::forward<Args>(args)...);
}
template <typename H, typename... Args>
torch::Tensor call(DistributedDataParallel<H>& ddp, Args&&... args) {
  return ddp(std::forward<Args>(args)...);
}

auto plain = [](auto& m, const torch::Tensor& x, int) { return call(m, x); };
auto branchy = [](auto& m, const torch::Tensor& x, int slice) { return call(m, x, slice % 2 == 1); };

ddp::DdpOptions tiny_buckets() {
  ddp::DdpOptions o;
  o.first_bucket_mb = o.bucket_cap_mb = 0.0004;  // ~400 bytes: several buckets
  return o;
}

class DdpWorlds : public ::testing::TestWithParam<int> {};

TEST_P(DdpWorlds, MlpMatchesOneProcessOnTheWholeBatch) {
  expect_ddp_matches_reference(GetParam(), paisoar::testing::make_mlp, plain, {6, 8}, {});
  expect_ddp_matches_reference(GetParam(), paisoar::testing::make_mlp, plain, {6, 8}, tiny_buckets());
}

TEST_P(DdpWorlds, BatchNormCnnMatches) {
  expect_ddp_matches_reference(GetParam(), paisoar::testing::make_bn_cnn, plain, {5, 1, 8, 8},
                               tiny_buckets());
}

TEST_P(DdpWorlds, UnusedParametersMatch) {
  auto options = tiny_buckets();
  options.find_unused_parameters = true;
  expect_ddp_matches_reference(GetParam(), [] { return paisoar::testing::Branchy(); }, branchy,
                               {6, 8}, options);
}

INSTANTIATE_TEST_SUITE_P(Ranks, DdpWorlds, ::testing::Values(2, 3, 4));

TEST(Ddp, HierarchicalOverTwoNodesOfTwoMatches) {
  auto options = tiny_buckets();
  options.ranks_per_node = 2;
  expect_ddp_matches_reference(4, paisoar::testing::make_mlp, plain, {6, 8}, options);
}

TEST(Ddp, NoOverlapAndNoRebuildGiveTheSameResult) {
  auto options = tiny_buckets();
  options.overlap = false;
  options.rebuild_buckets = false;
  expect_ddp_matches_reference(2, paisoar::testing::make_mlp, plain, {6, 8}, options);
}

TEST(Ddp, NoSyncAccumulationEqualsTheBigBatch) {
  const int world = 2, micro = 3;
  auto data = make_data(world * micro, {4, 8}, 4);
  torch::manual_seed(100);
  auto want = reference(paisoar::testing::make_mlp(), data, plain);
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> got(world);
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = rank_model(paisoar::testing::make_mlp, rank, mutex);
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm, tiny_buckets());
    torch::optim::SGD opt(model->parameters(), kLr);
    for (const auto& step : data) {
      opt.zero_grad();
      for (int m = 0; m < micro; ++m) {
        const auto& d = step[rank * micro + m];
        auto loss = [&] { return torch::cross_entropy_loss(ddp(d.x), d.y) / micro; };
        if (m + 1 < micro) {
          auto guard = ddp.no_sync();
          loss().backward();
        } else {
          loss().backward();
        }
      }
      opt.step();
    }
    std::lock_guard<std::mutex> lock(mutex);
    got[rank] = snapshot(*model);
  });
  for (int r = 0; r < world; ++r) expect_close(got[r], want, 1e-5, 1e-6);
}

// Registered before it is used: the first backward delivers `head` first,
// which reverse registration order puts last; the rebuild fixes that.
struct LateHeadImpl : torch::nn::Module {
  LateHeadImpl() {
    head = register_module("head", torch::nn::Linear(16, 4));
    body = register_module("body", torch::nn::Linear(8, 16));
  }
  torch::Tensor forward(torch::Tensor x) { return head(torch::relu(body(x))); }
  torch::nn::Linear head{nullptr}, body{nullptr};
};
TORCH_MODULE(LateHead);

TEST(Ddp, BucketsAreRebuiltInArrivalOrderAndResultsStayEqual) {
  expect_ddp_matches_reference(2, [] { return LateHead(); }, plain, {6, 8}, tiny_buckets());
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    LateHead model;
    DistributedDataParallel<LateHead> ddp(model, comm, tiny_buckets());
    // Parameters: 0 head.weight, 1 head.bias, 2 body.weight, 3 body.bias.
    EXPECT_EQ(ddp.reducer().bucket_assignment().front().front(), 3u);
    ddp(torch::randn({2, 8})).sum().backward();
    EXPECT_TRUE(ddp.reducer().last_stats().rebuilt);
    auto buckets = ddp.reducer().bucket_assignment();
    EXPECT_LT(buckets.front().front(), 2u) << "a head parameter should come first";
  });
}

}  // namespace

namespace {

// The scaler on top of DDP with accumulation: scaled micro-steps, no_sync on
// all but the last, one step per batch, equal to the unscaled reference; and a
// NaN on one rank skips the step on both (the average carries it everywhere).
TEST(Ddp, WorksWithTheGradScalerAndAccumulation) {
  const int world = 2, micro = 2;
  auto data = make_data(world * micro, {4, 8}, 4);
  torch::manual_seed(100);
  auto want = reference(paisoar::testing::make_mlp(), data, plain);
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> got(world);
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = rank_model(paisoar::testing::make_mlp, rank, mutex);
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
    torch::optim::SGD opt(model->parameters(), kLr);
    amp::GradScaler scaler({}, comm);
    auto run_step = [&](const std::vector<Data>& step, bool poison) {
      opt.zero_grad();
      for (int m = 0; m < micro; ++m) {
        const auto& d = step[rank * micro + m];
        auto loss = torch::cross_entropy_loss(ddp(d.x), d.y) / micro;
        if (poison && m == 0) loss = loss * std::numeric_limits<float>::quiet_NaN();
        if (m + 1 < micro) {
          auto guard = ddp.no_sync();
          scaler.scale(loss).backward();
        } else {
          scaler.scale(loss).backward();
        }
      }
      const bool stepped = scaler.step(opt);
      scaler.update();
      return stepped;
    };
    for (const auto& step : data) EXPECT_TRUE(run_step(step, false));
    auto before = snapshot(*model);
    EXPECT_FALSE(run_step(data[0], /*poison=*/rank == 1));
    expect_close(snapshot(*model), before, 0, 0);
    EXPECT_EQ(scaler.get_scale(), 65536.0 / 2);
    std::lock_guard<std::mutex> lock(mutex);
    got[rank] = before;
  });
  for (int r = 0; r < world; ++r) expect_close(got[r], want, 1e-5, 1e-6);
}

}  // namespace

namespace {

// What the review of the first version caught: with find_unused_parameters,
// gradients zeroed after forward, a rank-0-only evaluation forward, SGD with
// momentum, and a head used only in a no_sync micro-batch must all still give
// the reference's parameters.
TEST(Ddp, UnusedParametersWithMomentumNoSyncAndEvaluationForwards) {
  const int world = 2, micro = 2;
  auto data = make_data(world * micro, {4, 8}, 4);
  // Micro-batch 0 of every rank uses head b, micro-batch 1 does not.
  auto uses_b = [&](int slice) { return slice % micro == 0; };
  torch::manual_seed(100);
  auto want = [&] {
    paisoar::testing::Branchy model;
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(kLr).momentum(0.9));
    for (const auto& step : data) {
      opt.zero_grad();
      torch::Tensor loss = torch::zeros({});
      for (size_t s = 0; s < step.size(); ++s) {
        loss = loss + torch::cross_entropy_loss(model->forward(step[s].x, uses_b(s)), step[s].y);
      }
      (loss / static_cast<double>(step.size())).backward();
      opt.step();
    }
    return snapshot(*model);
  }();
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> got(world);
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = rank_model([] { return paisoar::testing::Branchy(); }, rank, mutex);
    auto options = tiny_buckets();
    options.find_unused_parameters = true;
    DistributedDataParallel<paisoar::testing::Branchy> ddp(model, comm, options);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(kLr).momentum(0.9));
    for (const auto& step : data) {
      if (rank == 0) {
        torch::NoGradGuard no_grad;  // evaluation on one rank only: must not communicate
        ddp(step[0].x, false);
      }
      for (int m = 0; m < micro; ++m) {
        const int slice = rank * micro + m;
        const auto& d = step[slice];
        if (m + 1 < micro) {
          auto guard = ddp.no_sync();
          auto out = ddp(d.x, uses_b(slice));
          if (m == 0) opt.zero_grad();  // after forward, as many loops do
          (torch::cross_entropy_loss(out, d.y) / micro).backward();
        } else {
          (torch::cross_entropy_loss(ddp(d.x, uses_b(slice)), d.y) / micro).backward();
        }
      }
      opt.step();
    }
    std::lock_guard<std::mutex> lock(mutex);
    got[rank] = snapshot(*model);
  });
  for (int r = 0; r < world; ++r) expect_close(got[r], want, 1e-5, 1e-6);
}

TEST(Ddp, ASecondBackwardAfterTheAveragingOneIsAnErrorOnEveryRank) {
  std::atomic<int> errors{0};
  paisoar::testing::run_ranks(2, [&](int, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::make_mlp();
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
    auto out = ddp(torch::randn({2, 8}));
    out.sum().backward({}, /*retain_graph=*/true);
    try {
      (out * out).sum().backward();
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("Sum the losses and call backward once"),
                std::string::npos)
          << e.what();
      ++errors;
    }
  });
  EXPECT_EQ(errors.load(), 2);
}

}  // namespace

// torch's default: .grad stays autograd's tensor, the bucket a copy averaged and copied back.
TEST(Ddp, GradientsOutsideTheBucketsGiveTheSameResult) {
  auto options = tiny_buckets();
  options.gradient_as_bucket_view = false;
  expect_ddp_matches_reference(2, paisoar::testing::make_mlp, plain, {6, 8}, options);
  options.find_unused_parameters = true;
  expect_ddp_matches_reference(2, [] { return paisoar::testing::Branchy(); }, branchy, {6, 8}, options);
}

// The first backward learns each parameter's gradient count (unused ones: 0) per rank.
TEST(Ddp, StaticGraphGivesTheSameResult) {
  auto options = tiny_buckets();
  options.static_graph = true;
  expect_ddp_matches_reference(2, paisoar::testing::make_mlp, plain, {6, 8}, options);
  expect_ddp_matches_reference(3, [] { return paisoar::testing::Branchy(); }, branchy, {6, 8}, options);
}

// Uneven inputs: a rank with no input left issues the others' collectives
// with zero gradients, so theirs are their own sum over the world size.
TEST(Ddp, AJoinedRankShadowsTheOthersBackward) {
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::make_mlp();
    auto alone = paisoar::testing::make_mlp();
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm, tiny_buckets());
    // The ranks are threads sharing torch's generator, so seeding cannot make
    // two models equal: `alone` copies the parameters DDP broadcast from rank 0.
    {
      torch::NoGradGuard no_grad;
      const auto from = model->parameters();
      const auto to = alone->parameters();
      for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
    }
    const auto x = torch::ones({4, 8}) * (rank + 1);
    ddp(x).sum().backward();  // both ranks train: the buckets are rebuilt here
    model->zero_grad();
    if (rank == 0) {
      ddp.reducer().shadow_backward();
      for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
      return;
    }
    ddp(x).sum().backward();
    alone->forward(x).sum().backward();
    std::vector<torch::Tensor> want;
    for (const auto& p : alone->parameters()) want.push_back(p.grad() / 2);
    std::vector<torch::Tensor> got;
    for (const auto& p : model->parameters()) got.push_back(p.grad());
    expect_close(got, want, 1e-6, 1e-7);
  });
}
