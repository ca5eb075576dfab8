// Gray <-> RGB conversion of an Image, shared by the decoders (PNG, PNM, CMYK
// JPEG) and ImagePipeline (an Image handed in with another channel count).
// Gray is ITU-R 601-2 luma with PIL's fixed-point weights, so a converted
// image matches PIL's convert("L") exactly.
#pragma once

#include <cstdint>

#include "paisoar/data/image.h"

namespace paisoar::data {

// Returns `image` with `channels` (1 or 3) channels; unchanged (moved) when it
// already has them. REQUIRES: image.channels is 1 or 3.
Image convert_channels(Image image, int64_t channels);

// L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, as PIL computes it.
inline uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((19595u * r + 38470u * g + 7471u * b + 0x8000u) >> 16);
}

}  // namespace paisoar::data
