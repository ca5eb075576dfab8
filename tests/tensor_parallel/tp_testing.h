// Test support for tensor parallelism: the tolerance every comparison uses,
// an allclose that reports the largest difference, and an error-message check.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace paisoar::testing {

// fp32 throughout: the parallel layers sum partial products in another order
// than the unsplit layer, so results differ by rounding only.
constexpr double kTpRtol = 1e-4;
constexpr double kTpAtol = 1e-5;

inline void expect_tp_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, kTpRtol, kTpAtol))
      << what << ": max |difference| " << (got - want).abs().max().item<double>();
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

}  // namespace paisoar::testing
