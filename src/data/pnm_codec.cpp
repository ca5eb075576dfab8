// Binary PGM (P5) and PPM (P6) with maxval 255: a text header, then the raw
// pixels. The record shards store small images (Fashion-MNIST) this way so
// reading one costs a copy, not a decode.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "paisoar/data/data_error.h"
#include "src/data/codec_formats.h"

namespace paisoar::data {
namespace {

struct PnmHeader {
  ImageInfo info;
  size_t data_offset = 0;
};

// Parses "P5|P6 <ws> width <ws> height <ws> maxval <one ws>", with '#'
// comments allowed between the fields.
PnmHeader parse_header(const uint8_t* bytes, size_t size) {
  if (size < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6')) {
    throw DataError("not a binary PGM/PPM (expected \"P5\" or \"P6\" at the start)");
  }
  size_t pos = 2;
  auto field = [&](const char* name) -> int64_t {
    while (pos < size && (std::isspace(bytes[pos]) || bytes[pos] == '#')) {
      if (bytes[pos] == '#') {
        while (pos < size && bytes[pos] != '\n') ++pos;
      } else {
        ++pos;
      }
    }
    int64_t value = 0;
    size_t digits = 0;
    while (pos < size && std::isdigit(bytes[pos]) && digits < 10) {
      value = value * 10 + (bytes[pos++] - '0');
      ++digits;
    }
    if (digits == 0 || digits == 10) {
      throw DataError(std::string("PGM/PPM header: bad or missing ") + name);
    }
    return value;
  };
  PnmHeader h;
  h.info.format = ImageFormat::Pnm;
  h.info.channels = bytes[1] == '5' ? 1 : 3;
  h.info.width = field("width");
  h.info.height = field("height");
  const int64_t maxval = field("maxval");
  if (maxval != 255) {
    throw DataError("PGM/PPM maxval " + std::to_string(maxval) +
                    " is not supported; only 8-bit images (maxval 255) are");
  }
  if (pos >= size || !std::isspace(bytes[pos])) {
    throw DataError("PGM/PPM header: no whitespace after maxval (truncated file?)");
  }
  h.data_offset = pos + 1;
  if (h.info.width <= 0 || h.info.height <= 0) {
    throw DataError("PGM/PPM header: empty image (" + std::to_string(h.info.width) + "x" +
                    std::to_string(h.info.height) + ")");
  }
  return h;
}

}  // namespace

ImageInfo pnm_info(const uint8_t* bytes, size_t size) { return parse_header(bytes, size).info; }

Image pnm_decode(const uint8_t* bytes, size_t size) {
  const PnmHeader h = parse_header(bytes, size);
  const ImageInfo& info = h.info;
  const uint64_t needed = static_cast<uint64_t>(info.height) * info.width * info.channels;
  if (size - h.data_offset < needed) {
    throw DataError("PGM/PPM data truncated: " + std::to_string(info.width) + "x" +
                    std::to_string(info.height) + "x" + std::to_string(info.channels) +
                    " needs " + std::to_string(needed) + " bytes, " +
                    std::to_string(size - h.data_offset) + " present");
  }
  Image image(info.height, info.width, info.channels);
  std::copy(bytes + h.data_offset, bytes + h.data_offset + needed, image.pixels.begin());
  return image;
}

std::vector<uint8_t> pnm_encode(const Image& image) {
  const std::string header = std::string(image.channels == 1 ? "P5" : "P6") + "\n" +
                             std::to_string(image.width) + " " + std::to_string(image.height) +
                             "\n255\n";
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), image.pixels.begin(), image.pixels.end());
  return out;
}

}  // namespace paisoar::data
