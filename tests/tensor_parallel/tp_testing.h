// Test support for tensor parallelism: the tolerance every comparison uses,
// the full gradient of a GPT parameter from its shard,
// an allclose that reports the largest difference (at that tolerance or another), and an error-message check.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::testing {

// fp32 throughout: the parallel layers sum partial products in another order
// than the unsplit layer, so results differ by rounding only.
constexpr double kTpRtol = 1e-4;
constexpr double kTpAtol = 1e-5;

inline void expect_close(const torch::Tensor& got, const torch::Tensor& want, double rtol, double atol,
                         const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, rtol, atol))
      << what << ": max |difference| " << (got - want).abs().max().item<double>();
}

inline void expect_tp_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  expect_close(got, want, kTpRtol, kTpAtol, what);
}

// The small GPT the comparisons split: 32 tokens, 2 layers, 4 heads, width 16
// (every size divisible by 1, 2 and 4 ranks).
inline models::GptOptions small_gpt_options() {
  models::GptOptions o;
  o.vocab_size = 32;
  o.block_size = 8;
  o.n_layer = 2;
  o.n_head = 4;
  o.n_embd = 16;
  return o;
}

// fn must throw c10::Error whose message holds every one of `parts`.
inline void expect_error_naming(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error naming " << parts.front();
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
  }
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The full gradient of a parameter from this rank's shard, by how the
// parallel blocks split each GPT parameter.
inline torch::Tensor full_gradient(const std::string& name, const torch::Tensor& grad, comm::Communicator& group) {
  if (ends_with(name, "c_attn.weight") || ends_with(name, "c_attn.bias")) return tensor_parallel::gather_shards(grad, 0, group, 3);
  if (ends_with(name, "wte.weight")) return tensor_parallel::gather_shards(grad, 0, group);
  if (ends_with(name, "c_fc.weight") || ends_with(name, "c_fc.bias")) return tensor_parallel::gather_shards(grad, 0, group);
  if (ends_with(name, "c_proj.weight")) return tensor_parallel::gather_shards(grad, 1, group);
  return grad;  // c_proj.bias and the LayerNorms are replicated (and wpe)
}

}  // namespace paisoar::testing
