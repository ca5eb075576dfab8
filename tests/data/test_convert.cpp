// `paisoar convert`: IDX into PGM records (keys, labels, pixels, shard count),
// the same bytes for 1 and 4 workers, Debian's Fashion-MNIST test set, image
// folders, and the failures: mismatched IDX files, an existing data set, a
// corrupt image, an empty class, and a worker that throws (no partial output).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "paisoar/data/convert.h"
#include "paisoar/data/data_error.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/record_shards.h"
#include "src/data/shard_set_writer.h"
#include "tests/support/expect_error.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace paisoar::data;
using paisoar::testing::expect_error_of;
using paisoar::testing::TempDir;

namespace {

ConvertOptions quiet(int64_t records_per_shard, int64_t workers) {
  ConvertOptions o;
  o.records_per_shard = records_per_shard;
  o.workers = workers;
  o.progress = false;
  return o;
}

// A binary PGM parsed independently of the encoder: "P5", width, height,
// maxval 255 separated by whitespace, one whitespace byte, then the pixels.
torch::Tensor parse_pgm(const std::vector<uint8_t>& bytes) {
  const std::string text(bytes.begin(), bytes.end());
  std::istringstream in(text);
  std::string magic;
  int64_t width = 0, height = 0, maxval = 0;
  in >> magic >> width >> height >> maxval;
  EXPECT_EQ(magic, "P5");
  EXPECT_EQ(maxval, 255);
  const auto start = static_cast<size_t>(in.tellg()) + 1;
  EXPECT_EQ(bytes.size(), start + static_cast<size_t>(width * height));
  auto pixels = torch::empty({height, width}, torch::kUInt8);
  std::memcpy(pixels.data_ptr<uint8_t>(), bytes.data() + start, std::min(bytes.size() - start, size_t(width * height)));
  return pixels;
}

struct SmallIdx {
  TempDir dir{"convert"};
  torch::Tensor images = torch::randint(0, 256, {23, 4, 5}, torch::kUInt8);
  torch::Tensor labels = torch::arange(23, torch::kLong).remainder(7).to(torch::kUInt8);
  SmallIdx() {
    write_idx(dir / "images.idx", images);
    write_idx(dir / "labels.idx.gz", labels);
  }
};

TEST(Convert, IdxBecomesPgmRecordsInShards) {
  SmallIdx idx;
  const auto out = idx.dir / "out";
  const auto result = convert_idx(idx.dir / "images.idx", idx.dir / "labels.idx.gz", out, quiet(5, 1));
  EXPECT_EQ(result.records, 23);
  EXPECT_EQ(result.shards, 5);
  const auto manifest = read_manifest(out);
  EXPECT_EQ(manifest.classes.size(), 10u);  // MNIST-style: 10 classes although labels stop at 6
  EXPECT_EQ(manifest.classes[3], "3");
  EXPECT_EQ(manifest.shards, (std::vector<std::string>{"shard-000000.tar", "shard-000001.tar", "shard-000002.tar",
                                                       "shard-000003.tar", "shard-000004.tar"}));
  EXPECT_EQ(manifest.records, (std::vector<int64_t>{5, 5, 5, 5, 3}));
  uint64_t bytes = 0;
  int64_t global = 0;
  for (const auto& name : manifest.shards) {
    ShardReader reader(out + "/" + name);
    bytes += fs::file_size(reader.path());
    for (int64_t i = 0; i < reader.size(); ++i, ++global) {
      char key[16];
      std::snprintf(key, sizeof(key), "%08lld", static_cast<long long>(global));
      EXPECT_EQ(reader.entry(i).key, key);
      EXPECT_EQ(reader.entry(i).ext, "pgm");
      EXPECT_EQ(reader.entry(i).label, global % 7);
      EXPECT_TRUE(torch::equal(parse_pgm(reader.read(i)), idx.images[global])) << "record " << global;
    }
  }
  EXPECT_EQ(global, 23);
  EXPECT_EQ(result.bytes, bytes);
}

TEST(Convert, OutputDoesNotDependOnWorkers) {
  SmallIdx idx;
  convert_idx(idx.dir / "images.idx", idx.dir / "labels.idx.gz", idx.dir / "w1", quiet(3, 1));
  convert_idx(idx.dir / "images.idx", idx.dir / "labels.idx.gz", idx.dir / "w4", quiet(3, 4));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(idx.dir / "w1")) names.push_back(e.path().filename().string());
  EXPECT_EQ(names.size(), 2u * 8 + 1);  // 8 tars, 8 indexes, dataset.json
  for (const auto& name : names) {
    EXPECT_EQ(paisoar::testing::read_file_bytes((fs::path(idx.dir / "w1") / name).string()), paisoar::testing::read_file_bytes((fs::path(idx.dir / "w4") / name).string())) << name;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(idx.dir / "w4"), fs::directory_iterator()), 17);
}

