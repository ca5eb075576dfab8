// SyntheticBlobs: a small deterministic classification set for tests that
// need some data but not Fashion-MNIST: 1 x side x side images, sample i of
// class i % classes, that class's bright Gaussian blob plus pixel noise. With
// `jitter`, get() shifts the image by up to one pixel drawn from its
// SampleRng, as augmentation would, so a resumed run must restore the RNG.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/data/dataset.h"

namespace paisoar::testing {

struct SyntheticBlobsOptions {
  int64_t size = 640;
  int64_t classes = 10;
  int64_t side = 28;
  int64_t channels = 1;  // each with its own noise over the same blob
  double amplitude = 2.5;  // the blob's peak, over unit-variance noise
  double blob_sigma = 3.0;  // pixels
  uint64_t noise_seed = 1;  // the class blobs are the same for every seed; the noise is not
  bool jitter = false;
};

class SyntheticBlobs : public data::Dataset {
 public:
  explicit SyntheticBlobs(SyntheticBlobsOptions o) : options_(o) {
    const auto grid = torch::arange(o.side, torch::kFloat);
    const int64_t across = (o.classes + 2) / 3;  // blob centres on a grid of 3 rows
    data::SampleRng noise(o.noise_seed);
    for (int64_t i = 0; i < o.size; ++i) {
      const int64_t k = i % o.classes;
      const double cy = (k / across + 0.5) * o.side / 3.0, cx = (k % across + 0.5) * o.side / across;
      const auto dy = (grid - cy).pow(2).unsqueeze(1), dx = (grid - cx).pow(2).unsqueeze(0);
      const auto blob = o.amplitude * torch::exp(-(dy + dx) / (2 * o.blob_sigma * o.blob_sigma));
      auto image = torch::empty({o.channels, o.side, o.side});
      float* p = image.data_ptr<float>();
      for (int64_t j = 0; j < o.channels * o.side * o.side; ++j) {  // Box-Muller: unit normal noise
        const double u = 1.0 - noise.uniform(), v = noise.uniform();
        p[j] = static_cast<float>(std::sqrt(-2.0 * std::log(u)) * std::cos(2 * M_PI * v));
      }
      images_.push_back((blob.unsqueeze(0) + image).contiguous());
      labels_.push_back(k);
    }
  }

  int64_t size() const override { return options_.size; }
  int64_t num_classes() const override { return options_.classes; }
  std::string describe(int64_t index) const override { return "synthetic blob " + std::to_string(index); }

  data::Example get(int64_t index, data::SampleRng& rng) const override {
    torch::Tensor image = images_.at(index);
    if (options_.jitter) {
      const int64_t sy = rng.uniform_int(-1, 1), sx = rng.uniform_int(-1, 1);
      image = torch::roll(image, {sy, sx}, {1, 2});
    }
    return {image, labels_.at(index)};
  }

 private:
  const SyntheticBlobsOptions options_;
  std::vector<torch::Tensor> images_;  // built once: get() only reads (thread-safe)
  std::vector<int64_t> labels_;
};

}  // namespace paisoar::testing
