// FlatOptimizer against the per-tensor optimizers it replaces (torch::optim::SGD
// and AdamW, paisoar's LARS and LAMB) over several steps on a model with
// matrices, biases and a norm weight; plus the FlatBuffer's aliasing contract.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "paisoar/optim.h"

using paisoar::optim::FlatAlgorithm;
using paisoar::optim::FlatBuffer;
using paisoar::optim::FlatOptimizer;
using paisoar::optim::FlatOptimizerOptions;

namespace {

std::vector<torch::Tensor> make_params() {
  torch::manual_seed(7);
  std::vector<torch::Tensor> ps = {torch::randn({8, 6}), torch::randn({8}), torch::randn({4, 8}),
                                   torch::randn({4}), torch::ones({4}), torch::randn({3, 2, 2})};
  for (auto& p : ps) p.requires_grad_();
  return ps;
}

void set_grads(std::vector<torch::Tensor>& ps, int step) {
  for (size_t i = 0; i < ps.size(); ++i) {
    auto g = torch::sin(torch::arange(ps[i].numel(), torch::kFloat) * 0.37 + static_cast<double>(step + i))
                 .view(ps[i].sizes()) * (0.3 + 0.1 * step);
    ps[i].mutable_grad().copy_(g);
  }
}

void init_grads(std::vector<torch::Tensor>& ps) {
  for (auto& p : ps) p.mutable_grad() = torch::zeros_like(p);
}

// Runs 5 steps of the per-tensor optimizer and of FlatOptimizer from the same
// start with the same gradients, and compares every parameter. The fused loops
// round in a different order than torch's kernels (which use FMA), so results
// agree to float rounding, not bit for bit: the tolerance is relative 1e-5.
template <typename MakeReference>
void compare(MakeReference make_reference, FlatOptimizerOptions flat_options, double rtol) {
  auto ref_params = make_params();
  auto flat_params = make_params();
  init_grads(ref_params);
  init_grads(flat_params);
  auto reference = make_reference(ref_params);
  FlatOptimizer flat(flat_params, flat_options);
  for (int step = 0; step < 5; ++step) {
    set_grads(ref_params, step);
    set_grads(flat_params, step);
    reference->step();
    flat.step();
    for (size_t i = 0; i < ref_params.size(); ++i) {
      EXPECT_TRUE(torch::allclose(flat_params[i], ref_params[i], rtol, 1e-6))
          << "param " << i << " step " << step << "\n"
          << (flat_params[i] - ref_params[i]).abs().max();
    }
  }
}

TEST(FlatOptimizer, SgdMomentumMatchesTorchSgd) {
  compare([](auto& ps) {
    return std::make_unique<torch::optim::SGD>(ps, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
  }, FlatOptimizerOptions(FlatAlgorithm::SGD, 0.1).momentum(0.9).weight_decay(1e-3), 1e-5);
}

TEST(FlatOptimizer, AdamWMatchesTorchAdamW) {
  compare([](auto& ps) {
    return std::make_unique<torch::optim::AdamW>(ps, torch::optim::AdamWOptions(0.01).weight_decay(0.05));
  }, FlatOptimizerOptions(FlatAlgorithm::AdamW, 0.01).weight_decay(0.05), 1e-5);
}

TEST(FlatOptimizer, LarsMatchesPerTensorLars) {
  compare([](auto& ps) {
    return std::make_unique<paisoar::optim::LARS>(ps, paisoar::optim::LARSOptions(0.5).weight_decay(1e-2).eta(0.02));
  }, FlatOptimizerOptions(FlatAlgorithm::LARS, 0.5).weight_decay(1e-2).eta(0.02).eps(1e-9), 1e-5);
}

TEST(FlatOptimizer, LambMatchesPerTensorLamb) {
  compare([](auto& ps) {
    return std::make_unique<paisoar::optim::LAMB>(ps, paisoar::optim::LAMBOptions(0.01).weight_decay(0.05));
  }, FlatOptimizerOptions(FlatAlgorithm::LAMB, 0.01).weight_decay(0.05).eps(1e-6), 1e-5);
}

TEST(FlatBufferTest, GradientsAccumulateIntoTheFlatBufferThroughZeroGrad) {
  auto ps = make_params();
  FlatOptimizer flat(ps, FlatOptimizerOptions(FlatAlgorithm::SGD, 0.1));
  torch::optim::Optimizer& as_base = flat;
  // zero_grad(false) (detach_ + zero_) keeps the aliases: autograd accumulates
  // straight into the flat buffer.
  as_base.zero_grad(/*set_to_none=*/false);
  (ps[0].sum() * 2).backward();
  EXPECT_TRUE(torch::equal(flat.buffer().slice(flat.buffer().grad(), 0), torch::full({48}, 2.0f)));
  EXPECT_EQ(ps[0].grad().data_ptr(), flat.buffer().grad().data_ptr());
  // Parameters alias the flat data: a step through the buffer moves them.
  auto before = ps[0].detach().clone();
  flat.step();
  EXPECT_TRUE(torch::allclose(ps[0], before - 0.2));
}

// LibTorch 2.x's zero_grad() sets gradients to undefined by default; backward
// then allocates new ones, and step() adopts them back into the flat buffer.
TEST(FlatBufferTest, StepAdoptsGradientsThatZeroGradSetToNone) {
  auto ps = make_params();
  FlatOptimizer flat(ps, FlatOptimizerOptions(FlatAlgorithm::SGD, 0.1));
  torch::optim::Optimizer& as_base = flat;
  as_base.zero_grad();
  (ps[0].sum() * 2).backward();
  auto before0 = ps[0].detach().clone();
  auto before1 = ps[1].detach().clone();
  flat.step();
  EXPECT_TRUE(torch::equal(flat.buffer().slice(flat.buffer().grad(), 0), torch::full({48}, 2.0f)));
  EXPECT_EQ(ps[0].grad().data_ptr(), flat.buffer().grad().data_ptr());
  EXPECT_TRUE(torch::allclose(ps[0], before0 - 0.2));
  EXPECT_TRUE(torch::equal(ps[1], before1));  // no gradient: zeros, no move
}

TEST(FlatBufferTest, ReplacedGradientsAreAdopted) {
  auto ps = make_params();
  FlatOptimizer flat(ps, FlatOptimizerOptions(FlatAlgorithm::SGD, 1.0).momentum(0));
  auto before = ps[1].detach().clone();
  ps[1].mutable_grad() = torch::full({8}, 0.5);  // a fresh tensor, not the alias
  ps[0].mutable_grad() = torch::Tensor();         // undefined: treated as zero
  flat.step();
  EXPECT_TRUE(torch::allclose(ps[1], before - 0.5));
  EXPECT_EQ(ps[1].grad().data_ptr<float>(), flat.buffer().grad().data_ptr<float>() + 48);
}

TEST(FlatBufferTest, MixedDtypesAreAClearError) {
  std::vector<torch::Tensor> ps = {torch::ones({2}).requires_grad_(),
                                   torch::ones({2}, torch::kDouble).requires_grad_()};
  try {
    FlatBuffer flat(ps);
    ADD_FAILURE() << "mixed dtypes accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 1 is Double"), std::string::npos) << e.what();
  }
}

}  // namespace
