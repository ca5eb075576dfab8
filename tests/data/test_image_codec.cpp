// The codecs against PIL's decode of the same files (fixtures/make_fixtures.py):
// full, region, DCT-scaled, gray and CMYK JPEG; PNG colour types; PNM; the
// encoders' round trips; and every kind of bad input -> DataError, quietly.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "paisoar/data/image_codec.h"
#include "paisoar/data/sample_rng.h"
#include "paisoar/data/transforms.h"
#include "tests/data/image_test_util.h"

namespace paisoar::data {
namespace {

using testing::decode_bytes;
using testing::expect_data_error;
using testing::fixture_bytes;
using testing::fixture_image;
using testing::pixel_diff;

DecodeOptions region_options(Region region, int64_t min_h = 0, int64_t min_w = 0,
                             int64_t channels = 3) {
  DecodeOptions o;
  o.region = region;
  o.min_height = min_h;
  o.min_width = min_w;
  o.channels = channels;
  return o;
}

TEST(ImageCodec, SniffsAndReadsHeaders) {
  const auto jpg = fixture_bytes("photo.jpg"), png = fixture_bytes("rgba.png"),
             pgm = fixture_bytes("gray.pgm"), gray = fixture_bytes("gray.jpg");
  EXPECT_EQ(sniff_image_format(jpg.data(), jpg.size()), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_image_format(png.data(), png.size()), ImageFormat::Png);
  EXPECT_EQ(sniff_image_format(pgm.data(), pgm.size()), ImageFormat::Pnm);
  EXPECT_EQ(sniff_image_format(png.data() + 1, png.size() - 1), ImageFormat::Unknown);
  ImageInfo info = read_image_info(jpg.data(), jpg.size());
  EXPECT_EQ(info.height, 61);
  EXPECT_EQ(info.width, 97);
  EXPECT_EQ(info.channels, 3);
  info = read_image_info(gray.data(), gray.size());
  EXPECT_EQ(info.channels, 1);
  EXPECT_EQ(info.height, 48);
  info = read_image_info(png.data(), png.size());
  EXPECT_EQ(info.format, ImageFormat::Png);
  EXPECT_EQ(info.height, 7);
  EXPECT_EQ(info.width, 13);
  EXPECT_EQ(info.channels, 3);  // alpha is dropped
  info = read_image_info(pgm.data(), pgm.size());
  EXPECT_EQ(info.format, ImageFormat::Pnm);
  EXPECT_EQ(info.channels, 1);
  EXPECT_EQ(info.width, 64);
}

// Same libjpeg, same settings (islow DCT, fancy upsampling): PIL's pixels to
// within 1 (measured: identical).
TEST(ImageCodec, FullJpegDecodeMatchesPil) {
  const Image reference = fixture_image("photo.ppm");
  for (const char* file : {"photo.jpg", "photo_progressive.jpg"}) {
    const auto d = pixel_diff(decode_bytes(fixture_bytes(file)), reference);
    EXPECT_LE(d.max, 1) << file;
  }
  DecodeOptions gray;
  gray.channels = 1;
  EXPECT_LE(pixel_diff(decode_bytes(fixture_bytes("gray.jpg"), gray), fixture_image("gray.pgm")).max, 1);
}

TEST(ImageCodec, GrayJpegExpandsToRgbAndRgbJpegConvertsToGray) {
  const Image gray = fixture_image("gray.pgm");
  const Image rgb = decode_bytes(fixture_bytes("gray.jpg"));
  ASSERT_EQ(rgb.channels, 3);
  for (int64_t y = 0; y < gray.height; ++y) {
    for (int64_t x = 0; x < gray.width; ++x) {
      for (int c = 0; c < 3; ++c) ASSERT_EQ(rgb.at(y, x, c), gray.at(y, x, 0));
    }
  }
  // libjpeg's gray is the decoded Y channel; PIL's is luma of the decoded RGB.
  // They differ by chroma upsampling and rounding only: mean < 0.5, max <= 3.
  const Image photo = fixture_image("photo.ppm");
  Image luma(photo.height, photo.width, 1);
  for (int64_t i = 0; i < photo.height * photo.width; ++i) {
    const auto* p = &photo.pixels[3 * i];
    luma.pixels[i] = static_cast<uint8_t>((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
  }
  DecodeOptions one;
  one.channels = 1;
  const auto d = pixel_diff(decode_bytes(fixture_bytes("photo.jpg"), one), luma);
  EXPECT_LT(d.mean, 0.5);
  EXPECT_LE(d.max, 3);
}

TEST(ImageCodec, CmykJpegMatchesPil) {
  const auto d = pixel_diff(decode_bytes(fixture_bytes("cmyk.jpg")), fixture_image("cmyk.ppm"));
  EXPECT_LE(d.max, 1);
}

// jpeg_crop_scanline widens the columns to an iMCU boundary and the decoder
// cuts them back; jpeg_skip_scanlines skips rows. Neither may change a pixel.
TEST(ImageCodec, RegionDecodeEqualsTheSameRegionOfTheFullDecode) {
  const Region regions[] = {{13, 21, 30, 40}, {0, 0, 1, 1},  {60, 96, 1, 1},
                            {1, 17, 59, 80},  {32, 5, 29, 7}, {0, 0, 61, 97}};
  for (const char* file : {"photo.jpg", "photo_progressive.jpg", "gray.jpg", "rgba.png"}) {
    const auto bytes = fixture_bytes(file);
    const Image full = decode_bytes(bytes);
    for (const Region& r : regions) {
      if (r.top + r.height > full.height || r.left + r.width > full.width) continue;
      const Image part = decode_bytes(bytes, region_options(r));
      EXPECT_EQ(pixel_diff(part, crop(full, r)).max, 0)
          << file << " region " << r.top << "," << r.left << " " << r.height << "x" << r.width;
    }
  }
  // The same at 1/2 scale (minimums just under half the region rule out 1/4):
  // regions of the half-size decode, edges rounded half up.
  const auto bytes = fixture_bytes("photo.jpg");
  const Image half = decode_bytes(bytes, region_options({}, 31, 49));
  for (int64_t top : {0, 2, 17, 40}) {
    for (int64_t left : {0, 6, 16, 33, 70}) {
      const Region r{top, left, 61 - top - 2 * (top % 3), 97 - left - (left % 5)};
      const Region s{(top + 1) / 2, (left + 1) / 2, (r.height + top + 1) / 2 - (top + 1) / 2,
                     (r.width + left + 1) / 2 - (left + 1) / 2};
      const Image part = decode_bytes(bytes, region_options(r, r.height / 2 - 1, r.width / 2 - 1));
      EXPECT_EQ(pixel_diff(part, crop(half, s)).max, 0) << top << "," << left;
    }
  }
}

// DCT scaling: PIL's draft() decodes through the same libjpeg scaling.
TEST(ImageCodec, ScaledDecodeMatchesPilDraftAndAResize) {
  struct Case {
    int64_t min_h, min_w, out_h, out_w;
    const char* reference;
  };
  const Case cases[] = {{31, 49, 31, 49, "photo_half.ppm"},
                        {16, 25, 16, 25, "photo_quarter.ppm"},
                        {1, 1, 8, 13, "photo_eighth.ppm"},
                        {32, 49, 61, 97, "photo.ppm"}};  // 1/2 would be too small
  const auto bytes = fixture_bytes("photo.jpg");
  const Image full = decode_bytes(bytes);
  for (const Case& c : cases) {
    const Image scaled = decode_bytes(bytes, region_options({}, c.min_h, c.min_w));
    ASSERT_EQ(scaled.height, c.out_h) << c.reference;
    ASSERT_EQ(scaled.width, c.out_w) << c.reference;
    EXPECT_LE(pixel_diff(scaled, fixture_image(c.reference)).max, 1) << c.reference;
  }
  // The 1/2 DCT scale is a low-pass close to a 2x2 average, which bilinear
  // resampling by exactly 2 is (on the even 60x96 part): mean difference below
  // 2 levels (measured 1.2; the max, 39, is at the sharp edges).
  const Image half = decode_bytes(bytes, region_options({}, 31, 49));
  EXPECT_LT(pixel_diff(crop(half, {0, 0, 30, 48}), resize_bilinear(crop(full, {0, 0, 60, 96}), 30, 48)).mean,
            2.0);
}

TEST(ImageCodec, ScaledRegionIsTheRoundedRegionOfTheScaledImage) {
  const auto bytes = fixture_bytes("photo.jpg");
  const Image half = fixture_image("photo_half.ppm");
  // Rows [11, 51) / 2 -> [6, 26) (round half up), columns [21, 81) / 2 -> [11, 41).
  const Image part = decode_bytes(bytes, region_options({11, 21, 40, 60}, 20, 30));
  ASSERT_EQ(part.height, 20);
  ASSERT_EQ(part.width, 30);
  EXPECT_LE(pixel_diff(part, crop(half, {6, 11, 20, 30})).max, 1);
  // One pixel more than half the region: no scaling.
  const Image exact = decode_bytes(bytes, region_options({11, 21, 40, 60}, 21, 30));
  EXPECT_EQ(exact.height, 40);
  EXPECT_EQ(exact.width, 60);
}

TEST(ImageCodec, PngColourTypesMatchPil) {
  EXPECT_EQ(pixel_diff(decode_bytes(fixture_bytes("rgba.png")), fixture_image("rgba.ppm")).max, 0);
  EXPECT_EQ(pixel_diff(decode_bytes(fixture_bytes("palette.png")), fixture_image("palette.ppm")).max, 0);
  DecodeOptions gray;
  gray.channels = 1;
  EXPECT_EQ(pixel_diff(decode_bytes(fixture_bytes("gray16.png"), gray), fixture_image("gray16_high.pgm")).max, 0);
  EXPECT_EQ(pixel_diff(decode_bytes(fixture_bytes("rgba.png"), gray), fixture_image("rgba_gray.pgm")).max, 0);
}

Image pattern(int64_t h, int64_t w, int64_t c) {
  Image image(h, w, c);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);
  return image;
}

TEST(ImageCodec, LosslessEncodersRoundTripExactly) {
  for (int64_t channels : {1, 3}) {
    const Image image = pattern(9, 14, channels);
    DecodeOptions o;
    o.channels = channels;
    EXPECT_EQ(pixel_diff(decode_bytes(encode_png(image), o), image).max, 0);
    const auto pnm = encode_pnm(image);
    EXPECT_EQ(pnm[1], channels == 1 ? '5' : '6');
    EXPECT_EQ(pixel_diff(decode_bytes(pnm, o), image).max, 0);
  }
}

TEST(ImageCodec, JpegEncoderRoundTripsClosely) {
  const Image photo = fixture_image("photo.ppm");
  const auto bytes = encode_jpeg(photo, 95);
  EXPECT_LT(bytes.size(), photo.pixels.size());
  const auto d = pixel_diff(decode_bytes(bytes), photo);
  EXPECT_LT(d.mean, 2.0);  // measured about 1
  EXPECT_THROW(encode_jpeg(photo, 0), c10::ValueError);
  EXPECT_THROW(encode_png(Image(2, 2, 4)), c10::ValueError);
}

std::vector<uint8_t> prefix(const std::vector<uint8_t>& bytes, size_t n) {
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + n);
}

TEST(ImageCodec, BadInputIsADataErrorThatSaysWhatIsWrong) {
  const auto jpg = fixture_bytes("photo.jpg");
  const auto png = fixture_bytes("rgba.png");
  auto decode = [](std::vector<uint8_t> bytes) { return [bytes] { decode_bytes(bytes); }; };
  auto info = [](std::vector<uint8_t> bytes) {
    return [bytes] { read_image_info(bytes.data(), bytes.size()); };
  };
  expect_data_error(decode({}), {"empty"});
  expect_data_error(info({}), {"empty"});
  expect_data_error(decode({'h', 'e', 'l', 'l', 'o'}), {"unknown image format", "68 65 6C 6C"});
  expect_data_error(decode(prefix(jpg, jpg.size() / 2)), {"JPEG", "Premature end"});
  expect_data_error(decode(prefix(jpg, 40)), {"JPEG"});
  expect_data_error(info(prefix(jpg, 40)), {"JPEG"});
  auto marker = jpg;  // an EOI marker in the middle of the entropy-coded data
  marker[jpg.size() / 2] = 0xFF;
  marker[jpg.size() / 2 + 1] = 0xD9;
  expect_data_error(decode(marker), {"Corrupt JPEG data"});
  expect_data_error(decode({0xFF, 0xD8, 0xFF, 0xE0, 0x00}), {"JPEG"});

  expect_data_error(decode(prefix(png, png.size() - 30)), {"PNG", "truncated"});
  expect_data_error(decode(prefix(png, 20)), {"PNG"});
  auto crc = png;  // a flipped byte inside IDAT fails its CRC
  crc[png.size() - 30] ^= 0x55;
  expect_data_error(decode(crc), {"PNG"});

  const std::string short_pgm = "P5\n4 4\n255\nabc";
  expect_data_error(decode({short_pgm.begin(), short_pgm.end()}), {"truncated", "16 bytes"});
  const std::string deep = "P5 2 2 65535\n12345678";
  expect_data_error(decode({deep.begin(), deep.end()}), {"maxval 65535"});
  const std::string no_size = "P6\n# comment\nx";
  expect_data_error(decode({no_size.begin(), no_size.end()}), {"width"});
}

// Every truncation and many random byte flips: a decode either succeeds or
// throws DataError, and never prints (run under ASan to catch the rest).
TEST(ImageCodec, DamagedDataNeverCrashes) {
  for (const char* file : {"photo.jpg", "photo_progressive.jpg", "rgba.png", "palette.png"}) {
    const auto bytes = fixture_bytes(file);
    int errors = 0;
    ::testing::internal::CaptureStderr();
    auto attempt = [&](const std::vector<uint8_t>& data) {
      try {
        decode_bytes(data, region_options({}, 5, 5));
      } catch (const DataError&) {
        ++errors;
      }
    };
    for (size_t n = 0; n < bytes.size(); ++n) attempt(prefix(bytes, n));
    SampleRng rng(std::hash<std::string>()(file));
    for (int i = 0; i < 300; ++i) {
      auto damaged = bytes;
      for (int k = 0; k < 3; ++k) damaged[rng.uniform_int(0, bytes.size() - 1)] ^= 1 + rng.uniform_int(0, 254);
      attempt(damaged);
    }
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << file;
    // Every cut but those in the trailing end marker or IEND chunk, after the pixels.
    EXPECT_GE(errors, static_cast<int>(bytes.size()) - 12) << file;
  }
}

TEST(ImageCodec, MisuseIsInvalidArgument) {
  const auto jpg = fixture_bytes("photo.jpg");
  EXPECT_THROW(decode_bytes(jpg, region_options({50, 0, 20, 10})), c10::ValueError);
  EXPECT_THROW(decode_bytes(fixture_bytes("rgba.png"), region_options({0, 10, 2, 4})),
               c10::ValueError);
  EXPECT_THROW(decode_bytes(jpg, region_options({}, 0, 0, 2)), c10::ValueError);
}

}  // namespace
}  // namespace paisoar::data
