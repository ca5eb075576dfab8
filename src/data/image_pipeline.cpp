// ImagePipeline: decode (fusing a leading CropResize into a region + DCT-scaled
// JPEG decode), the remaining transforms, then to_tensor's single pass from
// uint8 HWC to normalised float CHW through a per-channel lookup table.
#include "paisoar/data/image_pipeline.h"

#include <torch/types.h>

#include <array>
#include <utility>

#include "paisoar/data/image_codec.h"
#include "src/data/channels.h"

namespace paisoar::data {
namespace {

// The DCT-scaled region decode keeps the region at least this many times the
// output, so the area average does at least half of every shrink: libjpeg's
// reduced IDCT is no area average, and left the whole shrink it was 4 dB
// further from one than torchvision (`bench crop-quality`, photos x2-x8).
constexpr int64_t kDctHeadroom = 2;

void check_options(const ToTensorOptions& o) {
  TORCH_CHECK(o.channels == 1 || o.channels == 3, "ImagePipeline: to_tensor channels is ",
              o.channels, "; use 1 (gray) or 3 (RGB)");
  for (const auto* values : {&o.mean, &o.std}) {
    const size_t n = values->size();
    TORCH_CHECK(n == 0 || n == 1 || static_cast<int64_t>(n) == o.channels,
                "ImagePipeline: to_tensor ", values == &o.mean ? "mean" : "std", " has ", n,
                " values for ", o.channels, " channels; give none, one, or one per channel");
  }
  for (float s : o.std) {
    TORCH_CHECK(s != 0.0f, "ImagePipeline: to_tensor std must not be 0 (it divides)");
  }
}

float channel_value(const std::vector<float>& values, int64_t c, float otherwise) {
  if (values.empty()) return otherwise;
  return values.size() == 1 ? values[0] : values[c];
}

}  // namespace

ImagePipeline::ImagePipeline(TransformList transforms, ToTensorOptions to_tensor, int64_t max_pixels)
    : transforms_(std::move(transforms)), to_tensor_(std::move(to_tensor)), max_pixels_(max_pixels) {
  check_options(to_tensor_);
  TORCH_CHECK_VALUE(max_pixels_ >= 0, "ImagePipeline: max_pixels is ", max_pixels_, "; use 0 (no limit) or more");
  for (size_t i = 0; i < transforms_.size(); ++i) {
    TORCH_CHECK(transforms_[i] != nullptr, "ImagePipeline: transform ", i, " is null");
  }
}

torch::Tensor ImagePipeline::operator()(const uint8_t* bytes, size_t size, SampleRng& rng) const {
  const CropResize* fused =
      transforms_.empty() ? nullptr : dynamic_cast<const CropResize*>(transforms_[0].get());
  DecodeOptions options;
  options.channels = to_tensor_.channels;
  options.max_pixels = max_pixels_;
  Image image;
  if (fused != nullptr) {
    const ImageInfo info = read_image_info(bytes, size);
    require_within_pixel_limit(info, max_pixels_);  // before the crop is planned on it
    const CropPlan plan = fused->plan(info.height, info.width, rng);
    options.region = plan.region;
    options.min_height = plan.out_height * kDctHeadroom;
    options.min_width = plan.out_width * kDctHeadroom;
    image = decode_image(bytes, size, options);
    if (image.height != plan.out_height || image.width != plan.out_width) {
      image = resize_antialiased(image, plan.out_height, plan.out_width);
    }
  } else {
    image = decode_image(bytes, size, options);
  }
  for (size_t i = fused != nullptr ? 1 : 0; i < transforms_.size(); ++i) {
    transforms_[i]->apply(image, rng);
  }
  return to_tensor(image, to_tensor_);
}

torch::Tensor ImagePipeline::operator()(Image image, SampleRng& rng) const {
  TORCH_CHECK(image.channels == 1 || image.channels == 3, "ImagePipeline: the image has ",
              image.channels, " channels; expected 1 (gray) or 3 (RGB)");
  image = convert_channels(std::move(image), to_tensor_.channels);
  for (const auto& t : transforms_) t->apply(image, rng);
  return to_tensor(image, to_tensor_);
}

torch::Tensor to_tensor(const Image& image, const ToTensorOptions& options) {
  check_options(options);
  const int64_t c = options.channels, h = image.height, w = image.width, hw = h * w;
  TORCH_CHECK(image.channels == c && !image.empty() &&
                  image.pixels.size() == static_cast<size_t>(hw * c),
              "to_tensor: the image is ", h, "x", w, "x", image.channels, " (",
              image.pixels.size(), " bytes); expected ", c, " channels");
  const uint8_t* src = image.pixels.data();
  if (options.keep_uint8) {
    torch::Tensor out = torch::empty({c, h, w}, torch::kUInt8);
    uint8_t* dst = out.data_ptr<uint8_t>();
    for (int64_t i = 0; i < hw; ++i) {
      for (int64_t k = 0; k < c; ++k) dst[k * hw + i] = src[i * c + k];
    }
    return out;
  }
  // (x / 255 - mean) / std for every byte value, computed in double once.
  std::array<std::array<float, 256>, 3> table;
  for (int64_t k = 0; k < c; ++k) {
    const double mean = channel_value(options.mean, k, 0.0f);
    const double sd = channel_value(options.std, k, 1.0f);
    for (int v = 0; v < 256; ++v) table[k][v] = static_cast<float>((v / 255.0 - mean) / sd);
  }
  torch::Tensor out = torch::empty({c, h, w}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  if (c == 1) {
    for (int64_t i = 0; i < hw; ++i) dst[i] = table[0][src[i]];
  } else {
    float* r = dst;
    float* g = dst + hw;
    float* b = dst + 2 * hw;
    for (int64_t i = 0; i < hw; ++i, src += 3) {
      r[i] = table[0][src[0]];
      g[i] = table[1][src[1]];
      b[i] = table[2][src[2]];
    }
  }
  return out;
}

}  // namespace paisoar::data
