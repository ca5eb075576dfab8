// Test support for the pipeline: a small model every rank builds identically,
// the single-process reference step it is compared with, per-rank error
// capture, and gradient comparison by parameter name.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "tests/support/thread_ranks.h"

namespace paisoar::testing {

// 7 layers with parameters in most of them, so any split moves gradients across stages.
inline torch::nn::Sequential make_pipeline_mlp() {
  namespace nn = torch::nn;
  return nn::Sequential(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 12),
                        nn::Functional(torch::relu), nn::Linear(12, 4));
}

inline torch::Tensor pipeline_loss(const torch::Tensor& out, const torch::Tensor& target) {
  return torch::cross_entropy_loss(out, target);
}

// The model built with a fixed seed; `mutex` serialises the global generator
// between rank threads so every rank gets the same weights.
inline torch::nn::Sequential seeded_model(std::mutex& mutex,
                                          const std::function<torch::nn::Sequential()>& make, int seed) {
  std::lock_guard<std::mutex> lock(mutex);
  torch::manual_seed(seed);
  return make();
}

struct Reference {
  double loss = 0;
  std::map<std::string, torch::Tensor> grads;  // by parameter name
};

// One forward and backward of the whole batch in one process.
inline Reference reference_step(torch::nn::Sequential model, const torch::Tensor& x, const torch::Tensor& y) {
  model->zero_grad();
  torch::Tensor loss = pipeline_loss(model->forward(x), y);
  loss.backward();
  Reference ref;
  ref.loss = loss.item<double>();
  for (const auto& p : model->named_parameters()) ref.grads[p.key()] = p.value().grad().clone();
  return ref;
}

// Each parameter's gradient equals the reference's of the same name.
inline void expect_grads_match(const torch::nn::Module& stage, const Reference& ref, double rtol, double atol) {
  for (const auto& p : stage.named_parameters()) {
    auto it = ref.grads.find(p.key());
    ASSERT_NE(it, ref.grads.end()) << p.key();
    ASSERT_TRUE(p.value().grad().defined()) << p.key() << " has no gradient";
    EXPECT_TRUE(torch::allclose(p.value().grad(), it->second, rtol, atol))
        << p.key() << " max diff " << (p.value().grad() - it->second).abs().max().item<double>();
  }
}

// Every rank failed, each with a message naming every part.
inline void expect_every_rank_failed(const std::vector<std::string>& errors,
                                     std::initializer_list<const char*> parts) {
  for (size_t r = 0; r < errors.size(); ++r) {
    ASSERT_FALSE(errors[r].empty()) << "rank " << r << " did not fail";
    for (const char* part : parts) EXPECT_NE(errors[r].find(part), std::string::npos) << "rank " << r << ": " << errors[r];
  }
}

}  // namespace paisoar::testing
