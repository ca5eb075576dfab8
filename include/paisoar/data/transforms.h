// Image augmentations with torchvision.transforms' names and semantics,
// composed in a list and applied to an 8-bit HWC Image. Each draws its random
// numbers from the sample's SampleRng only, so results are reproducible.
// Plain C++ (no LibTorch).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/sample_rng.h"

namespace paisoar::data {

class ImageTransform {
 public:
  virtual ~ImageTransform() = default;
  virtual void apply(Image& image, SampleRng& rng) const = 0;
};

// A transform that cuts a region out of the image and resizes it to a fixed
// size (resize_antialiased: area average where it shrinks, bilinear where it
// stretches). ImagePipeline fuses a leading one into the JPEG decode: it asks
// for the plan from the header's size, decodes only that region at a reduced
// scale, and resizes.
struct CropPlan {
  Region region;
  int64_t out_height = 0;
  int64_t out_width = 0;
};
class CropResize : public ImageTransform {
 public:
  virtual CropPlan plan(int64_t height, int64_t width, SampleRng& rng) const = 0;
  // plan() then crop and resize: the unfused path.
  void apply(Image& image, SampleRng& rng) const final;
};

// torchvision.transforms.RandomResizedCrop: area fraction in `scale`, aspect
// ratio log-uniform in `ratio`, 10 tries, then the central crop fallback.
class RandomResizedCrop : public CropResize {
 public:
  RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale = {0.08, 1.0},
                    std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});
  CropPlan plan(int64_t height, int64_t width, SampleRng& rng) const override;
 private:
  int64_t height_, width_;
  std::array<double, 2> scale_, ratio_;
};

// torchvision.transforms.CenterCrop (no resize; pads with 0 if the image is smaller).
class CenterCrop : public ImageTransform {
 public:
  CenterCrop(int64_t height, int64_t width);
  void apply(Image& image, SampleRng& rng) const override;
 private:
  int64_t height_, width_;
};

// torchvision.transforms.Resize: with one size, the shorter side becomes
// `size` and the aspect ratio is kept; with two, the exact size. Bilinear.
class Resize : public CropResize {
 public:
  explicit Resize(int64_t shorter_side);
  Resize(int64_t height, int64_t width);
  CropPlan plan(int64_t height, int64_t width, SampleRng& rng) const override;
 private:
  int64_t height_, width_;  // width_ == 0: shorter-side mode
};

class RandomHorizontalFlip : public ImageTransform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  void apply(Image& image, SampleRng& rng) const override;
 private:
  double p_;
};

class RandomVerticalFlip : public ImageTransform {
 public:
  explicit RandomVerticalFlip(double p = 0.5);
  void apply(Image& image, SampleRng& rng) const override;
 private:
  double p_;
};

// torchvision.transforms.RandomAffine restricted to rotation and translation,
// for small images (MNIST-like): angle uniform in [-degrees, degrees],
// shift uniform in [-tx*W, tx*W] x [-ty*H, ty*H], rounded like torchvision,
// nearest-neighbour sampling, `fill` outside.
class RandomAffine : public ImageTransform {
 public:
  RandomAffine(double degrees, std::array<double, 2> translate = {0.0, 0.0}, uint8_t fill = 0);
  void apply(Image& image, SampleRng& rng) const override;
 private:
  double degrees_;
  std::array<double, 2> translate_;
  uint8_t fill_;
};

using TransformList = std::vector<std::shared_ptr<const ImageTransform>>;

// Resamples `src` to out_height x out_width, bilinear with half-pixel centres
// and no antialiasing: torch.nn.functional.interpolate(mode="bilinear",
// align_corners=False), i.e. torchvision's tensor path with antialias=False.
// Fixed-point weights; the result is within 0.51 of the exact value. Throws
// c10::ValueError for an empty image or output size.
Image resize_bilinear(const Image& src, int64_t out_height, int64_t out_width);
// Resamples `src` to out_height x out_width the way the crop transforms do:
// per axis, a shrink is the exact area average (each output pixel the mean of
// the source area it covers, edge pixels weighted by their overlap; OpenCV's
// INTER_AREA), a stretch is resize_bilinear's interpolation. Fixed-point
// weights; the result is within 0.51 of the exact value. Throws
// c10::ValueError for an empty image or output size.
Image resize_antialiased(const Image& src, int64_t out_height, int64_t out_width);
// The region's pixels. Throws c10::ValueError if it is not inside `src`.
Image crop(const Image& src, const Region& region);

// torchvision.transforms.functional.affine(angle, translate=(tx, ty), scale=1,
// shear=0, NEAREST) as on a PIL image: output pixel centre (x + 0.5, y + 0.5)
// is mapped back through the inverse of "rotate by `angle_degrees` about the
// centre (W/2, H/2), counter-clockwise on screen, then shift by (tx, ty)", and
// floor() picks the source pixel; outside the image is `fill`. So angle 0
// gives out(y, x) = in(y - ty, x - tx), and 90 on an N x N image gives
// out(y, x) = in(N-1-x, y) (numpy's rot90).
Image affine(const Image& src, double angle_degrees, int64_t tx, int64_t ty, uint8_t fill = 0);

}  // namespace paisoar::data
