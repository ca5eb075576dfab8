// The geometric augmentations that keep the image size: random flips and
// RandomAffine (rotation + translation) with the functional affine() under it.
// Every transform draws the same numbers whether or not it fires, so the
// stream a later transform sees does not depend on this one's outcome.
#include <algorithm>

#include <c10/util/Exception.h>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "paisoar/data/transforms.h"

namespace paisoar::data {
namespace {

void check_probability(double p, const char* who) {
  if (!(p >= 0 && p <= 1)) {
    C10_THROW_ERROR(ValueError, std::string(who) + ": p = " + std::to_string(p) +
                                " must lie in [0, 1]");
  }
}

void flip_horizontally(Image& image) {
  const int64_t c = image.channels;
  for (int64_t y = 0; y < image.height; ++y) {
    uint8_t* row = image.row(y);
    for (int64_t l = 0, r = image.width - 1; l < r; ++l, --r) {
      std::swap_ranges(row + l * c, row + l * c + c, row + r * c);
    }
  }
}

void flip_vertically(Image& image) {
  const int64_t bytes = image.width * image.channels;
  for (int64_t t = 0, b = image.height - 1; t < b; ++t, --b) {
    std::swap_ranges(image.row(t), image.row(t) + bytes, image.row(b));
  }
}

}  // namespace

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  check_probability(p, "RandomHorizontalFlip");
}

void RandomHorizontalFlip::apply(Image& image, SampleRng& rng) const {
  if (rng.bernoulli(p_)) flip_horizontally(image);
}

RandomVerticalFlip::RandomVerticalFlip(double p) : p_(p) {
  check_probability(p, "RandomVerticalFlip");
}

void RandomVerticalFlip::apply(Image& image, SampleRng& rng) const {
  if (rng.bernoulli(p_)) flip_vertically(image);
}

// PIL's affine transform with NEAREST, as torchvision drives it for a PIL
// image: the inverse matrix of _get_inverse_affine_matrix (scale 1, no
// shear), evaluated at pixel centres and stepped along rows like PIL does.
Image affine(const Image& src, double angle_degrees, int64_t tx, int64_t ty, uint8_t fill) {
  const double rad = angle_degrees * M_PI / 180.0;
  const double cx = src.width * 0.5, cy = src.height * 0.5;
  const double m0 = std::cos(rad), m1 = std::sin(rad), m3 = -std::sin(rad), m4 = std::cos(rad);
  const double m2 = m0 * (-cx - tx) + m1 * (-cy - ty) + cx;
  const double m5 = m3 * (-cx - tx) + m4 * (-cy - ty) + cy;
  const int64_t c = src.channels;
  Image out(src.height, src.width, c);
  double row_x = m2 + m0 * 0.5 + m1 * 0.5, row_y = m5 + m3 * 0.5 + m4 * 0.5;
  for (int64_t y = 0; y < out.height; ++y, row_x += m1, row_y += m4) {
    uint8_t* dst = out.row(y);
    double sx = row_x, sy = row_y;
    for (int64_t x = 0; x < out.width; ++x, sx += m0, sy += m3, dst += c) {
      const int64_t ix = sx < 0 ? -1 : static_cast<int64_t>(sx);
      const int64_t iy = sy < 0 ? -1 : static_cast<int64_t>(sy);
      if (ix < 0 || ix >= src.width || iy < 0 || iy >= src.height) {
        for (int64_t k = 0; k < c; ++k) dst[k] = fill;
      } else {
        std::copy_n(src.row(iy) + ix * c, c, dst);
      }
    }
  }
  return out;
}

RandomAffine::RandomAffine(double degrees, std::array<double, 2> translate, uint8_t fill)
    : degrees_(degrees), translate_(translate), fill_(fill) {
  if (!(degrees >= 0)) {
    C10_THROW_ERROR(ValueError, "RandomAffine: degrees = " + std::to_string(degrees) +
                                " must be >= 0 (the angle is drawn from [-degrees, degrees])");
  }
  for (double t : translate) {
    if (!(t >= 0 && t <= 1)) {
      C10_THROW_ERROR(ValueError, "RandomAffine: translate fraction " + std::to_string(t) +
                                  " must lie in [0, 1]");
    }
  }
}

// torchvision's RandomAffine.get_params: the angle, then the shift rounded
// like Python's round() (ties to even).
void RandomAffine::apply(Image& image, SampleRng& rng) const {
  const double angle = rng.uniform(-degrees_, degrees_);
  const double max_dx = translate_[0] * image.width, max_dy = translate_[1] * image.height;
  const auto tx = static_cast<int64_t>(std::nearbyint(rng.uniform(-max_dx, max_dx)));
  const auto ty = static_cast<int64_t>(std::nearbyint(rng.uniform(-max_dy, max_dy)));
  if (angle == 0 && tx == 0 && ty == 0) return;
  image = affine(image, angle, tx, ty, fill_);
}

}  // namespace paisoar::data
