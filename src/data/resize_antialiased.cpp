// resize_antialiased, the crop transforms' resize: per axis, a shrink is the
// exact area average (each output pixel the mean of the source area it
// covers, fractional edge pixels weighted by their overlap, none skipped, as
// OpenCV's INTER_AREA) and a stretch is bilinear with half-pixel centres.
// Separable and fixed-point: each needed source row is resampled horizontally
// once into 7-fractional-bit values, held in a ring with a slot per vertical
// tap (rows only go down), then the ring is blended vertically in int32 and
// rounded.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/data/transforms.h"

namespace paisoar::data {
namespace {

constexpr int kBits = 14;  // of a weight
constexpr int32_t kOne = 1 << kBits;
constexpr int kRowBits = 7;  // fractional bits of a horizontally resampled value (<= 255 << 7: int16)

// Output pixel d reads source pixels start[d] .. start[d] + taps - 1 with
// weights weight[d * taps ...], which sum to kOne (zeros pad the short ones).
struct AxisFilter {
  int64_t taps = 1;
  std::vector<int32_t> start;
  std::vector<int32_t> weight;
};

// The exact weights of output pixel d: (first source index, weights).
struct Span {
  int64_t first = 0;
  std::vector<double> weights;
};

Span area_span(int64_t d, double scale, int64_t in) {
  const double lo = static_cast<double>(d) * scale, hi = std::min(lo + scale, static_cast<double>(in));
  Span s;
  s.first = static_cast<int64_t>(lo);
  const auto end = std::min<int64_t>(in, static_cast<int64_t>(std::ceil(hi - 1e-9)));
  for (int64_t j = s.first; j < end; ++j) {
    const double overlap = std::min(hi, static_cast<double>(j + 1)) - std::max(lo, static_cast<double>(j));
    s.weights.push_back(std::max(overlap, 0.0) / scale);
  }
  return s;
}

// PyTorch's area_pixel_compute_source_index (align_corners=False), clamped.
Span bilinear_span(int64_t d, double scale, int64_t in) {
  const double src = std::max((static_cast<double>(d) + 0.5) * scale - 0.5, 0.0);
  Span s;
  s.first = std::min(static_cast<int64_t>(src), in - 1);
  const double frac = src - static_cast<double>(s.first);
  s.weights = {1.0 - frac};
  if (s.first + 1 < in) s.weights.push_back(frac);
  return s;
}

AxisFilter axis_filter(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  std::vector<Span> spans(out);
  AxisFilter f;
  for (int64_t d = 0; d < out; ++d) {
    spans[d] = scale > 1.0 ? area_span(d, scale, in) : bilinear_span(d, scale, in);
    f.taps = std::max<int64_t>(f.taps, static_cast<int64_t>(spans[d].weights.size()));
  }
  f.start.resize(out);
  f.weight.assign(out * f.taps, 0);
  for (int64_t d = 0; d < out; ++d) {
    // Shifted left at the far edge so every read stays inside; start stays non-decreasing.
    const int64_t start = std::min(spans[d].first, in - f.taps);
    int32_t* w = f.weight.data() + d * f.taps;
    int32_t sum = 0, largest = 0;
    for (size_t k = 0; k < spans[d].weights.size(); ++k) {
      const int64_t at = spans[d].first - start + static_cast<int64_t>(k);
      w[at] = static_cast<int32_t>(std::lround(spans[d].weights[k] * kOne));
      sum += w[at];
      if (w[at] > w[largest]) largest = static_cast<int32_t>(at);
    }
    w[largest] += kOne - sum;  // the rounded weights sum to exactly one
    f.start[d] = static_cast<int32_t>(start);
  }
  return f;
}

// T: the taps per output pixel, fixed so the compiler unrolls the gather.
template <int C, int T>
void horizontal(const uint8_t* src, const AxisFilter& f, int16_t* dst) {
  const int64_t n = static_cast<int64_t>(f.start.size());
  const int32_t* w = f.weight.data();
  const int32_t* start = f.start.data();
  for (int64_t x = 0; x < n; ++x, w += T, dst += C) {
    const uint8_t* s = src + static_cast<int64_t>(start[x]) * C;
    for (int c = 0; c < C; ++c) {
      int32_t acc = 1 << (kBits - kRowBits - 1);
      for (int k = 0; k < T; ++k) acc += s[k * C + c] * w[k];
      dst[c] = static_cast<int16_t>(acc >> (kBits - kRowBits));
    }
  }
}

template <int C>
void horizontal_any(const uint8_t* src, const AxisFilter& f, int16_t* dst) {
  const int64_t n = static_cast<int64_t>(f.start.size()), taps = f.taps;
  const int32_t* w = f.weight.data();
  for (int64_t x = 0; x < n; ++x, w += taps) {
    const uint8_t* s = src + static_cast<int64_t>(f.start[x]) * C;
    for (int c = 0; c < C; ++c) {
      int32_t acc = 1 << (kBits - kRowBits - 1);
      for (int64_t k = 0; k < taps; ++k) acc += s[k * C + c] * w[k];
      dst[x * C + c] = static_cast<int16_t>(acc >> (kBits - kRowBits));
    }
  }
}

template <int C>
using RowFilter = void (*)(const uint8_t*, const AxisFilter&, int16_t*);

template <int C>
RowFilter<C> row_filter(int64_t taps) {
  switch (taps) {
    case 1: return horizontal<C, 1>;
    case 2: return horizontal<C, 2>;
    case 3: return horizontal<C, 3>;
    case 4: return horizontal<C, 4>;
    default: return horizontal_any<C>;
  }
}

constexpr int kShift = kBits + kRowBits;
constexpr int64_t kMaxFusedTaps = 4;

// One output row from T horizontally resampled rows, in one pass.
template <int T>
void vertical(const int16_t* const* rows, const int32_t* w, int64_t n, uint8_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    int32_t acc = 1 << (kShift - 1);
    for (int k = 0; k < T; ++k) acc += rows[k][i] * w[k];
    dst[i] = static_cast<uint8_t>(acc >> kShift);
  }
}

template <int C>
Image resample(const Image& src, int64_t out_h, int64_t out_w) {
  Image out(out_h, out_w, C);
  const AxisFilter fx = axis_filter(src.width, out_w);
  const AxisFilter fy = axis_filter(src.height, out_h);
  const RowFilter<C> filter_row = row_filter<C>(fx.taps);
  const int64_t n = out_w * C, taps = fy.taps;
  std::vector<int16_t> ring(static_cast<size_t>(taps * n));  // source row r in slot r % taps
  std::vector<int32_t> acc(static_cast<size_t>(n));
  int64_t computed = 0;  // source rows below this one are in the ring (if still in the window)
  for (int64_t y = 0; y < out_h; ++y) {
    const int64_t first = fy.start[y];
    for (int64_t r = std::max(computed, first); r < first + taps; ++r) {
      filter_row(src.row(r), fx, ring.data() + (r % taps) * n);
    }
    computed = first + taps;
    const int16_t* rows[kMaxFusedTaps];
    for (int64_t k = 0; k < taps && k < kMaxFusedTaps; ++k) rows[k] = ring.data() + ((first + k) % taps) * n;
    const int32_t* w = fy.weight.data() + y * taps;
    uint8_t* dst = out.row(y);
    switch (taps) {
      case 1: vertical<1>(rows, w, n, dst); break;
      case 2: vertical<2>(rows, w, n, dst); break;
      case 3: vertical<3>(rows, w, n, dst); break;
      case 4: vertical<4>(rows, w, n, dst); break;
      default: {
        std::fill(acc.begin(), acc.end(), 1 << (kShift - 1));
        for (int64_t k = 0; k < taps; ++k) {
          const int16_t* row = ring.data() + ((first + k) % taps) * n;
          for (int64_t i = 0; i < n; ++i) acc[i] += row[i] * w[k];
        }
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(acc[i] >> kShift);
      }
    }
  }
  return out;
}

}  // namespace

Image resize_antialiased(const Image& src, int64_t out_height, int64_t out_width) {
  if (src.empty() || (src.channels != 1 && src.channels != 3) || out_height <= 0 || out_width <= 0) {
    C10_THROW_ERROR(ValueError, "resize_antialiased: cannot resize a " + std::to_string(src.height) + "x" +
                                    std::to_string(src.width) + "x" + std::to_string(src.channels) +
                                    " image to " + std::to_string(out_height) + "x" +
                                    std::to_string(out_width) +
                                    "; both must be non-empty with 1 or 3 channels");
  }
  if (out_height == src.height && out_width == src.width) return src;
  return src.channels == 1 ? resample<1>(src, out_height, out_width)
                           : resample<3>(src, out_height, out_width);
}

}  // namespace paisoar::data
