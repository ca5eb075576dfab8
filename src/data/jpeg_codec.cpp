// JPEG through libjpeg-turbo's libjpeg API: header reads, region decode
// (jpeg_crop_scanline for columns, jpeg_skip_scanlines for rows) with DCT
// scaling, and encoding. libjpeg reports errors through a callback that must
// not return; ours longjmps back into run_guarded() (c_error_guard.h), and so
// do warnings, because a warning means corrupt or truncated data.
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <c10/util/Exception.h>

#include <jpeglib.h>

#include <algorithm>
#include <cassert>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "paisoar/data/data_error.h"
#include "src/data/c_error_guard.h"
#include "src/data/channels.h"
#include "src/data/codec_formats.h"

namespace paisoar::data {
namespace {

struct JpegError {
  jpeg_error_mgr pub;  // first, so libjpeg's err pointer is also ours
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// level < 0: a warning (e.g. "Premature end of JPEG file", "Corrupt JPEG
// data"), fatal here; level >= 0: trace messages, ignored.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

void no_output(j_common_ptr) {}

void install(jpeg_error_mgr* pub, JpegError& err) {
  jpeg_std_error(pub);
  pub->error_exit = on_error;
  pub->emit_message = on_message;
  pub->output_message = no_output;
  err.message[0] = '\0';
}

// Owns a jpeg_decompress_struct; run() calls libjpeg and turns its errors into
// DataError. Lives in the frame of the function that calls run(), outside
// run_guarded's, so its destructor is never skipped by the longjmp.
struct Decompressor {
  jpeg_decompress_struct cinfo;
  JpegError err;

  Decompressor() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    install(&err.pub, err);
    cinfo.err = &err.pub;
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }  // safe on a zeroed or half-made struct
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  template <class Fn>
  void run(Fn fn) {
    if (!run_guarded(err.jump, fn)) {
      throw DataError(std::string("corrupt or truncated JPEG data (libjpeg: ") + err.message + ")");
    }
  }

