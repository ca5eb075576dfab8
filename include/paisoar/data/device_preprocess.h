// The article's "move preprocessing to the device": the loader collates uint8
// [N, C, H, W] batches (ToTensorOptions::keep_uint8, a quarter of the bytes of
// float), and this copies one to the device, converts and normalises it there,
// and flips the samples chosen by (seed, epoch, index), the same decision on
// any number of workers. On a CPU build it runs on the CPU, so tests cover it.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "paisoar/data/data_loader.h"

namespace paisoar::data {

struct DevicePreprocessOptions {
  std::vector<float> mean;           // per channel, of x / 255; empty: 0
  std::vector<float> std;            // per channel; empty: 1
  double horizontal_flip = 0.0;      // probability per sample
  uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat;
};

class DevicePreprocess {
 public:
  explicit DevicePreprocess(DevicePreprocessOptions options);
  // batch.data: uint8 [N, C, H, W]. Returns `dtype` [N, C, H, W] on the device.
  // Throws c10::ValueError for another dtype or rank.
  torch::Tensor operator()(const Batch& batch) const;
  // Whether sample `index` of `epoch` is flipped.
  bool flips(int64_t epoch, int64_t index) const;

 private:
  DevicePreprocessOptions options_;
};

}  // namespace paisoar::data
