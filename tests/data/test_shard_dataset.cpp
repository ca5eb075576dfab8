// ShardDataset over converted shards: every record decoded to the pixels that
// went in, with its label, across shard boundaries and empty shards; errors
// that name shard, record and key for a corrupt image or a flipped byte; and
// the checks at open (record counts, negative labels, missing manifest).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "paisoar/data/convert.h"
#include "paisoar/data/data_error.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/image_codec.h"
#include "paisoar/data/shard_dataset.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/data/shard_test_util.h"

namespace fs = std::filesystem;
using namespace paisoar::data;
using paisoar::testing::expect_error_of;
using paisoar::testing::TempDir;

namespace {

ImagePipeline gray_pipeline() {
  ToTensorOptions to_tensor;
  to_tensor.channels = 1;
  return ImagePipeline({}, to_tensor);
}

Record pgm_record(const std::string& key, int64_t label, uint8_t value) {
  Image image(3, 2, 1);
  std::fill(image.pixels.begin(), image.pixels.end(), value);
  Record r;
  r.key = key;
  r.label = label;
  r.ext = "pgm";
  r.payload = encode_pnm(image);
  return r;
}

TEST(ShardDataset, DecodesEveryRecordOfAConversion) {
  TempDir dir("shard_dataset");
  const auto images = torch::randint(0, 256, {23, 4, 5}, torch::kUInt8);
  const auto labels = torch::arange(23, torch::kLong).remainder(10).to(torch::kUInt8);
  write_idx(dir / "images.idx", images);
  write_idx(dir / "labels.idx", labels);
  ConvertOptions options;
  options.records_per_shard = 5;
  options.progress = false;
  convert_idx(dir / "images.idx", dir / "labels.idx", dir / "out", options);

  ShardDataset dataset(dir / "out", gray_pipeline());
  ASSERT_EQ(dataset.size(), 23);
  EXPECT_EQ(dataset.num_classes(), 10);
  EXPECT_EQ(dataset.manifest().shards.size(), 5u);
  for (int64_t i = 0; i < dataset.size(); ++i) {
    SampleRng rng(0, 0, static_cast<uint64_t>(i));
    const auto example = dataset.get(i, rng);
    EXPECT_EQ(example.label, i % 10);
    EXPECT_TRUE(torch::allclose(example.data, images[i].unsqueeze(0).to(torch::kFloat) / 255.0))
        << "sample " << i;
  }
  EXPECT_EQ(dataset.describe(7), dir / "out/shard-000001.tar" + " record 2 (key 00000007)");
  SampleRng rng(0);
  EXPECT_THROW(dataset.get(23, rng), c10::IndexError);
}

TEST(ShardDataset, SkipsEmptyShards) {
  TempDir dir("shard_dataset");
  paisoar::testing::write_shard(dir / "a.tar", {pgm_record("a0", 0, 10), pgm_record("a1", 1, 11), pgm_record("a2", 2, 12)});
  for (const char* empty : {"empty0.tar", "empty1.tar", "empty2.tar"}) paisoar::testing::write_shard(dir / empty, {});
  paisoar::testing::write_shard(dir / "b.tar", {pgm_record("b0", 3, 13), pgm_record("b1", 4, 14)});
  ShardManifest manifest;
  manifest.classes = {"0", "1", "2", "3", "4"};
  manifest.shards = {"empty0.tar", "a.tar", "empty1.tar", "b.tar", "empty2.tar"};  // a shard listed twice is refused
  manifest.records = {0, 3, 0, 2, 0};
  write_manifest(dir.path(), manifest);
  ShardDataset dataset(dir.path(), gray_pipeline());
  ASSERT_EQ(dataset.size(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    SampleRng rng(0);
    const auto example = dataset.get(i, rng);
    EXPECT_EQ(example.label, i);
    EXPECT_NEAR(example.data[0][0][0].item<float>(), (10 + i) / 255.0, 1e-6) << i;
  }
  EXPECT_EQ(dataset.describe(3), dir / "b.tar" + " record 0 (key b0)");
}

TEST(ShardDataset, ErrorsNameShardRecordAndKey) {
  TempDir dir("shard_dataset");
  Record garbage = pgm_record("bad", 1, 0);
  garbage.ext = "jpg";
  garbage.payload = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  paisoar::testing::write_shard(dir / "s.tar", {pgm_record("good", 0, 1), garbage, pgm_record("last", 2, 3)});
  ShardManifest manifest;
  manifest.classes = {"0", "1", "2"};
  manifest.shards = {"s.tar"};
  manifest.records = {3};
  write_manifest(dir.path(), manifest);
  {
    ShardDataset dataset(dir.path(), gray_pipeline());
    SampleRng rng(0);
    dataset.get(0, rng);
    expect_error_of<DataError>([&] { dataset.get(1, rng); },
                               {(dir / "s.tar").c_str(), "record 1 (key bad): "});
  }
  // A flipped byte in the last payload: the CRC check names it.
  const auto last = ShardReader(dir / "s.tar").entry(2);
  const uint64_t at = last.offset + last.size - 1;  // a pixel, 3
  {
    std::fstream f(dir / "s.tar", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.put('\x7f');
  }
  ShardDataset dataset(dir.path(), gray_pipeline());
  SampleRng rng(0);
  expect_error_of<DataError>([&] { dataset.get(2, rng); }, {(dir / "s.tar").c_str(), "record 2", "key last", "CRC-32"});
}

TEST(ShardDataset, OpenChecksCountsLabelsAndManifest) {
  TempDir dir("shard_dataset");
  expect_error_of<DataError>([&] { ShardDataset d(dir.path(), gray_pipeline()); }, {"run paisoar convert first"});
  paisoar::testing::write_shard(dir / "s.tar", {pgm_record("a", 0, 1), pgm_record("b", 1, 2)});
  ShardManifest manifest;
  manifest.classes = {"0", "1"};
  manifest.shards = {"s.tar"};
  manifest.records = {3};
  write_manifest(dir.path(), manifest);
  expect_error_of<DataError>([&] { ShardDataset d(dir.path(), gray_pipeline()); },
                             {(dir / "s.tar").c_str(), "holds 2 records", "says 3"});
  manifest.records = {2};
  write_manifest(dir.path(), manifest);
  std::ifstream in(dir / "s.tar.idx");
  std::ostringstream text;
  text << in.rdbuf();
  std::string idx = text.str();
  idx.replace(idx.find("b\t1\t"), 4, "b\t-1\t");
  std::ofstream(dir / "s.tar.idx") << idx;
  expect_error_of<DataError>([&] { ShardDataset d(dir.path(), gray_pipeline()); },
                             {(dir / "s.tar").c_str(), "record 1 (key b)", "label -1"});
}

}  // namespace
