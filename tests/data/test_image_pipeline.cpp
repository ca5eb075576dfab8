// ImagePipeline and to_tensor against torch ops: normalisation (1e-6),
// uint8 output, bilinear resize vs F::interpolate, and the fused crop-decode
// vs the unfused path (exact without DCT scaling, close with it).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>

#include "paisoar/data/image_codec.h"
#include "paisoar/data/image_pipeline.h"
#include "paisoar/data/transforms.h"
#include "tests/data/image_test_util.h"
#include "tests/support/expect_error.h"

namespace paisoar::data {
namespace {

Image random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Image image(h, w, c);
  SampleRng rng(seed);
  for (auto& p : image.pixels) p = static_cast<uint8_t>(rng.next_u64() >> 56);
  return image;
}

// A 375x500 photo-like image: smooth shading, a disc and an edge.
Image photo_like(int64_t h, int64_t w) {
  Image image(h, w, 3);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const bool disc = (x - 0.6 * w) * (x - 0.6 * w) + (y - 0.4 * h) * (y - 0.4 * h) < 0.04 * h * h;
      const double r = 128 + 90 * std::sin(x / 23.0) * std::cos(y / 31.0);
      const double g = (x < w / 5 ? 0.3 : 1.0) * (40 + 150.0 * x / w);
      const double b = 200 - 120.0 * y / h;
      image.at(y, x, 0) = static_cast<uint8_t>(disc ? 230 : r);
      image.at(y, x, 1) = static_cast<uint8_t>(disc ? 200 : g);
      image.at(y, x, 2) = static_cast<uint8_t>(disc ? 30 : b);
    }
  }
  return image;
}

torch::Tensor hwc(const Image& image) {
  return torch::from_blob(const_cast<uint8_t*>(image.pixels.data()),
                          {image.height, image.width, image.channels}, torch::kUInt8)
      .clone();
}

TEST(ImagePipeline, ToTensorNormalisesLikeTorchOps) {
  const Image image = random_image(5, 7, 3, 1);
  ToTensorOptions o;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  const auto mean = torch::tensor(o.mean).view({3, 1, 1}), std = torch::tensor(o.std).view({3, 1, 1});
  const auto expected = (hwc(image).permute({2, 0, 1}).to(torch::kFloat32) / 255 - mean) / std;
  const auto out = to_tensor(image, o);
  ASSERT_EQ(out.sizes(), torch::IntArrayRef({3, 5, 7}));
  EXPECT_LE((out - expected).abs().max().item<float>(), 1e-6);

  const Image gray = random_image(4, 3, 1, 2);
  ToTensorOptions g;
  g.channels = 1;
  EXPECT_LE((to_tensor(gray, g) - hwc(gray).permute({2, 0, 1}).to(torch::kFloat32) / 255).abs().max().item<float>(),
            1e-6);
  g.mean = {0.5f};
  g.std = {0.25f};
  EXPECT_LE((to_tensor(gray, g) - (hwc(gray).permute({2, 0, 1}).to(torch::kFloat32) / 255 - 0.5) / 0.25)
                .abs().max().item<float>(),
            1e-6);
}

TEST(ImagePipeline, KeepUint8GivesCHWBytes) {
  const Image image = random_image(6, 5, 3, 3);
  ToTensorOptions o;
  o.keep_uint8 = true;
  o.mean = {0.5f};  // ignored
  const auto out = to_tensor(image, o);
  EXPECT_EQ(out.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(out, hwc(image).permute({2, 0, 1})));
}

// resize_bilinear vs F::interpolate(bilinear, align_corners=false) on floats:
// within 0.51 (rounding to uint8 plus the 15-bit weights).
TEST(ImagePipeline, ResizeBilinearMatchesTorchInterpolate) {
  namespace F = torch::nn::functional;
  const int64_t sizes[][4] = {{17, 23, 5, 9}, {5, 9, 17, 23}, {64, 48, 31, 33}, {3, 3, 7, 2}, {40, 1, 13, 3}};
  for (const auto& s : sizes) {
    for (int64_t c : {1, 3}) {
      const Image image = random_image(s[0], s[1], c, s[0] * 100 + s[2]);
      const auto input = hwc(image).permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat64);
      const auto expected = F::interpolate(
          input, F::InterpolateFuncOptions().size(std::vector<int64_t>{s[2], s[3]})
                     .mode(torch::kBilinear).align_corners(false)).squeeze(0).permute({1, 2, 0});
      const auto out = hwc(resize_bilinear(image, s[2], s[3])).to(torch::kFloat64);
      EXPECT_LE((out - expected).abs().max().item<double>(), 0.51)
          << s[0] << "x" << s[1] << " -> " << s[2] << "x" << s[3] << " c" << c;
    }
  }
}

