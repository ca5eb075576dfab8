// Named precision regions: without a policy a region inherits autocast's
// choice; an active policy pins the regions it names, records which regions a
// forward entered, restores the outer policy when a guard ends, and reports
// patterns that match no region. Checked on the reference FashionCnn.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/models/fashion_cnn.h"

using namespace paisoar;

namespace {

torch::Tensor images() { return torch::randn({4, 1, 28, 28}); }

}  // namespace

TEST(PrecisionRegions, WithoutAPolicyRegionsInherit) {
  models::FashionCnn net;
  amp::autocast guard;  // bf16 on the CPU
  EXPECT_EQ(net->forward(images()).scalar_type(), torch::kBFloat16);
}

TEST(PrecisionRegions, APolicyPinsTheRegionsItNamesAndRecordsThemAll) {
  torch::manual_seed(0);
  models::FashionCnn net;
  const auto x = images();
  amp::PrecisionPolicy policy;
  policy.add("fc2", amp::Precision::Full);
  torch::Tensor pinned;
  std::vector<std::string> seen;
  {
    amp::autocast guard;
    amp::ActivePolicy active(policy, c10::DeviceType::CPU);
    pinned = net->forward(x);
    seen = active.regions_seen();
  }
  EXPECT_EQ(pinned.scalar_type(), torch::kFloat);
  EXPECT_EQ(seen, (std::vector<std::string>{"conv1", "conv2", "fc1", "fc2"}));
  // The fp32 head's logits are within bf16 rounding of an all-fp32 forward.
  const auto reference = net->forward(x);
  EXPECT_LT((pinned - reference).abs().max().item<double>(), 0.05 * reference.abs().max().item<double>() + 0.05);
}

TEST(PrecisionRegions, LowPinsUnderFp32AndGuardsNest) {
  models::FashionCnn net;
  amp::PrecisionPolicy low, none;
  low.add("fc*", amp::Precision::Low);
  amp::ActivePolicy outer(low, c10::DeviceType::CPU);
  EXPECT_EQ(net->forward(images()).scalar_type(), torch::kBFloat16);  // no autocast, still pinned low
  {
    amp::ActivePolicy inner(none, c10::DeviceType::CPU);
    EXPECT_EQ(net->forward(images()).scalar_type(), torch::kFloat);
  }
  EXPECT_EQ(net->forward(images()).scalar_type(), torch::kBFloat16);  // the outer policy is back
}

TEST(PrecisionRegions, UnmatchedPatternsAreReported) {
  amp::PrecisionPolicy policy;
  policy.add("fc2", amp::Precision::Full).add("head", amp::Precision::Full).add("conv*", amp::Precision::Low);
  EXPECT_EQ(amp::unmatched_patterns(policy, {"conv1", "conv2", "fc1", "fc2"}), (std::vector<std::string>{"head"}));
  EXPECT_TRUE(amp::unmatched_patterns(amp::PrecisionPolicy(), {}).empty());
}
