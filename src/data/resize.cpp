// Bilinear resize (align_corners=False, no antialias), the hot loop of the
// image pipeline: per output column the two source offsets and a 15-bit
// weight are computed once; each needed source row is resampled horizontally
// once into a row of 7-fractional-bit values (cached for the next output
// row), then two such rows are blended vertically in int32 (which the
// compiler vectorises) and rounded. Weight and intermediate rounding move a
// result by under 0.01 of a level.
#include <algorithm>

#include <c10/util/Exception.h>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "paisoar/data/transforms.h"

namespace paisoar::data {
namespace {

constexpr int kBits = 15;
constexpr int32_t kOne = 1 << kBits;
constexpr int kRowBits = 7;  // fractional bits of a horizontally resampled value

struct Taps {
  std::vector<int32_t> first, second;  // source indices, times `stride`
  std::vector<int32_t> weight;         // of `second`, in [0, kOne]
};

// PyTorch's area_pixel_compute_source_index: src = (dst + 0.5) * in / out - 0.5,
// clamped at 0; the right/bottom neighbour is clamped at the edge.
Taps taps(int64_t in, int64_t out, int64_t stride) {
  Taps t;
  t.first.resize(out);
  t.second.resize(out);
  t.weight.resize(out);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t d = 0; d < out; ++d) {
    const double s = std::max((static_cast<double>(d) + 0.5) * scale - 0.5, 0.0);
    const int64_t i0 = std::min(static_cast<int64_t>(s), in - 1);
    const int64_t i1 = std::min(i0 + 1, in - 1);
    t.first[d] = static_cast<int32_t>(i0 * stride);
    t.second[d] = static_cast<int32_t>(i1 * stride);
    t.weight[d] = static_cast<int32_t>((s - static_cast<double>(i0)) * kOne + 0.5);
  }
  return t;
}

// dst[x*C + c] = src[first[x] + c] * (1 - w) + src[second[x] + c] * w, times 2^7
// (at most 255 * 2^7: the vertical blend's products fit int32).
template <int C>
void horizontal(const uint8_t* src, const Taps& t, int32_t* dst) {
  const int64_t n = static_cast<int64_t>(t.weight.size());
  for (int64_t x = 0; x < n; ++x) {
    const uint8_t* a = src + t.first[x];
    const uint8_t* b = src + t.second[x];
    const int32_t w = t.weight[x];
    for (int c = 0; c < C; ++c) {
      const int32_t v = a[c] * (kOne - w) + b[c] * w;
      dst[x * C + c] = (v + (1 << (kBits - kRowBits - 1))) >> (kBits - kRowBits);
    }
  }
}

template <int C>
Image resize(const Image& src, int64_t out_h, int64_t out_w) {
  Image out(out_h, out_w, C);
  const Taps tx = taps(src.width, out_w, C);
  const Taps ty = taps(src.height, out_h, 1);
  const int64_t n = out_w * C;
  // rows[i] holds source row held[i] resampled horizontally; rows only go down,
  // so the previous output row's second row is often this one's first.
  std::vector<int32_t> rows[2] = {std::vector<int32_t>(n), std::vector<int32_t>(n)};
  int64_t held[2] = {-1, -1};
  constexpr int kShift = kBits + kRowBits;
  constexpr int32_t kHalf = 1 << (kShift - 1);
  for (int64_t y = 0; y < out_h; ++y) {
    const int64_t y0 = ty.first[y], y1 = ty.second[y];
    if (held[0] != y0) {
      if (held[1] == y0) {
        std::swap(rows[0], rows[1]);
        std::swap(held[0], held[1]);
      } else {
        horizontal<C>(src.row(y0), tx, rows[0].data());
        held[0] = y0;
      }
    }
    if (y1 != y0 && held[1] != y1) {
      horizontal<C>(src.row(y1), tx, rows[1].data());
      held[1] = y1;
    }
    const int32_t w = ty.weight[y];
    const int32_t* a = rows[0].data();
    const int32_t* b = y1 == y0 ? a : rows[1].data();
    uint8_t* dst = out.row(y);
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = static_cast<uint8_t>((a[i] * (kOne - w) + b[i] * w + kHalf) >> kShift);
    }
  }
  return out;
}

}  // namespace

Image resize_bilinear(const Image& src, int64_t out_height, int64_t out_width) {
  if (src.empty() || (src.channels != 1 && src.channels != 3) || out_height <= 0 ||
      out_width <= 0) {
    C10_THROW_ERROR(ValueError, 
        "resize_bilinear: cannot resize a " + std::to_string(src.height) + "x" +
        std::to_string(src.width) + "x" + std::to_string(src.channels) + " image to " +
        std::to_string(out_height) + "x" + std::to_string(out_width) +
        "; both must be non-empty with 1 or 3 channels");
  }
  if (out_height == src.height && out_width == src.width) return src;
  return src.channels == 1 ? resize<1>(src, out_height, out_width)
                           : resize<3>(src, out_height, out_width);
}

}  // namespace paisoar::data
