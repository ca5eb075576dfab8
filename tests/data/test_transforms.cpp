// The image transforms against hand-computed results and torchvision's rules:
// bilinear resize on tiny images, crops and CenterCrop's padding, flips,
// RandomResizedCrop's plan statistics and fallback, Resize's sizes, and
// RandomAffine / affine() against shifts, a 90-degree turn and PIL's output.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include "paisoar/data/transforms.h"
#include "tests/data/image_test_util.h"

namespace paisoar::data {
namespace {

using testing::fixture_image;
using testing::pixel_diff;

Image gray(int64_t h, int64_t w, std::initializer_list<int> values) {
  Image image(h, w, 1);
  size_t i = 0;
  for (int v : values) image.pixels[i++] = static_cast<uint8_t>(v);
  EXPECT_EQ(i, image.pixels.size());
  return image;
}

Image numbered(int64_t h, int64_t w, int64_t c) {
  Image image(h, w, c);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 7 + 1);
  return image;
}

// src = (dst + 0.5) * in / out - 0.5, clamped at 0; by hand:
TEST(Transforms, ResizeBilinearMatchesHandComputedValues) {
  // 4 -> 2: sources 0.5 and 2.5, the means of pairs.
  EXPECT_EQ(resize_bilinear(gray(1, 4, {0, 100, 200, 40}), 1, 2).pixels,
            (std::vector<uint8_t>{50, 120}));
  // 2 -> 4: sources 0 (clamped), 0.25, 0.75, 1.25 -> edge.
  EXPECT_EQ(resize_bilinear(gray(1, 2, {0, 100}), 1, 4).pixels,
            (std::vector<uint8_t>{0, 25, 75, 100}));
  // 2x2 -> 3x3: sources 0, 0.5, 1 (the last clamped) on both axes; 87.5 rounds up.
  EXPECT_EQ(resize_bilinear(gray(2, 2, {0, 100, 200, 50}), 3, 3).pixels,
            (std::vector<uint8_t>{0, 50, 100, 100, 88, 75, 200, 125, 50}));
  // 3 -> 2 columns: sources 0.25 and 1.75.
  EXPECT_EQ(resize_bilinear(gray(1, 3, {0, 200, 100}), 1, 2).pixels,
            (std::vector<uint8_t>{50, 125}));
}

TEST(Transforms, ResizeTreatsRgbChannelsIndependentlyAndKeepsTheSameSize) {
  const Image rgb = numbered(5, 7, 3);
  const Image out = resize_bilinear(rgb, 3, 11);
  for (int c = 0; c < 3; ++c) {
    Image plane(5, 7, 1);
    for (int64_t i = 0; i < 35; ++i) plane.pixels[i] = rgb.pixels[3 * i + c];
    const Image resized = resize_bilinear(plane, 3, 11);
    for (int64_t i = 0; i < 33; ++i) ASSERT_EQ(out.pixels[3 * i + c], resized.pixels[i]);
  }
  EXPECT_EQ(resize_bilinear(rgb, 5, 7).pixels, rgb.pixels);
  EXPECT_THROW(resize_bilinear(rgb, 0, 3), c10::ValueError);
}

TEST(Transforms, CropCutsTheRegionAndRefusesOneOutside) {
  const Image image = numbered(4, 5, 1);
  const Image part = crop(image, {1, 2, 2, 3});
  EXPECT_EQ(part.pixels, (std::vector<uint8_t>{image.at(1, 2, 0), image.at(1, 3, 0), image.at(1, 4, 0),
                                                image.at(2, 2, 0), image.at(2, 3, 0), image.at(2, 4, 0)}));
  EXPECT_THROW(crop(image, {3, 0, 2, 1}), c10::ValueError);
}

TEST(Transforms, CenterCropRoundsLikePythonAndPadsWithZeros) {
  SampleRng rng(1);
  Image image = numbered(7, 5, 1);
  // Rows: round((7 - 2) / 2) = round(2.5) = 2 (ties to even); columns: round(1) = 1.
  CenterCrop(2, 3).apply(image, rng);
  const Image original = numbered(7, 5, 1);
  EXPECT_EQ(image.pixels, crop(original, {2, 1, 2, 3}).pixels);
  // round(1.5) = 2.
  Image five = numbered(5, 5, 1);
  CenterCrop(2, 2).apply(five, rng);
  EXPECT_EQ(five.pixels, crop(numbered(5, 5, 1), {2, 2, 2, 2}).pixels);
  // 2x3 -> 4x4: torchvision pads (left, top, right, bottom) = (0, 1, 1, 1).
  Image small = gray(2, 3, {1, 2, 3, 4, 5, 6});
  CenterCrop(4, 4).apply(small, rng);
  EXPECT_EQ(small.pixels, (std::vector<uint8_t>{0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}));
  // Mixed: rows cut at round(1) = 1, columns padded by 1 on the left.
  Image mixed = gray(5, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CenterCrop(3, 4).apply(mixed, rng);
  EXPECT_EQ(mixed.pixels, (std::vector<uint8_t>{0, 3, 4, 0, 0, 5, 6, 0, 0, 7, 8, 0}));
}

TEST(Transforms, FlipsMirrorWithTheirProbability) {
  const Image rgb = numbered(2, 3, 3);
  Image h = rgb, v = rgb;
  SampleRng rng(7);
  RandomHorizontalFlip(1.0).apply(h, rng);
  RandomVerticalFlip(1.0).apply(v, rng);
  for (int64_t y = 0; y < 2; ++y) {
    for (int64_t x = 0; x < 3; ++x) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(h.at(y, x, c), rgb.at(y, 2 - x, c));
        EXPECT_EQ(v.at(y, x, c), rgb.at(1 - y, x, c));
      }
    }
  }
  Image same = rgb;
  RandomHorizontalFlip(0.0).apply(same, rng);
  EXPECT_EQ(same.pixels, rgb.pixels);
  int flipped = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    Image image = rgb;
    SampleRng r(seed, 0, seed);
    RandomHorizontalFlip(0.3).apply(image, r);
    flipped += image.pixels != rgb.pixels;
  }
  EXPECT_NEAR(flipped / 2000.0, 0.3, 0.04);  // 4 standard deviations
}