  void read_header(const uint8_t* bytes, size_t size) {
    run([&] {
      jpeg_create_decompress(&cinfo);
      jpeg_mem_src(&cinfo, bytes, static_cast<unsigned long>(size));
      jpeg_read_header(&cinfo, TRUE);
    });
  }
};

bool is_cmyk(const jpeg_decompress_struct& cinfo) {
  return cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
}

// [begin, end) of a `full`-pixel axis divided by `denom` and rounded (half
// up), inside the scaled axis of ceil(full / denom) pixels, never empty. A
// range that reaches the last pixel keeps the scaled axis's last (partial) one.
void scale_range(int64_t begin, int64_t end, int64_t full, int64_t denom, int64_t* out_begin,
                 int64_t* out_end) {
  const int64_t limit = (full + denom - 1) / denom;
  int64_t b = (2 * begin + denom) / (2 * denom);
  int64_t e = end == full ? limit : std::min((2 * end + denom) / (2 * denom), limit);
  if (e <= b) {
    if (b < limit) e = b + 1; else b = e - 1;
  }
  *out_begin = b;
  *out_end = e;
}

struct ScaledRegion {
  int64_t denom = 1;
  int64_t top = 0, bottom = 0, left = 0, right = 0;  // in the scaled image
};

// The largest reduction (1/8, 1/4, 1/2) that keeps the region at least
// min_height x min_width; 1 when neither minimum is set.
ScaledRegion choose_scale(const Region& r, int64_t height, int64_t width, int64_t min_height,
                          int64_t min_width) {
  ScaledRegion s;
  for (int64_t denom : {8, 4, 2, 1}) {
    if (denom > 1 && min_height <= 0 && min_width <= 0) continue;
    s.denom = denom;
    scale_range(r.top, r.top + r.height, height, denom, &s.top, &s.bottom);
    scale_range(r.left, r.left + r.width, width, denom, &s.left, &s.right);
    if (denom == 1 || (s.bottom - s.top >= min_height && s.right - s.left >= min_width)) break;
  }
  return s;
}

// CMYK as libjpeg returns it (inverted when an Adobe marker says so, as
// Photoshop writes it) -> RGB the way PIL converts: R = (255-C)(255-K)/255.
void cmyk_to_rgb(const uint8_t* src, uint8_t* dst, int64_t n, bool inverted) {
  for (int64_t i = 0; i < n; ++i, src += 4, dst += 3) {
    const unsigned k = inverted ? src[3] : 255u - src[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned v = inverted ? src[c] : 255u - src[c];
      dst[c] = static_cast<uint8_t>((v * k + 127) / 255);
    }
  }
}

}  // namespace

ImageInfo jpeg_info(const uint8_t* bytes, size_t size) {
  Decompressor d;
  d.read_header(bytes, size);
  ImageInfo info;
  info.height = d.cinfo.image_height;
  info.width = d.cinfo.image_width;
  info.channels = d.cinfo.num_components == 1 ? 1 : 3;
  info.format = ImageFormat::Jpeg;
  return info;
}

Image jpeg_decode(const uint8_t* bytes, size_t size, const DecodeOptions& options) {
  Decompressor d;
  jpeg_decompress_struct& cinfo = d.cinfo;
  d.read_header(bytes, size);
  const bool cmyk = is_cmyk(cinfo);
  cinfo.out_color_space = cmyk ? JCS_CMYK : options.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;

  const Region region = checked_region(options.region, cinfo.image_height, cinfo.image_width);
  const ScaledRegion s = choose_scale(region, cinfo.image_height, cinfo.image_width,
                                      options.min_height, options.min_width);
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(s.denom);
  const int64_t out_h = s.bottom - s.top, out_w = s.right - s.left;

  // Column crop. libjpeg moves the start left to an iMCU boundary, and
  // treats both ends as image edges, which changes the fancy-upsampled chroma
  // of the end columns; a margin of two chroma samples (2 * max_h_samp_factor
  // columns) keeps the wanted ones identical to a full decode. `cut` is how
  // many decoded columns lie left of the wanted ones.
  JDIMENSION xoffset = 0;
  d.run([&] {
    jpeg_start_decompress(&cinfo);
    const int64_t full_w = cinfo.output_width;
    const int64_t margin = 2 * cinfo.max_h_samp_factor;
    const int64_t begin = std::max<int64_t>(0, s.left - margin);
    const int64_t end = std::min(full_w, s.right + margin);
    if (begin > 0 || end < full_w) {
      xoffset = static_cast<JDIMENSION>(begin);
      JDIMENSION crop_width = static_cast<JDIMENSION>(end - begin);
      jpeg_crop_scanline(&cinfo, &xoffset, &crop_width);
    }
  });
  const int64_t comps = cinfo.output_components;
  const int64_t cut = s.left - static_cast<int64_t>(xoffset);
  assert(cut >= 0 && cut + out_w <= static_cast<int64_t>(cinfo.output_width));

  Image raw(out_h, out_w, comps);
  std::vector<uint8_t> line(static_cast<size_t>(cinfo.output_width) * comps);
  uint8_t* const line_ptr = line.data();
  uint8_t* const raw_ptr = raw.pixels.data();
  d.run([&] {
    if (s.top > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(s.top));
    for (int64_t y = 0; y < out_h; ++y) {
      JSAMPROW row = line_ptr;
      jpeg_read_scanlines(&cinfo, &row, 1);  // a memory source never suspends
      std::memcpy(raw_ptr + y * out_w * comps, line_ptr + cut * comps, out_w * comps);
    }
  });

  if (!cmyk) return raw;  // libjpeg already produced options.channels
  Image rgb(out_h, out_w, 3);
  cmyk_to_rgb(raw.pixels.data(), rgb.pixels.data(), out_h * out_w, cinfo.saw_Adobe_marker);
  return convert_channels(std::move(rgb), options.channels);
}

namespace {

// Owns a jpeg_compress_struct writing to a malloc'd buffer (jpeg_mem_dest).
struct Compressor {
  jpeg_compress_struct cinfo;
  JpegError err;
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;

  Compressor() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    install(&err.pub, err);
    cinfo.err = &err.pub;
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
};

}  // namespace

std::vector<uint8_t> jpeg_encode(const Image& image, int quality) {
  if (quality < 1 || quality > 100) {
    C10_THROW_ERROR(ValueError, "encode_jpeg: quality " + std::to_string(quality) +
                                " is outside [1, 100]");
  }
  Compressor c;
  jpeg_compress_struct& cinfo = c.cinfo;
  const uint8_t* const pixels = image.pixels.data();
  const int64_t stride = image.width * image.channels;
  auto encode = [&] {
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &c.buffer, &c.buffer_size);
    cinfo.image_width = static_cast<JDIMENSION>(image.width);
    cinfo.image_height = static_cast<JDIMENSION>(image.height);
    cinfo.input_components = static_cast<int>(image.channels);
    cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
      JSAMPROW row = const_cast<uint8_t*>(pixels + cinfo.next_scanline * stride);
      jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
  };
  if (!run_guarded(c.err.jump, encode)) {
    // After the memory destination grew its buffer, c.buffer may point to
    // memory libjpeg already freed (it is updated only at the end): leak
    // rather than free it twice.
    c.buffer = nullptr;
    C10_THROW_ERROR(Error, std::string("encode_jpeg failed (libjpeg: ") + c.err.message + ")");
  }
  return std::vector<uint8_t>(c.buffer, c.buffer + c.buffer_size);
}

}  // namespace paisoar::data
