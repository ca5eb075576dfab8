// TensorBoard event files: the CRC-32C check value, TFRecord framing that
// checks out record by record, and TensorBoard's own reader (its
// EventAccumulator, from the venv) finding every tag, step and value written.
#include "paisoar/format/event_file.h"

#include "tests/support/python.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace paisoar::format {
namespace {

using testing::TempDir;

TEST(EventFile, Crc32cMatchesTheCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C catalogue's check value
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(EventFile, EveryRecordIsFramedWithMaskedCrcs) {
  TempDir dir;
  std::string path;
  {
    EventWriter writer(dir / "tb");
    for (int step = 0; step < 5; ++step) writer.add_scalar("loss", 1.0 / (step + 1), step);
    path = writer.path();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size()) << "a record header is cut at byte " << at;
    uint64_t length;
    uint32_t length_crc, data_crc;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(length_crc, masked_crc32c(bytes.data() + at, 8)) << "record " << records;
    ASSERT_LE(at + 12 + length + 4, bytes.size());
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    EXPECT_EQ(data_crc, masked_crc32c(bytes.data() + at + 12, length)) << "record " << records;
    at += 12 + length + 4;
    ++records;
  }
  EXPECT_EQ(records, 6);  // the file-version record and five scalars
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
}

TEST(EventFile, TensorBoardReadsTheTagsStepsAndValues) {
  TempDir dir;
  {
    EventWriter writer(dir / "tb");
    for (int step = 10; step <= 50; step += 10) {
      writer.add_scalar("train/loss", 2.5 - step * 0.01, step, 1000.0 + step);
      writer.add_scalar("train/lr", 0.1 * step, step, 1000.0 + step);
    }
    writer.add_scalar("eval/accuracy", 0.875, 50);
  }
  const std::string peer = std::string(PAISOAR_FORMAT_TEST_DIR) + "/tensorboard_peer.py";
  const auto got = nlohmann::json::parse(paisoar::testing::run_python(peer + " " + (dir / "tb")));
  ASSERT_EQ(got.size(), 3u) << got.dump();
  ASSERT_EQ(got["train/loss"].size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const int step = 10 * (i + 1);
    EXPECT_EQ(got["train/loss"][i][0].get<int>(), step);
    EXPECT_FLOAT_EQ(got["train/loss"][i][1].get<float>(), static_cast<float>(2.5 - step * 0.01));
    EXPECT_DOUBLE_EQ(got["train/loss"][i][2].get<double>(), 1000.0 + step);
    EXPECT_FLOAT_EQ(got["train/lr"][i][1].get<float>(), static_cast<float>(0.1 * step));
  }
  EXPECT_FLOAT_EQ(got["eval/accuracy"][0][1].get<float>(), 0.875f);
}

TEST(EventFile, AnUnwritableDirectoryIsAClearError) {
  TempDir dir;
  std::ofstream(dir / "file") << "x";
  try {
    EventWriter writer((dir / "file") + "/tb");
    ADD_FAILURE() << "wrote under a regular file";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("EventWriter: cannot create"), std::string::npos)
        << e.what_without_backtrace();
  }
}

}  // namespace
}  // namespace paisoar::format
