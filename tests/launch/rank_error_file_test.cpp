// error_file_message(): the message torch's `@record` leaves in
// TORCHELASTIC_ERROR_FILE. The first text below is the file torch 2.14.1
// wrote for `raise ValueError("boom \"quoted\"\nsecond line")` in a function
// decorated with torch.distributed.elastic.multiprocessing.errors.record
// (launch_python_test.cpp checks a live one through the launcher).
#include "launch/rank_error_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace paisoar::launch {
namespace {

const char* const kTorchRecord =
    R"({"message": {"message": "ValueError: boom \"quoted\"\nsecond line", "extraInfo": {"py_ca)"
    R"(llstack": "Traceback (most recent call last):\n  File \"/work/main/.venv/lib/python3.11/)"
    R"(site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 380, )"
    R"(in wrapper\n    return f(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^\n  File \"/tmp/)"
    R"(rec.py\", line 4, in main\n    raise ValueError(\"boom \\\"quoted\\\"\\nsecond line\")\n)"
    R"(ValueError: boom \"quoted\"\nsecond line\n", "timestamp": "1796163920"}}})";

TEST(RankErrorFile, ReadsTheMessageTorchsRecordWrote) {
  EXPECT_EQ(error_file_message(kTorchRecord), "ValueError: boom \"quoted\"\nsecond line");
}

TEST(RankErrorFile, OtherShapes) {
  EXPECT_EQ(error_file_message(R"({"message": "plain text"})"), "plain text");
  EXPECT_EQ(error_file_message(R"({ "message" :  { "extraInfo": {}, "message": "\u00e9\t\/"}})"),
            "\xc3\xa9\t/");
  EXPECT_EQ(error_file_message(R"({"message": "\ud83d\ude00"})"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(error_file_message(R"({"other": "message", "message": "the key"})"), "the key");
  EXPECT_FALSE(error_file_message("").has_value());
  EXPECT_FALSE(error_file_message(R"({"message": 3})").has_value());
  EXPECT_FALSE(error_file_message(R"({"message": "unterminated)").has_value());
}

TEST(RankErrorFile, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/rank_error_file_test.json";
  std::ofstream(path) << kTorchRecord;
  EXPECT_EQ(read_error_file(path), "ValueError: boom \"quoted\"\nsecond line");
  EXPECT_FALSE(read_error_file(path + ".missing").has_value());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace paisoar::launch
