// IDX round trips (plain and gzipped, every element type) and the errors for
// missing, foreign, truncated and over-long files; then Debian's Fashion-MNIST.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sys/stat.h>

#include "paisoar/data/idx.h"

using paisoar::data::read_idx;
using paisoar::data::write_idx;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("paisoar_idx_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string error_of(const std::string& path) {
  try {
    read_idx(path);
  } catch (const c10::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Idx, RoundTripsEveryTypePlainAndGzipped) {
  for (auto type : {torch::kUInt8, torch::kInt8, torch::kInt16, torch::kInt32, torch::kFloat32,
                    torch::kFloat64}) {
    for (const char* ext : {".idx", ".idx.gz"}) {
      auto t = (torch::randn({3, 4, 5}) * 50).to(type);
      const auto path = temp_path(std::string("rt") + ext);
      write_idx(path, t.transpose(0, 2));  // non-contiguous input
      auto back = read_idx(path);
      EXPECT_EQ(back.scalar_type(), type);
      EXPECT_TRUE(torch::equal(back, t.transpose(0, 2))) << c10::toString(type) << ext;
      std::remove(path.c_str());
    }
  }
}

TEST(Idx, BadFilesSayWhatIsWrong) {
  EXPECT_NE(error_of("/nonexistent/x.idx").find("cannot open the IDX file '/nonexistent/x.idx'"), std::string::npos);
  const auto path = temp_path("bad.idx");
  {
    std::ofstream(path) << "PK\x03\x04 not idx";
  }
  EXPECT_NE(error_of(path).find("not an IDX file"), std::string::npos);
  write_idx(path, torch::zeros({10, 10}, torch::kUInt8));
  std::filesystem::resize_file(path, 4 + 8 + 50);
  EXPECT_NE(error_of(path).find("truncated or corrupt while reading the data"), std::string::npos);
  write_idx(path, torch::zeros({10}, torch::kUInt8));
  {
    std::ofstream(path, std::ios::app) << "extra";
  }
  EXPECT_NE(error_of(path).find("has bytes after the data"), std::string::npos);
  std::remove(path.c_str());
  try {
    write_idx(path, torch::zeros({2}, torch::kBool));
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold dtype Bool"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "no half-written file";
}

// zlib checks a gzip member's CRC and length only when it reads the trailer,
// after the data: a file cut in its trailer or damaged in its body would pass
// if reading stopped at the data the header announces.
TEST(Idx, AGzipFileCutOrDamagedAnywhereIsRefused) {
  const auto path = temp_path("cut.idx.gz");
  // Over 32 KiB of data, so that zlib reaches the trailer only after it (its output buffer is 16 KiB).
  write_idx(path, torch::arange(204800, torch::kInt32).remainder(251).to(torch::kUInt8).reshape({400, 512}));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto write = [&](const std::string& content) { std::ofstream(path, std::ios::binary) << content; };
  for (size_t cut : {bytes.size() - 1, bytes.size() - 4, bytes.size() - 8, bytes.size() / 2}) {
    write(bytes.substr(0, cut));
    const std::string error = error_of(path);
    EXPECT_NE(error.find("truncated"), std::string::npos) << "cut at " << cut << ": " << error;
    EXPECT_NE(error.find(path), std::string::npos) << error;
  }
  std::string crc = bytes;
  crc[crc.size() - 8] = static_cast<char>(crc[crc.size() - 8] ^ 0x01);  // the stored CRC-32
  write(crc);
  const std::string crc_error = error_of(path);
  EXPECT_NE(crc_error.find("corrupt gzip data (incorrect data check)"), std::string::npos) << crc_error;
  EXPECT_NE(crc_error.find(path), std::string::npos) << crc_error;
  std::string body = bytes;
  body[body.size() / 2] = static_cast<char>(body[body.size() / 2] ^ 0x10);
  write(body);  // refused for whatever it then decodes to: a bad code, more data than announced, a CRC
  EXPECT_NE(error_of(path).find("IDX file '" + path + "'"), std::string::npos) << error_of(path);
  write(bytes + bytes);  // two members: gzip(1) reads them as one stream, and so does the reader
  EXPECT_NE(error_of(path).find("has bytes after the data"), std::string::npos) << error_of(path);
  write(bytes + "junk");
  EXPECT_NE(error_of(path).find("corrupt gzip data"), std::string::npos) << error_of(path);
  write(bytes);
  EXPECT_EQ(read_idx(path).numel(), 204800);
  std::remove(path.c_str());
}

TEST(Idx, AFifoIsRefusedWithoutBlocking) {
  const auto path = temp_path("fifo.idx.gz");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const std::string error = error_of(path);
  EXPECT_NE(error.find("IDX file '" + path + "' is a FIFO"), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(Idx, ReadsDebiansFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto images = read_idx(dir + "t10k-images-idx3-ubyte.gz");
  auto labels = read_idx(dir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.sizes(), (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ(labels.sizes(), (std::vector<int64_t>{10000}));
  EXPECT_EQ(labels.max().item<int>(), 9);
  EXPECT_EQ(torch::bincount(labels.to(torch::kLong)).min().item<int64_t>(), 1000);  // balanced
}

}  // namespace