TEST(Transforms, RandomResizedCropPlansFollowScaleAndRatio) {
  const RandomResizedCrop rrc(224, 224);
  const int64_t H = 375, W = 500;
  double area_sum = 0, log_ratio_sum = 0;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> distinct;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    SampleRng rng(42, 3, i);
    const CropPlan p = rrc.plan(H, W, rng);
    const Region& r = p.region;
    EXPECT_EQ(p.out_height, 224);
    EXPECT_EQ(p.out_width, 224);
    ASSERT_TRUE(r.top >= 0 && r.left >= 0 && r.height > 0 && r.width > 0 &&
                r.top + r.height <= H && r.left + r.width <= W);
    const double area = double(r.height * r.width) / (H * W);
    // w and h are rounded, so the bounds hold to within one pixel per side.
    EXPECT_GE(double((r.height + 1) * (r.width + 1)) / (H * W), 0.08);
    EXPECT_LE(area, 1.0);
    EXPECT_GE(double(r.width + 1) / std::max<int64_t>(r.height - 1, 1), 3.0 / 4.0);
    EXPECT_LE(double(r.width - 1) / (r.height + 1), 4.0 / 3.0);
    area_sum += area;
    log_ratio_sum += std::log(double(r.width) / r.height);
    distinct.emplace(r.top, r.left, r.height, r.width);
    SampleRng again(42, 3, i);
    const CropPlan q = rrc.plan(H, W, again);
    EXPECT_TRUE(q.region.top == r.top && q.region.left == r.left && q.region.height == r.height &&
                q.region.width == r.width);
  }
  // torchvision's get_params on 375x500 (make_fixtures.py, 200k draws): area
  // fraction mean 0.4339 (std 0.2168), log(w/h) mean 0.0308 (std 0.1641; wide
  // crops fit a wide image more often). Tolerance: 4 standard errors of n draws.
  EXPECT_NEAR(area_sum / n, 0.4339, 4 * 0.2168 / std::sqrt(n));
  EXPECT_NEAR(log_ratio_sum / n, 0.0308, 4 * 0.1641 / std::sqrt(n));
  EXPECT_GT(distinct.size(), size_t(n * 0.99));
}

TEST(Transforms, RandomResizedCropFallsBackToTheClampedCentralCrop) {
  SampleRng rng(5);
  // 10x1000: no crop of >= 8% area fits in 10 rows -> height 10, width round(10 * 4/3).
  CropPlan p = RandomResizedCrop(8, 8).plan(10, 1000, rng);
  EXPECT_EQ(p.region.height, 10);
  EXPECT_EQ(p.region.width, 13);
  EXPECT_EQ(p.region.top, 0);
  EXPECT_EQ(p.region.left, (1000 - 13) / 2);
  p = RandomResizedCrop(8, 8, {0.99, 1.0}).plan(1000, 10, rng);
  EXPECT_EQ(p.region.width, 10);
  EXPECT_EQ(p.region.height, 13);  // round(10 / 0.75) = round(13.33)
  EXPECT_EQ(p.region.top, (1000 - 13) / 2);
  EXPECT_THROW(RandomResizedCrop(8, 8, {0.5, 0.1}), c10::ValueError);
}

