// amp::GradScaler: the scale trajectory with infs injected at chosen steps,
// unscaling, skipping, accumulation, the cross-rank verdict, the min-scale
// floor and state_dict round trips, against values computed by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "paisoar/amp/grad_scaler.h"
#include "tests/support/thread_ranks.h"

using paisoar::amp::GradScaler;
using paisoar::amp::GradScalerOptions;

namespace {

// One parameter w (4 elements) under plain SGD with lr 1: w -= grad.
struct Model {
  torch::Tensor w = torch::ones({4}).requires_grad_();
  torch::optim::SGD opt{std::vector<torch::Tensor>{w}, torch::optim::SGDOptions(1.0)};

  // Backward of scaler.scale(sum(w * x)): w.grad = scale * x.
  void backward(GradScaler& scaler, const torch::Tensor& x) {
    scaler.scale((w * x).sum()).backward();
  }
};

TEST(GradScaler, TrajectoryFollowsThePolicyExactly) {
  GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  GradScaler scaler(o);
  Model m;
  const std::vector<bool> inf_at = {false, false, true, false, false, false, true, true, false};
  // Expected by hand: growth after 3 clean steps in a row, x0.5 on each inf step.
  const std::vector<double> scale_after = {1024, 1024, 512, 512, 512, 1024, 512, 256, 256};
  const std::vector<int64_t> skipped_after = {0, 0, 1, 1, 1, 1, 2, 3, 3};
  double w0 = 1.0;
  for (size_t step = 0; step < inf_at.size(); ++step) {
    m.opt.zero_grad();
    auto x = torch::full({4}, 0.25);
    if (inf_at[step]) x[1] = std::numeric_limits<double>::infinity();
    m.backward(scaler, x);
    bool stepped = scaler.step(m.opt);
    scaler.update();
    EXPECT_EQ(stepped, !inf_at[step]) << "step " << step;
    EXPECT_EQ(scaler.get_scale(), scale_after[step]) << "step " << step;
    EXPECT_EQ(scaler.skipped_steps(), skipped_after[step]) << "step " << step;
    if (!inf_at[step]) w0 -= 0.25;  // unscaled gradient applied
    EXPECT_DOUBLE_EQ(m.w[0].item<double>(), w0) << "step " << step;
  }
}

TEST(GradScaler, UnscaleRestoresTheTrueGradientForClipping) {
  GradScaler scaler;  // 65536
  Model m;
  auto x = torch::tensor({0.5, -1e-6, 3.0, 1e-8}, torch::kFloat);
  m.backward(scaler, x);
  EXPECT_TRUE(torch::allclose(m.w.grad(), x * 65536.0));
  scaler.unscale_(m.opt);
  EXPECT_TRUE(torch::allclose(m.w.grad(), x, 0, 0));  // powers of two: exact
  EXPECT_THROW(scaler.unscale_(m.opt), c10::Error);
  EXPECT_TRUE(scaler.step(m.opt));  // does not unscale twice
  scaler.update();
  EXPECT_TRUE(torch::allclose(m.w, torch::ones({4}) - x, 0, 0));
}

TEST(GradScaler, AccumulationScalesEveryMicroStepAndUnscalesOnce) {
  GradScaler scaler;
  Model m;
  auto total = torch::zeros({4});
  for (int micro = 0; micro < 4; ++micro) {
    auto x = torch::full({4}, 0.125 * (micro + 1));
    total += x;
    m.backward(scaler, x);
  }
  scaler.step(m.opt);
  scaler.update();
  EXPECT_TRUE(torch::allclose(m.w, torch::ones({4}) - total, 0, 0));
}

TEST(GradScaler, NanIsAnOverflowToo) {
  GradScaler scaler;
  Model m;
  auto x = torch::ones({4});
  x[3] = std::nan("");
  m.backward(scaler, x);
  EXPECT_FALSE(scaler.step(m.opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768);
  EXPECT_TRUE(torch::equal(m.w, torch::ones({4})));
}

TEST(GradScaler, StaticScaleNeverChangesButStillSkips) {
  GradScalerOptions o;
  o.dynamic = false;
  o.init_scale = 128;
  o.growth_interval = 1;
  GradScaler scaler(o);
  Model m;
  for (bool inf : {false, true, false}) {
    m.opt.zero_grad();
    auto x = torch::ones({4});
    if (inf) x[0] = std::numeric_limits<double>::infinity();
    m.backward(scaler, x);
    EXPECT_EQ(scaler.step(m.opt), !inf);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 128);
  }
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(GradScaler, DisabledIsAPassThrough) {
  GradScalerOptions o;
  o.enabled = false;
  GradScaler scaler(o);
  Model m;
  m.backward(scaler, torch::ones({4}));
  EXPECT_TRUE(torch::equal(m.w.grad(), torch::ones({4})));
  EXPECT_TRUE(scaler.step(m.opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
}

TEST(GradScaler, ScaleBelowTheFloorStopsWithAClearMessage) {
  GradScalerOptions o;
  o.init_scale = 4;
  o.min_scale = 1;
  GradScaler scaler(o);
  Model m;
  auto bad = torch::full({4}, std::numeric_limits<double>::infinity());
  std::string message;
  try {
    for (int step = 0; step < 10; ++step) {
      m.opt.zero_grad();
      m.backward(scaler, bad);
      scaler.step(m.opt);
      scaler.update();
    }
  } catch (const c10::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("fell to 0.5"), std::string::npos) << message;
  EXPECT_NE(message.find("after 3 skipped steps"), std::string::npos) << message;
  EXPECT_NE(message.find("training is unstable"), std::string::npos) << message;
}

TEST(GradScaler, MisuseIsReported) {
  GradScaler scaler;
  Model m;
  EXPECT_THROW(scaler.update(), c10::Error);  // nothing recorded
  m.backward(scaler, torch::ones({4}));
  scaler.step(m.opt);
  EXPECT_THROW(scaler.step(m.opt), c10::Error);
  EXPECT_THROW(scaler.unscale_(m.opt), c10::Error);
  GradScalerOptions bad;
  bad.growth_factor = 0.5;
  EXPECT_THROW(GradScaler{bad}, c10::ValueError);
}

TEST(GradScaler, StateDictRoundTripAndBadState) {
  GradScalerOptions o;
  o.growth_interval = 2;
  GradScaler a(o);
  Model m;
  for (bool inf : {true, false}) {
    m.opt.zero_grad();
    auto x = torch::ones({4});
    if (inf) x[0] = std::numeric_limits<double>::infinity();
    m.backward(a, x);
    a.step(m.opt);
    a.update();
  }
  GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.get_scale(), 32768);
  EXPECT_EQ(b.growth_tracker(), 1);
  EXPECT_EQ(b.skipped_steps(), 1);
  EXPECT_EQ(b.options().growth_interval, 2);

  auto state = a.state_dict();
  state.erase("scale");
  try {
    b.load_state_dict(state);
    ADD_FAILURE() << "a state without 'scale' was accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'scale' is missing"), std::string::npos) << e.what();
  }
  state = a.state_dict();
  state["_growth_tracker"] = torch::zeros({3});
  EXPECT_THROW(b.load_state_dict(state), c10::ValueError);
  EXPECT_EQ(b.get_scale(), 32768);  // a failed load changes nothing
}

// Only rank 1 sees an inf; both ranks must skip and back off together.
TEST(GradScaler, CrossRankVerdictIsShared) {
  std::vector<double> scales(2);
  std::vector<bool> stepped(2);
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    GradScaler scaler({}, comm);
    Model m;
    auto x = torch::ones({4});
    if (rank == 1) x[2] = std::numeric_limits<double>::infinity();
    m.backward(scaler, x);
    stepped[rank] = scaler.step(m.opt);
    scaler.update();
    scales[rank] = scaler.get_scale();
  });
  EXPECT_FALSE(stepped[0]);
  EXPECT_FALSE(stepped[1]);
  EXPECT_EQ(scales[0], 32768);
  EXPECT_EQ(scales[1], 32768);
}

}  // namespace
