// JPEG (libjpeg-turbo) and PNG (libpng) decoding and encoding of Image.
// JPEG decoding can be limited to a region and reduced by the DCT-domain
// 1/2, 1/4 or 1/8 scaling, so a random crop that ends at 224x224 does not pay
// for decoding a whole 12-megapixel photo. Plain C++ (no LibTorch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/data/image.h"

namespace paisoar::data {

enum class ImageFormat { Jpeg, Png, Pnm, Unknown };

// The format told by the first bytes (JPEG: FF D8 FF; PNG: 89 'P' 'N' 'G';
// PNM: "P5" or "P6").
ImageFormat sniff_image_format(const uint8_t* bytes, size_t size);

// Size and channels from the header only (no pixel decode). Throws DataError
// (what() says what is wrong) for an unknown format or a corrupt header.
struct ImageInfo {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
  ImageFormat format = ImageFormat::Unknown;
};
ImageInfo read_image_info(const uint8_t* bytes, size_t size);

// A rectangle of the full-resolution image: rows [top, top+height), columns
// [left, left+width).
struct Region {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// Pillow's limit (twice its MAX_IMAGE_PIXELS, where it raises
// DecompressionBombError): a small file can announce an image that would take
// gigabytes decoded.
inline constexpr int64_t kDefaultMaxImagePixels = 178956970;

struct DecodeOptions {
  // The part of the image wanted; empty (height or width 0) means all of it.
  Region region;
  // When > 0, the decoder may shrink by 1/2, 1/4 or 1/8 in the DCT (JPEG only)
  // as long as the decoded region stays at least min_height x min_width; the
  // caller resizes what comes back. 0: full resolution.
  int64_t min_height = 0;
  int64_t min_width = 0;
  // Output channels: 3 (RGB; gray is expanded) or 1 (gray; colour converted).
  int64_t channels = 3;
  // An image of more pixels (height x width, from its header) is refused
  // before anything is allocated: DataError. 0: no limit.
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// Throws DataError unless info's height x width is within max_pixels (0: no limit).
void require_within_pixel_limit(const ImageInfo& info, int64_t max_pixels);

// Decodes a JPEG, PNG or PNM within options.max_pixels. Returns the region (possibly scaled down as
// allowed above; the result's height/width say by how much). A scaled region's
// edges are the requested ones divided by the scale and rounded, so they may be
// off by up to half a decoded pixel. Throws DataError for corrupt or truncated
// data (libjpeg's warnings, such as "premature end of data", count as errors),
// never crashes or prints to stderr. Throws c10::ValueError for a region
// outside the image or channels other than 1 or 3.
Image decode_image(const uint8_t* bytes, size_t size, const DecodeOptions& options = {});

// Encoders, for tests, `paisoar convert` and generating benchmark data. Throw
// c10::ValueError for an image that is empty, not 1 or 3 channels, or
// whose pixels do not match its size.
std::vector<uint8_t> encode_jpeg(const Image& image, int quality = 90);
std::vector<uint8_t> encode_png(const Image& image);

// Binary PGM (P5, gray) / PPM (P6, RGB): the raw, decode-free record format
// the shards use for small images such as Fashion-MNIST. decode_image() also
// accepts it (sniffed by "P5"/"P6").
std::vector<uint8_t> encode_pnm(const Image& image);

}  // namespace paisoar::data
