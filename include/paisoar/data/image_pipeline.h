// Encoded bytes (JPEG, PNG, PGM/PPM) or a decoded Image in, model-ready tensor
// out: decode, the transforms in order, then a fused uint8 -> float conversion
// with per-channel normalisation into a CHW tensor. A leading CropResize
// (RandomResizedCrop, Resize) is fused into the decode: only its region is
// decoded, at the smallest JPEG scale that still covers the output size.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/sample_rng.h"
#include "paisoar/data/transforms.h"

namespace paisoar::data {

struct ToTensorOptions {
  // Output channels: 3 (RGB) or 1 (gray).
  int64_t channels = 3;
  // (x / 255 - mean[c]) / std[c]. Empty: x / 255. One value: all channels.
  std::vector<float> mean;
  std::vector<float> std;
  // true: skip the conversion and return uint8 [C, H, W], leaving
  // normalisation to the device (see device_preprocess.h).
  bool keep_uint8 = false;
};

class ImagePipeline {
 public:
  ImagePipeline() = default;
  // `max_pixels`: larger images are refused before decoding (DecodeOptions).
  ImagePipeline(TransformList transforms, ToTensorOptions to_tensor, int64_t max_pixels = kDefaultMaxImagePixels);

  // Throws DataError (corrupt/unknown image); callers add the file name.
  torch::Tensor operator()(const uint8_t* bytes, size_t size, SampleRng& rng) const;
  torch::Tensor operator()(Image image, SampleRng& rng) const;

  const ToTensorOptions& to_tensor_options() const { return to_tensor_; }

 private:
  TransformList transforms_;
  ToTensorOptions to_tensor_;
  int64_t max_pixels_ = kDefaultMaxImagePixels;
};

// The fused conversion on its own: uint8 HWC -> float CHW, normalised.
torch::Tensor to_tensor(const Image& image, const ToTensorOptions& options);

}  // namespace paisoar::data
