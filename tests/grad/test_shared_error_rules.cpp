// DDP and ZeRO (stages 1 and 2) run on one GradientEngine, so they share its
// rules; each test runs both on 2 thread ranks: a gradient missing on one rank
// fails every rank unless find_unused_parameters (then both average it as
// zero and train alike), and a reentrant backward on one rank fails every rank
// with that rank's message.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/ddp.h"
#include "paisoar/zero.h"
#include "tests/ddp/ddp_models.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace {

enum class Owner { Ddp, Zero1, Zero2 };

std::string name_of(Owner owner) {
  return owner == Owner::Ddp ? "Ddp" : owner == Owner::Zero1 ? "Zero1" : "Zero2";
}

// Runs one SGD step of `loss_of(rank, forward)` under `owner` on 2 ranks and
// returns each rank's error ("" if none) and rank 0's parameters after it.
struct Outcome {
  std::vector<std::string> errors = std::vector<std::string>(2);
  std::vector<torch::Tensor> params;
};

using Forward = std::function<torch::Tensor(const torch::Tensor&, bool)>;

using LossOf =
    std::function<torch::Tensor(int, const Forward&, paisoar::testing::Branchy&, const torch::Tensor& x)>;

Outcome run(Owner owner, bool find_unused, const LossOf& loss_of) {
  Outcome out;
  // torch's generator is shared by the rank threads: draw everything before them.
  torch::manual_seed(3);
  std::vector<paisoar::testing::Branchy> models(2);
  const std::vector<torch::Tensor> inputs = {torch::randn({4, 8}), torch::randn({4, 8})};
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    paisoar::testing::Branchy model = models[rank];
    const torch::Tensor& x = inputs[rank];
    try {
      if (owner == Owner::Ddp) {
        ddp::DdpOptions o;
        o.find_unused_parameters = find_unused;
        DistributedDataParallel<paisoar::testing::Branchy> ddp(model, comm, o);
        torch::optim::SGD opt(model->parameters(), 0.5);
        loss_of(rank, [&](const torch::Tensor& x, bool use_b) { return ddp(x, use_b); }, model, x).backward();
        opt.step();
      } else {
        zero::ZeroOptions o;
        o.stage = owner == Owner::Zero1 ? 1 : 2;
        o.find_unused_parameters = find_unused;
        o.warn_single_rank = false;
        zero::ZeroOptimizer opt(model.ptr(), comm, [](const std::vector<zero::ShardParam>& shard) {
          return std::make_unique<torch::optim::SGD>(zero::tensors_of(shard), 0.5);
        }, o);
        opt.zero_grad();
        loss_of(rank, [&](const torch::Tensor& x, bool use_b) { return model(x, use_b); }, model, x).backward();
        opt.step();
      }
    } catch (const std::exception& e) {
      out.errors[rank] = e.what();
      return;
    }
    if (rank == 0) {
      for (const auto& p : model->parameters()) out.params.push_back(p.detach().clone());
    }
  });
  return out;
}

// Each rank's own batch; rank 1 leaves head `b` out.
torch::Tensor missing_b_on_rank_1(int rank, const Forward& forward, paisoar::testing::Branchy&,
                                  const torch::Tensor& x) {
  return forward(x, rank == 0).pow(2).mean();
}

class SharedErrorRules : public ::testing::TestWithParam<Owner> {};

TEST_P(SharedErrorRules, AGradientMissingOnOneRankFailsEveryRankNamingIt) {
  const Owner owner = GetParam();
  const Outcome out = run(owner, /*find_unused=*/false, missing_b_on_rank_1);
  const std::string option = owner == Owner::Ddp ? "DdpOptions::find_unused_parameters = true"
                                                 : "ZeroOptions::find_unused_parameters = true";
  for (const auto& m : out.errors) {
    EXPECT_NE(m.find("parameter 'b.weight' received no gradient in this backward on 1 of 2 ranks"),
              std::string::npos) << m;
    EXPECT_NE(m.find(option), std::string::npos) << m;
  }
}

TEST_P(SharedErrorRules, WithFindUnusedParametersEveryOwnerTrainsLikeDdp) {
  const Outcome reference = run(Owner::Ddp, /*find_unused=*/true, missing_b_on_rank_1);
  const Outcome out = run(GetParam(), /*find_unused=*/true, missing_b_on_rank_1);
  ASSERT_EQ(reference.errors, (std::vector<std::string>{"", ""}));
  ASSERT_EQ(out.errors, (std::vector<std::string>{"", ""}));
  // b's step is half of rank 0's gradient (rank 1 counts as zero); `never`
  // keeps its initial weights everywhere.
  paisoar::testing::expect_close(out.params, reference.params, 1e-5, 1e-6);
}

// Identity whose backward runs a nested backward through `w`, so w's
// gradient accumulator fires twice in one backward (as reentrant
// activation checkpointing does).
struct ReenterThrough : torch::autograd::Function<ReenterThrough> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, torch::Tensor w) {
    ctx->saved_data["w"] = w;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    torch::Tensor w = ctx->saved_data["w"].toTensor();
    torch::AutoGradMode enable(true);
    (w * 2).sum().backward();
    return {grads[0], torch::Tensor()};
  }
};

TEST_P(SharedErrorRules, AReentrantBackwardOnOneRankFailsEveryRankWithItsMessage) {
  const Outcome out = run(GetParam(), /*find_unused=*/false,
                          [](int rank, const Forward& forward, paisoar::testing::Branchy& model,
                             const torch::Tensor& x) {
    torch::Tensor y = forward(x, true);
    if (rank == 1) y = ReenterThrough::apply(y, model->a->weight);
    return y.pow(2).mean() + 0 * model->never->weight.sum();
  });
  EXPECT_EQ(out.errors[0], out.errors[1]);
  EXPECT_NE(out.errors[0].find("parameter 'a.weight' received a gradient although it already had one in this "
                               "backward (reentrant backward"), std::string::npos) << out.errors[0];
  EXPECT_NE(out.errors[0].find("[rank 1 of 2; every rank stops at this backward]"), std::string::npos)
      << out.errors[0];
}

INSTANTIATE_TEST_SUITE_P(Owners, SharedErrorRules, ::testing::Values(Owner::Ddp, Owner::Zero1, Owner::Zero2),
                         [](const ::testing::TestParamInfo<Owner>& info) { return name_of(info.param); });

}  // namespace
