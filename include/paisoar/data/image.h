// A decoded 8-bit image in interleaved (HWC) layout: what the decoders produce,
// what the image transforms rewrite, and what to_tensor turns into CHW floats.
// Plain C++ (no LibTorch), so the whole decode/augment path stays cheap to build.
#pragma once

#include <cstdint>
#include <vector>

namespace paisoar::data {

struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;         // 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;  // height * width * channels bytes, row-major, channels last

  Image() = default;
  Image(int64_t h, int64_t w, int64_t c) : height(h), width(w), channels(c), pixels(h * w * c) {}

  uint8_t* row(int64_t y) { return pixels.data() + y * width * channels; }
  const uint8_t* row(int64_t y) const { return pixels.data() + y * width * channels; }
  uint8_t& at(int64_t y, int64_t x, int64_t c) { return pixels[(y * width + x) * channels + c]; }
  uint8_t at(int64_t y, int64_t x, int64_t c) const { return pixels[(y * width + x) * channels + c]; }
  bool empty() const { return pixels.empty(); }
};

}  // namespace paisoar::data
