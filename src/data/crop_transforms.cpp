// The cropping transforms: crop(), CropResize's unfused path, and the plans of
// RandomResizedCrop and Resize, plus CenterCrop. Rounding follows Python's
// round() (ties to even: std::nearbyint) where torchvision uses it.
#include <algorithm>

#include <c10/util/Exception.h>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "paisoar/data/transforms.h"

namespace paisoar::data {
namespace {

int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

std::string size_text(int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); }

void check_size(int64_t height, int64_t width, const char* who) {
  if (height <= 0 || width <= 0) {
    C10_THROW_ERROR(ValueError, std::string(who) + ": output size " + size_text(height, width) +
                                " must be positive");
  }
}

}  // namespace

Image crop(const Image& src, const Region& r) {
  if (r.top < 0 || r.left < 0 || r.height <= 0 || r.width <= 0 || r.top + r.height > src.height ||
      r.left + r.width > src.width) {
    C10_THROW_ERROR(ValueError, "crop: region " + size_text(r.height, r.width) + " at (" +
                                std::to_string(r.top) + ", " + std::to_string(r.left) +
                                ") is not inside the " + size_text(src.height, src.width) +
                                " image");
  }
  Image out(r.height, r.width, src.channels);
  const int64_t bytes = r.width * src.channels;
  for (int64_t y = 0; y < r.height; ++y) {
    std::memcpy(out.row(y), src.row(r.top + y) + r.left * src.channels, bytes);
  }
  return out;
}

void CropResize::apply(Image& image, SampleRng& rng) const {
  const CropPlan p = plan(image.height, image.width, rng);
  const Region& r = p.region;
  const bool whole = r.top == 0 && r.left == 0 && r.height == image.height && r.width == image.width;
  if (!whole) image = crop(image, r);
  if (image.height != p.out_height || image.width != p.out_width) {
    image = resize_antialiased(image, p.out_height, p.out_width);
  }
}

RandomResizedCrop::RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                     std::array<double, 2> ratio)
    : height_(height), width_(width), scale_(scale), ratio_(ratio) {
  check_size(height, width, "RandomResizedCrop");
  if (!(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) {
    C10_THROW_ERROR(ValueError, "RandomResizedCrop: scale (" + std::to_string(scale[0]) + ", " +
                                std::to_string(scale[1]) + ") must satisfy 0 < min <= max <= 1");
  }
  if (!(ratio[0] > 0 && ratio[0] <= ratio[1])) {
    C10_THROW_ERROR(ValueError, "RandomResizedCrop: ratio (" + std::to_string(ratio[0]) + ", " +
                                std::to_string(ratio[1]) + ") must satisfy 0 < min <= max");
  }
}

// torchvision's RandomResizedCrop.get_params, drawing from `rng`.
CropPlan RandomResizedCrop::plan(int64_t height, int64_t width, SampleRng& rng) const {
  CropPlan p;
  p.out_height = height_;
  p.out_width = width_;
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio_[0]), log_hi = std::log(ratio_[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_[0], scale_[1]);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int64_t w = py_round(std::sqrt(target_area * aspect));
    const int64_t h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      p.region.top = rng.uniform_int(0, height - h);
      p.region.left = rng.uniform_int(0, width - w);
      p.region.height = h;
      p.region.width = w;
      return p;
    }
  }
  // Fallback: the central crop, its aspect ratio clamped into `ratio`.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio_[0]) {
    h = std::clamp<int64_t>(py_round(w / ratio_[0]), 1, height);
  } else if (in_ratio > ratio_[1]) {
    w = std::clamp<int64_t>(py_round(h * ratio_[1]), 1, width);
  }
  p.region = Region{(height - h) / 2, (width - w) / 2, h, w};
  return p;
}

Resize::Resize(int64_t shorter_side) : height_(shorter_side), width_(0) {
  check_size(shorter_side, shorter_side, "Resize");
}

Resize::Resize(int64_t height, int64_t width) : height_(height), width_(width) {
  check_size(height, width, "Resize");
}

// The whole image; torchvision's output size (the longer side truncated, as
// int(size * long / short) does).
CropPlan Resize::plan(int64_t height, int64_t width, SampleRng&) const {
  CropPlan p;
  p.region = Region{0, 0, height, width};
  if (width_ > 0) {
    p.out_height = height_;
    p.out_width = width_;
    return p;
  }
  const int64_t shorter = std::min(height, width), longer = std::max(height, width);
  const auto new_long = static_cast<int64_t>(static_cast<double>(height_ * longer) / shorter);
  p.out_height = height <= width ? height_ : new_long;
  p.out_width = height <= width ? new_long : height_;
  return p;
}

CenterCrop::CenterCrop(int64_t height, int64_t width) : height_(height), width_(width) {
  check_size(height, width, "CenterCrop");
}

// Per axis: a longer input is cut at round((in - out) / 2); a shorter one is
// placed at (out - in) / 2 in zeros (torchvision pads left/top by the floor).
void CenterCrop::apply(Image& image, SampleRng&) const {
  if (image.height == height_ && image.width == width_) return;
  struct Span {
    int64_t src, dst, len;
  };
  auto span = [](int64_t in, int64_t out) {
    if (in >= out) return Span{py_round((in - out) / 2.0), 0, out};
    return Span{0, (out - in) / 2, in};
  };
  const Span ys = span(image.height, height_), xs = span(image.width, width_);
  const int64_t c = image.channels;
  Image out(height_, width_, c);  // zero-filled
  for (int64_t y = 0; y < ys.len; ++y) {
    std::memcpy(out.row(ys.dst + y) + xs.dst * c, image.row(ys.src + y) + xs.src * c, xs.len * c);
  }
  image = std::move(out);
}

}  // namespace paisoar::data