TEST(Transforms, ResizeKeepsTheAspectRatioLikeTorchvision) {
  SampleRng rng(1);
  CropPlan p = Resize(256).plan(375, 500, rng);
  EXPECT_EQ(p.out_height, 256);
  EXPECT_EQ(p.out_width, 341);  // int(256 * 500 / 375) = int(341.33)
  EXPECT_EQ(p.region.height, 375);
  p = Resize(256).plan(500, 375, rng);
  EXPECT_EQ(p.out_height, 341);
  EXPECT_EQ(p.out_width, 256);
  p = Resize(10, 20).plan(500, 375, rng);
  EXPECT_EQ(p.out_height, 10);
  EXPECT_EQ(p.out_width, 20);
  // The unfused path: crop (the whole image) then resize.
  Image image = numbered(9, 12, 3);
  Resize(6).apply(image, rng);
  EXPECT_EQ(image.pixels, resize_antialiased(numbered(9, 12, 3), 6, 8).pixels);
}

TEST(Transforms, CropResizeApplyIsCropThenResize) {
  const RandomResizedCrop rrc(5, 6);
  const Image original = numbered(40, 30, 3);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SampleRng a(seed), b(seed);
    Image image = original;
    rrc.apply(image, a);
    const CropPlan p = rrc.plan(40, 30, b);
    EXPECT_EQ(image.pixels, resize_antialiased(crop(original, p.region), 5, 6).pixels);
  }
}

TEST(Transforms, AffineWithoutRotationIsAShift) {
  const Image image = numbered(6, 7, 3);
  const Image out = affine(image, 0.0, 2, -1, 9);
  for (int64_t y = 0; y < 6; ++y) {
    for (int64_t x = 0; x < 7; ++x) {
      const bool inside = x - 2 >= 0 && y + 1 < 6;
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(out.at(y, x, c), inside ? image.at(y + 1, x - 2, c) : 9) << y << "," << x;
      }
    }
  }
}

// Counter-clockwise on screen: out(y, x) = in(N-1-x, y), numpy's rot90.
TEST(Transforms, AffineByNinetyDegreesRotatesASquare) {
  const Image image = numbered(5, 5, 1);
  const Image out = affine(image, 90.0, 0, 0);
  for (int64_t y = 0; y < 5; ++y) {
    for (int64_t x = 0; x < 5; ++x) EXPECT_EQ(out.at(y, x, 0), image.at(4 - x, y, 0));
  }
  const Image back = affine(affine(out, -90.0, 0, 0), 0.0, 0, 0);
  EXPECT_EQ(back.pixels, image.pixels);
}

// torchvision's F.affine on a PIL image (30 degrees, shift (2, -1)); PIL steps
// 16.16 fixed point, we step doubles, so a sample exactly on a pixel boundary
// may round the other way: at most 2 of the 256 pixels may differ (measured 0).
TEST(Transforms, AffineMatchesTorchvisionOnPil) {
  const Image out = affine(fixture_image("affine_src.pgm"), 30.0, 2, -1);
  const Image reference = fixture_image("affine_30.pgm");
  ASSERT_EQ(out.pixels.size(), reference.pixels.size());
  int differ = 0;
  for (size_t i = 0; i < out.pixels.size(); ++i) differ += out.pixels[i] != reference.pixels[i];
  EXPECT_LE(differ, 2);
}

TEST(Transforms, RandomAffineWithoutDegreesShiftsWithinItsRange) {
  const Image image = numbered(10, 10, 1);
  const RandomAffine t(0.0, {0.2, 0.3});
  std::set<std::pair<int64_t, int64_t>> shifts;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    Image out = image;
    SampleRng rng(seed);
    t.apply(out, rng);
    bool found = false;
    for (int64_t dy = -3; dy <= 3 && !found; ++dy) {
      for (int64_t dx = -2; dx <= 2 && !found; ++dx) {
        if (affine(image, 0.0, dx, dy).pixels == out.pixels) {
          found = true;
          shifts.emplace(dx, dy);
        }
      }
    }
    EXPECT_TRUE(found) << "seed " << seed << " is not a shift by at most (2, 3)";
  }
  EXPECT_EQ(shifts.size(), 5u * 7u);  // every rounded shift occurs (the rarest ~21 times)
  EXPECT_THROW(RandomAffine(-1.0), c10::ValueError);
}

}  // namespace
}  // namespace paisoar::data
