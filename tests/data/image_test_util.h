// Test support for the image suites: the committed fixtures (made by
// fixtures/make_fixtures.py), pixel differences, and a check that a call
// throws DataError whose message names given parts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "paisoar/data/data_error.h"
#include "paisoar/data/image.h"
#include "paisoar/data/image_codec.h"

#ifndef PAISOAR_DATA_FIXTURES
#error "define PAISOAR_DATA_FIXTURES as the path of tests/data/fixtures"
#endif

namespace paisoar::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(PAISOAR_DATA_FIXTURES) + "/" + name;
}

inline std::vector<uint8_t> fixture_bytes(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << fixture_path(name);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline data::Image decode_bytes(const std::vector<uint8_t>& bytes, data::DecodeOptions options = {}) {
  return data::decode_image(bytes.data(), bytes.size(), options);
}

// A fixture decoded in its own channel count (PGM: 1, PPM/others: 3).
inline data::Image fixture_image(const std::string& name) {
  const auto bytes = fixture_bytes(name);
  data::DecodeOptions options;
  options.channels = data::read_image_info(bytes.data(), bytes.size()).channels;
  return decode_bytes(bytes, options);
}

struct PixelDiff {
  int max = 0;
  double mean = 0;
};

// |a - b| over all bytes. REQUIRES (checked): the same shape.
inline PixelDiff pixel_diff(const data::Image& a, const data::Image& b) {
  PixelDiff d;
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.channels, b.channels);
  if (a.pixels.size() != b.pixels.size() || a.pixels.empty()) {
    d.max = 256;
    return d;
  }
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const int diff = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    d.max = std::max(d.max, diff);
    sum += diff;
  }
  d.mean = sum / a.pixels.size();
  return d;
}

// fn must throw DataError mentioning every part (and print nothing to stderr).
inline void expect_data_error(const std::function<void()>& fn,
                              std::initializer_list<const char*> parts) {
  ::testing::internal::CaptureStderr();
  try {
    fn();
    ADD_FAILURE() << "no DataError thrown; expected one mentioning " << *parts.begin();
  } catch (const data::DataError& e) {
    const std::string message = e.what();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a DataError, got another exception: " << e.what();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace paisoar::testing
