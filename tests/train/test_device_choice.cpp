// resolve_device: `device: auto|cpu|cuda` against what this machine has, and
// the errors for a CUDA request that cannot be met.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "paisoar/train/config_schema.h"
#include "paisoar/train/device_choice.h"
#include "paisoar/version.h"
#include "tests/support/expect_error.h"

namespace {

using paisoar::testing::expect_error_of;
using paisoar::train::ConfigError;
using paisoar::train::resolve_device;

int64_t gpus() { return PAISOAR_BUILT_WITH_CUDA ? static_cast<int64_t>(torch::cuda::device_count()) : 0; }

TEST(DeviceChoice, CpuIsTheCpu) {
  EXPECT_EQ(resolve_device("cpu", 3), torch::Device(torch::kCPU));
}

TEST(DeviceChoice, AutoTakesThisRanksGpuOrTheCpu) {
  const torch::Device d = resolve_device("auto", 1);
  if (gpus() == 0) {
    EXPECT_EQ(d, torch::Device(torch::kCPU));
  } else {
    EXPECT_EQ(d, torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(1 % gpus())));
  }
}

TEST(DeviceChoice, CudaWithoutAGpuSaysWhatToDo) {
  if (gpus() > 0) {
    EXPECT_EQ(resolve_device("cuda", 0), torch::Device(torch::kCUDA, 0));
    return;
  }
  if (PAISOAR_BUILT_WITH_CUDA) {
    expect_error_of<ConfigError>([] { resolve_device("cuda", 0); },
                                 {"device: cuda", "no CUDA device is visible", "device: cpu"});
  } else {
    expect_error_of<ConfigError>([] { resolve_device("cuda", 0); },
                                 {"device: cuda", "CPU build", "CUDA torch wheel"});
  }
}

TEST(DeviceChoice, UnknownNameIsRefused) {
  expect_error_of<ConfigError>([] { resolve_device("tpu", 0); }, {"'tpu'", "auto, cpu, cuda"});
}

}  // namespace
