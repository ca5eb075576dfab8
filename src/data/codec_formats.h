// The per-format halves of image_codec.h: one set per file (jpeg_codec.cpp,
// png_codec.cpp, pnm_codec.cpp); image_codec.cpp sniffs the format and
// dispatches. All decoders throw DataError with a message that says what is
// wrong with the data (the caller adds which file it was).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"

namespace paisoar::data {

// The region to decode: `region` itself if it lies inside a height x width
// image, the whole image if it is empty. Throws c10::ValueError if it
// sticks out.
Region checked_region(const Region& region, int64_t height, int64_t width);

// JPEG: the decoder applies checked_region() and the DCT scaling itself;
// options.channels is 1 or 3 (checked by the caller).
ImageInfo jpeg_info(const uint8_t* bytes, size_t size);
Image jpeg_decode(const uint8_t* bytes, size_t size, const DecodeOptions& options);
std::vector<uint8_t> jpeg_encode(const Image& image, int quality);

// PNG and PNM decode the whole image in its own channels (1 or 3); the
// dispatcher crops and converts channels.
ImageInfo png_info(const uint8_t* bytes, size_t size);
Image png_decode(const uint8_t* bytes, size_t size);
std::vector<uint8_t> png_encode(const Image& image);

ImageInfo pnm_info(const uint8_t* bytes, size_t size);
Image pnm_decode(const uint8_t* bytes, size_t size);
std::vector<uint8_t> pnm_encode(const Image& image);

}  // namespace paisoar::data
