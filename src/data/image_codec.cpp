// The format-independent half of image_codec.h: sniffing, argument checks,
// and dispatch to the JPEG, PNG and PNM codecs (codec_formats.h). PNG and PNM
// have no region decode, so their region is cut from the full decode here.
#include "paisoar/data/image_codec.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "paisoar/data/data_error.h"
#include "paisoar/data/transforms.h"
#include "src/data/channels.h"
#include "src/data/codec_formats.h"

namespace paisoar::data {
namespace {

const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

// Sniffs, or throws DataError for empty or unrecognised data.
ImageFormat known_format(const uint8_t* bytes, size_t size) {
  if (size == 0) throw DataError("empty image data (0 bytes)");
  const ImageFormat format = sniff_image_format(bytes, size);
  if (format == ImageFormat::Unknown) {
    std::string start;
    for (size_t i = 0; i < size && i < 4; ++i) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "%s%02X", i ? " " : "", bytes[i]);
      start += hex;
    }
    throw DataError("unknown image format: the data starts with bytes " + start +
                    "; expected JPEG (FF D8 FF), PNG (89 50 4E 47) or binary PGM/PPM (P5/P6)");
  }
  return format;
}

void check_channels(int64_t channels, const char* who) {
  if (channels != 1 && channels != 3) {
    C10_THROW_ERROR(ValueError, std::string(who) + ": channels is " + std::to_string(channels) +
                                "; use 1 (gray) or 3 (RGB)");
  }
}

void check_image(const Image& image, const char* who) {
  check_channels(image.channels, who);
  if (image.height <= 0 || image.width <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.height * image.width * image.channels)) {
    C10_THROW_ERROR(ValueError, std::string(who) + ": the image is empty or its pixels (" +
                                std::to_string(image.pixels.size()) + " bytes) do not match " +
                                std::to_string(image.height) + "x" + std::to_string(image.width) +
                                "x" + std::to_string(image.channels));
  }
}

}  // namespace

ImageFormat sniff_image_format(const uint8_t* bytes, size_t size) {
  if (size >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return ImageFormat::Jpeg;
  if (size >= 8 && std::memcmp(bytes, kPngSignature, 8) == 0) return ImageFormat::Png;
  if (size >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) return ImageFormat::Pnm;
  return ImageFormat::Unknown;
}

Region checked_region(const Region& region, int64_t height, int64_t width) {
  if (region.height == 0 || region.width == 0) return Region{0, 0, height, width};
  if (region.top < 0 || region.left < 0 || region.height < 0 || region.width < 0 ||
      region.top + region.height > height || region.left + region.width > width) {
    C10_THROW_ERROR(ValueError, 
        "decode_image: region (top " + std::to_string(region.top) + ", left " +
        std::to_string(region.left) + ", " + std::to_string(region.height) + "x" +
        std::to_string(region.width) + ") is not inside the " + std::to_string(height) + "x" +
        std::to_string(width) + " image; take it from read_image_info's size");
  }
  return region;
}

ImageInfo read_image_info(const uint8_t* bytes, size_t size) {
  switch (known_format(bytes, size)) {
    case ImageFormat::Jpeg: return jpeg_info(bytes, size);
    case ImageFormat::Png: return png_info(bytes, size);
    default: return pnm_info(bytes, size);
  }
}

void require_within_pixel_limit(const ImageInfo& info, int64_t max_pixels) {
  if (max_pixels <= 0 || info.height * info.width <= max_pixels) return;
  throw DataError("the image is " + std::to_string(info.width) + "x" + std::to_string(info.height) + " = " +
                  std::to_string(info.height * info.width) + " pixels, over the limit of " +
                  std::to_string(max_pixels) + " (data.max_image_pixels; Pillow's too): decoded it would take " +
                  std::to_string(info.height * info.width * info.channels / (1 << 20)) +
                  " MiB. Shrink the image, or raise data.max_image_pixels (0: no limit) if it is meant");
}

Image decode_image(const uint8_t* bytes, size_t size, const DecodeOptions& options) {
  check_channels(options.channels, "decode_image");
  require_within_pixel_limit(read_image_info(bytes, size), options.max_pixels);
  const ImageFormat format = known_format(bytes, size);
  if (format == ImageFormat::Jpeg) return jpeg_decode(bytes, size, options);
  Image full = format == ImageFormat::Png ? png_decode(bytes, size) : pnm_decode(bytes, size);
  const Region region = checked_region(options.region, full.height, full.width);
  if (region.height != full.height || region.width != full.width) full = crop(full, region);
  return convert_channels(std::move(full), options.channels);
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  check_image(image, "encode_jpeg");
  return jpeg_encode(image, quality);
}

std::vector<uint8_t> encode_png(const Image& image) {
  check_image(image, "encode_png");
  return png_encode(image);
}

std::vector<uint8_t> encode_pnm(const Image& image) {
  check_image(image, "encode_pnm");
  return pnm_encode(image);
}

}  // namespace paisoar::data