// The exact area average of `image` over output pixel (y, x)'s source box,
// channel c, edge pixels weighted by their overlap: in double.
double area_average(const Image& image, int64_t out_h, int64_t out_w, int64_t y, int64_t x, int64_t c) {
  const double sy = static_cast<double>(image.height) / out_h, sx = static_cast<double>(image.width) / out_w;
  double sum = 0;
  for (int64_t i = 0; i < image.height; ++i) {
    const double oy = std::min(i + 1.0, (y + 1) * sy) - std::max<double>(i, y * sy);
    if (oy <= 0) continue;
    for (int64_t j = 0; j < image.width; ++j) {
      const double ox = std::min(j + 1.0, (x + 1) * sx) - std::max<double>(j, x * sx);
      if (ox > 0) sum += oy * ox * image.pixels[(i * image.width + j) * image.channels + c];
    }
  }
  return sum / (sy * sx);
}

// resize_antialiased where both axes shrink (factors 1.03 to 7.4, whole and
// fractional) against the exact area average: within 0.51 (rounding to uint8
// plus the 14-bit weights and 7-bit rows); where both stretch, against
// F::interpolate(bilinear, align_corners=false) as resize_bilinear is.
TEST(ImagePipeline, ResizeAntialiasedIsTheAreaAverageWhereItShrinks) {
  const int64_t shrink[][4] = {{17, 23, 5, 9}, {64, 48, 31, 33}, {40, 30, 39, 29}, {224, 300, 224, 150},
                               {37, 52, 5, 7}, {9, 9, 1, 1}, {40, 3, 13, 2}};
  for (const auto& s : shrink) {
    for (int64_t c : {1, 3}) {
      const Image image = random_image(s[0], s[1], c, s[0] * 7 + s[3]);
      const Image out = resize_antialiased(image, s[2], s[3]);
      ASSERT_EQ(out.height, s[2]);
      ASSERT_EQ(out.width, s[3]);
      double worst = 0;
      for (int64_t y = 0; y < s[2]; ++y) {
        for (int64_t x = 0; x < s[3]; ++x) {
          for (int64_t k = 0; k < c; ++k) {
            const double got = out.pixels[(y * s[3] + x) * c + k];
            worst = std::max(worst, std::abs(got - area_average(image, s[2], s[3], y, x, k)));
          }
        }
      }
      EXPECT_LE(worst, 0.51) << s[0] << "x" << s[1] << " -> " << s[2] << "x" << s[3] << " c" << c;
    }
  }
  namespace F = torch::nn::functional;
  for (int64_t c : {1, 3}) {
    const Image image = random_image(5, 9, c, 11);
    const auto input = hwc(image).permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat64);
    const auto expected = F::interpolate(
        input, F::InterpolateFuncOptions().size(std::vector<int64_t>{17, 23})
                   .mode(torch::kBilinear).align_corners(false)).squeeze(0).permute({1, 2, 0});
    const auto out = hwc(resize_antialiased(image, 17, 23)).to(torch::kFloat64);
    EXPECT_LE((out - expected).abs().max().item<double>(), 0.51) << "stretch c" << c;
  }
}

