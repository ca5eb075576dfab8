// PNG through libpng's classic API: any bit depth and colour type is read as
// 8-bit gray or RGB (palette expanded, alpha and tRNS transparency ignored,
// 16-bit cut to its high byte as PIL does). libpng's errors longjmp back into
// run_guarded() (c_error_guard.h); its warnings (harmless, e.g. an unknown
// iCCP profile) are dropped.
#include <png.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "paisoar/data/data_error.h"
#include "src/data/c_error_guard.h"
#include "src/data/codec_formats.h"

namespace paisoar::data {
namespace {

struct PngState {
  std::jmp_buf jump;
  char message[256];
  const uint8_t* data = nullptr;  // reading
  size_t size = 0;
  size_t offset = 0;
  std::vector<uint8_t>* out = nullptr;  // writing
};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  std::longjmp(state->jump, 1);
}

void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep dst, png_size_t n) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > state->size - state->offset) png_error(png, "the data ends early (truncated file)");
  std::memcpy(dst, state->data + state->offset, n);
  state->offset += n;
}

void write_bytes(png_structp png, png_bytep src, png_size_t n) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  state->out->insert(state->out->end(), src, src + n);
}

void flush(png_structp) {}

// Owns the png read or write struct pair.
struct PngHandle {
  PngState state;
  png_structp png = nullptr;
  png_infop info = nullptr;
  bool writing = false;

  explicit PngHandle(bool write) : writing(write) {
    state.message[0] = '\0';
    png = write ? png_create_write_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning)
                : png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
    if (png) info = png_create_info_struct(png);
    if (!png || !info) {
      destroy();
      throw std::bad_alloc();
    }
  }
  ~PngHandle() { destroy(); }
  void destroy() {
    if (writing) png_destroy_write_struct(&png, &info);
    else png_destroy_read_struct(&png, &info, nullptr);
  }
  PngHandle(const PngHandle&) = delete;
  PngHandle& operator=(const PngHandle&) = delete;

  template <class Fn>
  void run(Fn fn) {
    if (!run_guarded(state.jump, fn)) {
      throw DataError(std::string("corrupt or truncated PNG data (libpng: ") + state.message + ")");
    }
  }

  // Reads the header and sets the transforms to 8-bit gray or RGB.
  ImageInfo read_header(const uint8_t* bytes, size_t size) {
    state.data = bytes;
    state.size = size;
    ImageInfo result;
    run([&] {
      png_set_read_fn(png, &state, read_bytes);
      png_read_info(png, info);
      const png_byte color = png_get_color_type(png, info);
      if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
      if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
      }
      png_set_strip_16(png);
      png_set_strip_alpha(png);
      png_set_interlace_handling(png);
      png_read_update_info(png, info);
      result.height = png_get_image_height(png, info);
      result.width = png_get_image_width(png, info);
      result.channels = png_get_channels(png, info);
    });
    result.format = ImageFormat::Png;
    return result;
  }
};

}  // namespace

ImageInfo png_info(const uint8_t* bytes, size_t size) {
  PngHandle handle(false);
  return handle.read_header(bytes, size);
}

Image png_decode(const uint8_t* bytes, size_t size) {
  PngHandle handle(false);
  const ImageInfo info = handle.read_header(bytes, size);
  if (info.channels != 1 && info.channels != 3) {
    throw DataError("PNG decodes to " + std::to_string(info.channels) +
                    " channels after dropping alpha; expected 1 or 3");
  }
  Image image(info.height, info.width, info.channels);
  std::vector<png_bytep> rows(static_cast<size_t>(info.height));
  for (int64_t y = 0; y < info.height; ++y) rows[y] = image.row(y);
  png_bytepp row_ptrs = rows.data();
  handle.run([&] { png_read_image(handle.png, row_ptrs); });
  return image;
}

std::vector<uint8_t> png_encode(const Image& image) {
  PngHandle handle(true);
  std::vector<uint8_t> out;
  handle.state.out = &out;
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  for (int64_t y = 0; y < image.height; ++y) rows[y] = const_cast<uint8_t*>(image.row(y));
  png_bytepp row_ptrs = rows.data();
  auto encode = [&] {
    png_set_write_fn(handle.png, &handle.state, write_bytes, flush);
    png_set_IHDR(handle.png, handle.info, static_cast<png_uint_32>(image.width),
                 static_cast<png_uint_32>(image.height), 8,
                 image.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(handle.png, handle.info);
    png_write_image(handle.png, row_ptrs);
    png_write_end(handle.png, nullptr);
  };
  if (!run_guarded(handle.state.jump, encode)) {
    C10_THROW_ERROR(Error, std::string("encode_png failed (libpng: ") + handle.state.message + ")");
  }
  return out;
}

}  // namespace paisoar::data
