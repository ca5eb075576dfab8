// DevicePreprocess: one non-blocking copy, then three elementwise kernels
// (flip select, convert, affine normalise) on the device.
#include "paisoar/data/device_preprocess.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "paisoar/data/sample_rng.h"

namespace paisoar::data {
namespace {

// Salts the flip stream so it is independent of the sample's CPU augmentations.
constexpr uint64_t kFlipSalt = 0x666c6970ull;  // "flip"

torch::Tensor per_channel(const std::vector<float>& values, int64_t channels, float fallback,
                          const char* name) {
  if (values.empty()) return torch::full({1, channels, 1, 1}, fallback);
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != channels) {
    C10_THROW_ERROR(ValueError, "DevicePreprocess: " + std::string(name) + " has " +
                                std::to_string(values.size()) + " values for " +
                                std::to_string(channels) + " channels; give 1 or " +
                                std::to_string(channels));
  }
  auto t = torch::tensor(values, torch::kFloat);
  return (values.size() == 1 ? t.expand({channels}) : t).reshape({1, channels, 1, 1});
}

}  // namespace

DevicePreprocess::DevicePreprocess(DevicePreprocessOptions options) : options_(std::move(options)) {
  for (float s : options_.std) {
    if (!(s > 0)) C10_THROW_ERROR(ValueError, "DevicePreprocess: every std must be > 0");
  }
}

bool DevicePreprocess::flips(int64_t epoch, int64_t index) const {
  if (options_.horizontal_flip <= 0) return false;
  SampleRng rng(options_.seed ^ kFlipSalt, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
  return rng.bernoulli(options_.horizontal_flip);
}

torch::Tensor DevicePreprocess::operator()(const Batch& batch) const {
  const auto& x = batch.data;
  if (x.scalar_type() != torch::kUInt8 || x.dim() != 4) {
    C10_THROW_ERROR(ValueError, 
        "DevicePreprocess: expects a uint8 [N, C, H, W] batch (set ToTensorOptions::keep_uint8)");
  }
  const int64_t n = x.size(0), channels = x.size(1);
  auto device_x = x.to(options_.device, /*non_blocking=*/true);
  if (options_.horizontal_flip > 0) {
    std::vector<uint8_t> mask(static_cast<size_t>(n));
    const int64_t* idx = batch.indices.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) mask[static_cast<size_t>(i)] = flips(batch.epoch, idx[i]);
    auto m = torch::tensor(std::vector<int64_t>(mask.begin(), mask.end()), torch::kLong)
                 .to(torch::kBool)
                 .to(options_.device)
                 .reshape({n, 1, 1, 1});
    device_x = torch::where(m, device_x.flip({3}), device_x);
  }
  // (x / 255 - mean) / std  ==  x * scale + shift
  const auto mean = per_channel(options_.mean, channels, 0.0f, "mean");
  const auto std = per_channel(options_.std, channels, 1.0f, "std");
  const auto scale = (1.0f / (255.0f * std)).to(options_.device);
  const auto shift = (-mean / std).to(options_.device);
  return torch::addcmul(shift, device_x.to(torch::kFloat), scale).to(options_.dtype);
}

}  // namespace paisoar::data