TEST(Convert, FashionMnistTestSet) {
  const std::string data = "/usr/share/datasets/fashion-mnist/";
  const auto images = data + "t10k-images-idx3-ubyte.gz", labels = data + "t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(images) || !fs::exists(labels)) GTEST_SKIP() << "no Fashion-MNIST in " << data;
  TempDir dir("convert");
  const auto result = convert_idx(images, labels, dir / "out", quiet(3000, 2));
  EXPECT_EQ(result.records, 10000);
  EXPECT_EQ(result.shards, 4);
  const auto x = read_idx(images), y = read_idx(labels).to(torch::kLong);
  const auto manifest = read_manifest(dir / "out");
  EXPECT_EQ(manifest.records, (std::vector<int64_t>{3000, 3000, 3000, 1000}));
  for (int64_t global : {0, 1, 2999, 3000, 7777, 9999}) {
    ShardReader reader(dir / ("out/" + manifest.shards[global / 3000]));
    const int64_t i = global % 3000;
    EXPECT_EQ(reader.entry(i).label, y[global].item<int64_t>()) << global;
    EXPECT_TRUE(torch::equal(parse_pgm(reader.read(i)), x[global])) << global;
  }
  EXPECT_EQ(ShardReader(dir / "out/shard-000000.tar").entry(0).label, 9);  // the first test image is an ankle boot
}

TEST(Convert, MismatchedIdxFilesNameBoth) {
  SmallIdx idx;
  write_idx(idx.dir / "short.idx", idx.labels.narrow(0, 0, 22));
  expect_error_of<DataError>(
      [&] { convert_idx(idx.dir / "images.idx", idx.dir / "short.idx", idx.dir / "out", quiet(5, 1)); },
      {(idx.dir / "images.idx").c_str(), "23 images", (idx.dir / "short.idx").c_str(), "22 labels"});
  expect_error_of<DataError>(
      [&] { convert_idx(idx.dir / "labels.idx.gz", idx.dir / "labels.idx.gz", idx.dir / "out", quiet(5, 1)); },
      {"labels.idx.gz", "expected uint8 [N, height, width]"});
  EXPECT_FALSE(fs::exists(idx.dir / "out/dataset.json"));
}

TEST(Convert, RefusesToOverwriteADataSet) {
  SmallIdx idx;
  convert_idx(idx.dir / "images.idx", idx.dir / "labels.idx.gz", idx.dir / "out", quiet(5, 1));
  expect_error_of<c10::Error>(
      [&] { convert_idx(idx.dir / "images.idx", idx.dir / "labels.idx.gz", idx.dir / "out", quiet(5, 1)); },
      {(idx.dir / "out").c_str(), "already holds a data set"});
}

TEST(Convert, FailingWorkerStopsAllAndLeavesNothing) {
  TempDir dir("convert");
  std::atomic<int64_t> made{0};
  const auto make = [&](int64_t i) {
    if (i == 37) throw DataError("bad record 37");
    ++made;
    Record r;
    r.key = "k" + std::to_string(i);
    r.ext = "pgm";
    r.payload.assign(100, static_cast<uint8_t>(i));
    return r;
  };
  for (int64_t workers : {1, 4}) {
    const auto out = dir / ("out" + std::to_string(workers));
    made = 0;
    expect_error_of<DataError>([&] { write_shard_set(out, 1000, {"a"}, quiet(10, workers), make); },
                               {"bad record 37"});
    EXPECT_TRUE(fs::is_empty(out)) << "shards or temporaries left in " << out;
    EXPECT_LT(made.load(), 1000) << "the other workers did not stop";
  }
  expect_error_of<c10::ValueError>([&] { write_shard_set(dir / "x", 10, {}, quiet(0, 1), make); },
                                         {"at least 1"});
}

TEST(Convert, ImageFolderKeepsTheBytes) {
  TempDir dir("convert");
  Image image(6, 8, 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 7);
  const auto jpeg = encode_jpeg(image), png = encode_png(image);
  const auto put = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    fs::create_directories(fs::path(dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  put("root/cat/1.jpeg", jpeg);
  put("root/cat/2.png", png);
  put("root/dog/3.JPG", jpeg);
  const auto result = convert_image_folder(dir / "root", dir / "out", quiet(2, 2));
  EXPECT_EQ(result.records, 3);
  EXPECT_EQ(result.shards, 2);
  const auto manifest = read_manifest(dir / "out");
  EXPECT_EQ(manifest.classes, (std::vector<std::string>{"cat", "dog"}));
  ShardReader first(dir / "out/shard-000000.tar"), second(dir / "out/shard-000001.tar");
  EXPECT_EQ(first.entry(0).ext, "jpg");
  EXPECT_EQ(first.entry(0).label, 0);
  EXPECT_EQ(first.read(0), jpeg);
  EXPECT_EQ(first.entry(1).ext, "png");
  EXPECT_EQ(first.read(1), png);
  EXPECT_EQ(second.entry(0).key, "00000002");
  EXPECT_EQ(second.entry(0).label, 1);
  EXPECT_EQ(second.read(0), jpeg);

  put("root/dog/4.jpg", {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'});
  expect_error_of<DataError>([&] { convert_image_folder(dir / "root", dir / "bad", quiet(2, 2)); },
                             {(dir / "root/dog/4.jpg").c_str(), "fix or remove the file"});
  EXPECT_FALSE(fs::exists(dir / "bad/dataset.json"));
  fs::create_directories(dir / "root/emu");
  expect_error_of<DataError>([&] { convert_image_folder(dir / "root", dir / "bad", quiet(2, 2)); },
                             {(dir / "root/emu").c_str(), "holds no"});
}

}  // namespace