// The fused path (plan from the header, region + DCT-scaled decode, resize)
// against the unfused one (full decode, crop, resize) with the same draws.
// Without DCT scaling (a region under four times the output: the scaled one
// keeps twice the output) they are identical; with it the DCT's low-pass
// differs from the area average by a small mean on this smooth image.
TEST(ImagePipeline, FusedCropDecodeMatchesTheUnfusedPath) {
  const auto jpeg = encode_jpeg(photo_like(375, 500), 90);
  const auto rrc = std::make_shared<RandomResizedCrop>(64, 64);
  ToTensorOptions o;
  o.keep_uint8 = true;
  const ImagePipeline pipeline({rrc, std::make_shared<RandomHorizontalFlip>()}, o);
  DecodeOptions full_options;
  const Image full = decode_image(jpeg.data(), jpeg.size(), full_options);
  int scaled = 0, exact = 0;
  double scaled_diff = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SampleRng a(seed), b(seed), c(seed);
    const auto fused = pipeline(jpeg.data(), jpeg.size(), a).to(torch::kInt32);
    const auto unfused = pipeline(full, b).to(torch::kInt32);
    const CropPlan plan = rrc->plan(375, 500, c);
    const double mean = (fused - unfused).abs().to(torch::kFloat64).mean().item<double>();
    if (plan.region.height >= 256 && plan.region.width >= 256) {
      ++scaled;
      scaled_diff += mean;
    } else {
      ++exact;
      EXPECT_EQ(mean, 0.0) << "seed " << seed;
    }
  }
  ASSERT_GT(scaled, 10);
  ASSERT_GT(exact, 0);
  EXPECT_LT(scaled_diff / scaled, 2.0);
}

TEST(ImagePipeline, OtherFirstTransformsDecodeTheWholeImage) {
  const auto png = encode_png(random_image(9, 12, 3, 4));
  const ImagePipeline pipeline({std::make_shared<CenterCrop>(4, 6)}, ToTensorOptions{});
  SampleRng rng(1), unused(1);
  Image expected = decode_image(png.data(), png.size());
  CenterCrop(4, 6).apply(expected, unused);
  EXPECT_TRUE(torch::equal(pipeline(png.data(), png.size(), rng), to_tensor(expected, {})));
}

TEST(ImagePipeline, ConvertsChannelsOfDecodedAndGivenImages) {
  const ImagePipeline rgb({}, ToTensorOptions{});
  SampleRng rng(1);
  const auto out = rgb(random_image(3, 4, 1, 5), rng);
  ASSERT_EQ(out.size(0), 3);
  EXPECT_TRUE(torch::equal(out[0], out[1]) && torch::equal(out[1], out[2]));
  ToTensorOptions one;
  one.channels = 1;
  const auto png = encode_png(random_image(3, 4, 3, 6));
  EXPECT_EQ(ImagePipeline({}, one)(png.data(), png.size(), rng).size(0), 1);
}

TEST(ImagePipeline, IsDeterministicPerSeed) {
  const auto jpeg = encode_jpeg(photo_like(120, 90), 90);
  const ImagePipeline pipeline({std::make_shared<RandomResizedCrop>(32, 32),
                                std::make_shared<RandomHorizontalFlip>()},
                               ToTensorOptions{});
  SampleRng a(3, 1, 7), b(3, 1, 7), c(3, 1, 8);
  const auto x = pipeline(jpeg.data(), jpeg.size(), a);
  EXPECT_TRUE(torch::equal(x, pipeline(jpeg.data(), jpeg.size(), b)));
  EXPECT_FALSE(torch::equal(x, pipeline(jpeg.data(), jpeg.size(), c)));
}

TEST(ImagePipeline, ReportsBadDataAndBadOptions) {
  const ImagePipeline pipeline({std::make_shared<RandomResizedCrop>(8, 8)}, ToTensorOptions{});
  SampleRng rng(1);
  const std::vector<uint8_t> junk = {0xFF, 0xD8, 0xFF, 0x00, 0x01};
  testing::expect_data_error([&] { pipeline(junk.data(), junk.size(), rng); }, {"JPEG"});
  ToTensorOptions bad;
  bad.mean = {0.1f, 0.2f};
  testing::expect_error([&] { ImagePipeline({}, bad); }, {"mean", "2 values", "3 channels"});
  bad.mean = {};
  bad.std = {0.0f};
  testing::expect_error([&] { ImagePipeline({}, bad); }, {"std"});
  testing::expect_error([&] { ImagePipeline({nullptr}, ToTensorOptions{}); }, {"transform 0"});
}

}  // namespace
}  // namespace paisoar::data
