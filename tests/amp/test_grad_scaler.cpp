// amp::GradScaler: the scale trajectory with infs injected at chosen steps,
// unscaling, skipping, accumulation, the cross-rank verdict, the min-scale
// floor and state_dict round trips, against values computed by hand; the
// float32 rule (the scale is a float32, growth only to a finite float32) as
// PyTorch keeps it. tests/python/test_amp_torch_parity.py compares with torch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "paisoar/amp/grad_scaler.h"
#include "tests/support/thread_ranks.h"

using paisoar::amp::GradScaler;
using paisoar::amp::GradScalerOptions;
using paisoar::amp::GradScalerStateError;

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

// PyTorch keeps the scale as a float32 and grows it only to a finite float32:
// from 1e38 (9.999999680285692e+37 as a float32) a growth of 16 would pass
// float32's maximum, so the scale stays and every step is taken.
TEST(GradScaler, ScaleStaysAFloat32BelowItsMaximum) {
  GradScalerOptions o;
  o.init_scale = 1e38;
  o.growth_factor = 16;
  o.growth_interval = 1;
  GradScaler scaler(o);
  Model m;
  const double as_float = static_cast<double>(static_cast<float>(1e38));
  EXPECT_EQ(as_float, 9.999999680285692e+37);
  for (int step = 0; step < 5; ++step) {
    m.opt.zero_grad();
    m.backward(scaler, torch::full({4}, 1e-30));
    EXPECT_TRUE(scaler.step(m.opt)) << "step " << step;
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), as_float) << "step " << step;
    EXPECT_EQ(scaler.growth_tracker(), 0) << "step " << step;
  }
  EXPECT_EQ(scaler.skipped_steps(), 0);
  EXPECT_EQ(scaler.scale_tensor().scalar_type(), torch::kFloat);
  EXPECT_EQ(scaler.scale_tensor().dim(), 0);
}

// Before the first scale() the scale is the number given; scale() places it
// as a float32 (0.1 becomes 0.10000000149011612), as PyTorch's lazy init does.
TEST(GradScaler, TheScaleIsRoundedToFloat32WhenPlaced) {
  GradScalerOptions o;
  o.init_scale = 0.1;
  GradScaler scaler(o);
  EXPECT_EQ(scaler.get_scale(), 0.1);
  EXPECT_FALSE(scaler.scale_tensor().defined());
  scaler.scale(torch::ones({2}));
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(0.1f));
}

// A 0-dim fp16 loss times the 0-dim fp32 scale promotes to fp32: 3 * 65536
// would overflow fp16 (max 65504) but not the product PyTorch returns.
TEST(GradScaler, AHalfLossIsScaledInFloat32) {
  GradScaler scaler;
  torch::Tensor scaled = scaler.scale(torch::tensor(3.0, torch::kHalf));
  EXPECT_EQ(scaled.scalar_type(), torch::kFloat);
  EXPECT_EQ(scaled.item<double>(), 196608.0);
  // A tensor with dimensions keeps its dtype (a 0-dim operand does not promote it).
  EXPECT_EQ(scaler.scale(torch::ones({2}, torch::kHalf)).scalar_type(), torch::kHalf);
}

TEST(GradScaler, HalfGradientsAreRefused) {
  GradScaler scaler;
  torch::Tensor w = torch::ones({4}, torch::kHalf).requires_grad_();
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(1.0));
  scaler.scale(w.to(torch::kFloat).sum()).backward();
  try {
    scaler.unscale_(opt);
    ADD_FAILURE() << "float16 gradients were unscaled";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Attempting to unscale FP16 gradients"), std::string::npos) << e.what();
  }
}

TEST(GradScaler, CallsBeforeScaleOrWithoutChecksAreStateErrors) {
  GradScaler scaler;
  Model m;
  m.w.mutable_grad() = torch::ones({4});
  EXPECT_THROW(scaler.step(m.opt), GradScalerStateError);
  EXPECT_THROW(scaler.unscale_(m.opt), GradScalerStateError);
  EXPECT_THROW(scaler.update(), GradScalerStateError);
  scaler.scale(torch::ones({}));
  EXPECT_THROW(scaler.update(), GradScalerStateError);  // no step recorded
  m.w.mutable_grad() = torch::Tensor();
  EXPECT_THROW(scaler.step(m.opt), GradScalerStateError);  // no gradient to check
}

// options.device places the scale at construction: a rank that scales no
// loss (a pipeline stage other than the last) steps with the same scale.
TEST(GradScaler, TheDeviceOptionPlacesTheScaleUpFront) {
  GradScalerOptions o;
  o.device = torch::Device(torch::kCPU);
  o.init_scale = 0.1;
  GradScaler scaler(o);
  ASSERT_TRUE(scaler.scale_tensor().defined());
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(0.1f));
  Model m;
  m.w.mutable_grad() = torch::full({4}, 0.1f * 4);
  EXPECT_TRUE(scaler.step(m.opt));
  scaler.update();
  EXPECT_TRUE(torch::allclose(m.w, torch::full({4}, -3.0)));
}

// PyTorch has no floor: the scale backs off for as long as gradients overflow.
TEST(GradScaler, NoFloorUnlessAsked) {
  GradScalerOptions o;
  o.init_scale = 2;
  GradScaler scaler(o);
  Model m;
  for (int step = 0; step < 5; ++step) {
    m.opt.zero_grad();
    m.backward(scaler, torch::full({4}, std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(scaler.step(m.opt));
    scaler.update();
  }
  EXPECT_EQ(scaler.get_scale(), 2.0 / 32);
  EXPECT_EQ(scaler.skipped_steps(), 5);
}

// The protocol of optimizers that unscale themselves (fused Adam): the check
// leaves the gradients scaled and records found_inf.
TEST(GradScaler, CheckInfLeavesGradientsScaled) {
  GradScaler scaler;
  Model m;
  auto x = torch::full({4}, 0.5);
  m.backward(scaler, x);
  scaler.check_inf(&m.opt, {m.w});
  EXPECT_TRUE(torch::equal(m.w.grad(), x.to(torch::kFloat) * 65536));
  EXPECT_EQ(scaler.found_inf(&m.opt).item<float>(), 0.0f);
  m.w.mutable_grad()[1] = std::nanf("");
  scaler.check_inf(&m.opt, {m.w});
  EXPECT_EQ(scaler.found_inf(&m.opt).item<float>(), 1.0f);
  EXPECT_FALSE(scaler.unscaled(&m.opt));
}

}  // namespace
