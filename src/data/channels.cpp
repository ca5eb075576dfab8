// Gray <-> RGB conversion (see channels.h).
#include "src/data/channels.h"

#include <cassert>
#include <utility>

namespace paisoar::data {

Image convert_channels(Image image, int64_t channels) {
  assert((image.channels == 1 || image.channels == 3) && (channels == 1 || channels == 3));
  if (image.channels == channels) return image;
  Image out(image.height, image.width, channels);
  const int64_t n = image.height * image.width;
  const uint8_t* src = image.pixels.data();
  uint8_t* dst = out.pixels.data();
  if (channels == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = luma(src[3 * i], src[3 * i + 1], src[3 * i + 2]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
  }
  return out;
}

}  // namespace paisoar::data
