// Record shards: write/read round trips with random access, the tar read back
// by Python's tarfile and GNU tar, reproducible bytes, and the errors for a
// truncated shard, a flipped byte, a missing index or manifest, bad keys, and a
// writer dropped before finish().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <sys/stat.h>

#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "tests/support/expect_error.h"
#include "tests/support/python.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"
#include "tests/data/shard_test_util.h"

namespace fs = std::filesystem;
using paisoar::data::DataError;
using paisoar::data::Record;
using paisoar::data::ShardManifest;
using paisoar::data::ShardReader;
using paisoar::data::ShardWriter;
using paisoar::testing::expect_error_of;
using paisoar::testing::TempDir;

namespace {

// Sizes around the 512-byte block boundary, empty, and large.
std::vector<Record> sample_records() {
  const size_t sizes[] = {0, 1, 511, 512, 513, 1024, 3000, 100000};
  const char* exts[] = {"pgm", "jpg", "png", "ppm"};
  std::mt19937 gen(7);
  std::vector<Record> records;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    Record r;
    r.key = "rec_" + std::to_string(i) + "-x";
    r.label = static_cast<int64_t>(i * 37 % 11);
    r.ext = exts[i % 4];
    r.payload.resize(sizes[i]);
    for (auto& b : r.payload) b = static_cast<uint8_t>(gen());
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The members `tar` would list: <key>.<ext>, <key>.cls per record.
std::string expected_listing(const std::vector<Record>& records) {
  std::string out;
  for (const auto& r : records) out += r.key + "." + r.ext + "\n" + r.key + ".cls\n";
  return out;
}

TEST(RecordShards, RoundTripWithRandomAccess) {
  TempDir dir("shards");
  const auto records = sample_records();
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, records);
  EXPECT_EQ(list_dir(dir.path()), (std::vector<std::string>{"a.tar", "a.tar.idx"}));

  ShardReader reader(path);
  ASSERT_EQ(reader.size(), static_cast<int64_t>(records.size()));
  EXPECT_EQ(reader.path(), path);
  std::vector<int64_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  for (int64_t i : order) {
    const auto& r = records[i];
    const auto& e = reader.entry(i);
    EXPECT_EQ(e.key, r.key);
    EXPECT_EQ(e.label, r.label);
    EXPECT_EQ(e.ext, r.ext);
    EXPECT_EQ(e.size, r.payload.size());
    EXPECT_EQ(e.offset % 512, 0u);
    EXPECT_EQ(reader.read(i), r.payload) << "record " << i;
  }
  EXPECT_THROW(reader.entry(static_cast<int64_t>(records.size())), c10::IndexError);
  EXPECT_THROW(reader.read(-1), c10::IndexError);
  // Headers, padded payloads, the two .cls members and the end blocks, nothing more.
  uint64_t expected = 1024;
  for (const auto& r : records) expected += 512 + (r.payload.size() + 511) / 512 * 512 + 512 + 512;
  EXPECT_EQ(fs::file_size(path), expected);
}

TEST(RecordShards, EmptyShardIsAValidTar) {
  TempDir dir("shards");
  paisoar::testing::write_shard(dir / "empty.tar", {});
  EXPECT_EQ(fs::file_size(dir / "empty.tar"), 1024u);
  EXPECT_EQ(ShardReader(dir / "empty.tar").size(), 0);
}

TEST(RecordShards, SameRecordsGiveTheSameBytes) {
  TempDir dir("shards");
  paisoar::testing::write_shard(dir / "a.tar", sample_records());
  paisoar::testing::write_shard(dir / "b.tar", sample_records());
  EXPECT_EQ(paisoar::testing::read_file_bytes(dir / "a.tar"), paisoar::testing::read_file_bytes(dir / "b.tar"));
  EXPECT_EQ(paisoar::testing::read_file_bytes(dir / "a.tar.idx"), paisoar::testing::read_file_bytes(dir / "b.tar.idx"));
}

TEST(RecordShards, PythonTarfileReadsMembersAndBytes) {
  TempDir dir("shards");
  const auto records = sample_records();
  paisoar::testing::write_shard(dir / "a.tar", records);
  // tarfile checks every header's checksum. Per member: name, mode, mtime,
  // size, then the text of a .cls member or the CRC-32 of a payload.
  const std::string script = dir / "list.py";
  std::ofstream(script) << "import sys, tarfile, zlib\n"
                           "with tarfile.open(sys.argv[1], 'r:') as t, open(sys.argv[2], 'w') as out:\n"
                           "    for m in t:\n"
                           "        data = t.extractfile(m).read()\n"
                           "        what = data.decode() if m.name.endswith('.cls') else '%08x' % zlib.crc32(data)\n"
                           "        out.write('%s %o %d %d %s\\n' % (m.name, m.mode, m.mtime, len(data), what))\n";
  const std::string listing = dir / "listing.txt";
  paisoar::testing::run_python(script + " " + (dir / "a.tar") + " " + listing);

  std::ostringstream expected;
  ShardReader reader(dir / "a.tar");
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    char crc[9];
    std::snprintf(crc, sizeof(crc), "%08x", reader.entry(static_cast<int64_t>(i)).crc32);
    const std::string label = std::to_string(r.label);
    expected << r.key << "." << r.ext << " 644 0 " << r.payload.size() << " " << crc << "\n"
             << r.key << ".cls 644 0 " << label.size() << " " << label << "\n";
  }
  EXPECT_EQ(paisoar::testing::read_file_bytes(listing), expected.str());
}

TEST(RecordShards, GnuTarListsAndExtractsThem) {
  if (std::system("tar --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no tar";
  TempDir dir("shards");
  const auto records = sample_records();
  paisoar::testing::write_shard(dir / "a.tar", records);
  const std::string tar = dir / "a.tar";
  ASSERT_EQ(std::system(("tar -tf " + tar + " > " + (dir / "list.txt") + " 2> " + (dir / "err.txt")).c_str()), 0);
  EXPECT_EQ(paisoar::testing::read_file_bytes(dir / "list.txt"), expected_listing(records));
  EXPECT_EQ(paisoar::testing::read_file_bytes(dir / "err.txt"), "");  // no "checksum error" or "unexpected EOF" warnings
  fs::create_directory(dir / "x");
  ASSERT_EQ(std::system(("tar -xf " + tar + " -C " + (dir / "x")).c_str()), 0);
  const auto& r = records[6];
  const std::string bytes = paisoar::testing::read_file_bytes(dir / ("x/" + r.key + "." + r.ext));
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), r.payload);
  EXPECT_EQ(paisoar::testing::read_file_bytes(dir / ("x/" + r.key + ".cls")), std::to_string(r.label));
}

TEST(RecordShards, TruncatedShardIsReportedAtOpen) {
  TempDir dir("shards");
  const auto records = sample_records();
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, records);
  const uint64_t cut_at = ShardReader(path).entry(5).offset + 10;  // inside record 5's payload
  fs::resize_file(path, cut_at);
  expect_error_of<DataError>([&] { ShardReader reader(path); },
                             {path.c_str(), "truncated", "record 5 ", records[5].key.c_str(),
                              "re-run paisoar convert"});
  // Only the end-of-archive blocks missing: still reported.
  paisoar::testing::write_shard(path, records);
  fs::resize_file(path, fs::file_size(path) - 512);
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {path.c_str(), "truncated"});
}

TEST(RecordShards, FlippedByteIsReportedAtReadNamingRecordAndKey) {
  TempDir dir("shards");
  const auto records = sample_records();
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, records);
  const uint64_t at = ShardReader(path).entry(4).offset + 100;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x10));
  }
  ShardReader reader(path);  // the size still matches: open succeeds
  EXPECT_EQ(reader.read(3), records[3].payload);
  expect_error_of<DataError>([&] { reader.read(4); },
                             {path.c_str(), "record 4 ", "(key rec_4-x)", "CRC-32", "corrupt"});
}

TEST(RecordShards, MissingFilesSayWhatToDo) {
  TempDir dir("shards");
  const auto path = dir / "a.tar";
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {path.c_str(), "cannot open"});
  paisoar::testing::write_shard(path, sample_records());
  fs::remove(path + ".idx");
  expect_error_of<DataError>([&] { ShardReader reader(path); },
                             {(path + ".idx").c_str(), "paisoar convert"});
}

TEST(RecordShards, DamagedIndexNamesTheLine) {
  TempDir dir("shards");
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, sample_records());
  std::string idx = paisoar::testing::read_file_bytes(path + ".idx");
  const size_t line3 = idx.find('\n', idx.find('\n') + 1) + 1;
  idx.insert(idx.find('\t', line3) + 1, "x");  // label "x<label>"
  std::ofstream(path + ".idx", std::ios::binary) << idx;
  expect_error_of<DataError>([&] { ShardReader reader(path); },
                             {(path + ".idx").c_str(), "line 3", "label", "paisoar convert"});
  std::ofstream(path + ".idx", std::ios::binary) << "hello\n";
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {"line 1", "not a paisoar shard index"});
}

TEST(RecordShards, WriterRejectsBadRecords) {
  TempDir dir("shards");
  ShardWriter writer(dir / "a.tar");
  Record r;
  r.ext = "pgm";
  for (const char* key : {"", "a/b", "a.b", "a b"}) {
    r.key = key;
    expect_error_of<DataError>([&] { writer.add(r); }, {"record key", "not valid"});
  }
  r.key = std::string(91, 'k');
  expect_error_of<DataError>([&] { writer.add(r); }, {"not valid", "90"});
  r.key = std::string(90, 'k');
  writer.add(r);  // the longest key still fits ustar's name field
  expect_error_of<DataError>([&] { writer.add(r); }, {"used twice"});
  r.key = "ok";
  r.ext = "JPG";
  expect_error_of<DataError>([&] { writer.add(r); }, {"extension 'JPG'"});
  r.ext = "jpg";
  r.label = -1;
  expect_error_of<DataError>([&] { writer.add(r); }, {"label -1", "negative"});
}

TEST(RecordShards, WriterWithoutFinishLeavesNoFiles) {
  TempDir dir("shards");
  {
    ShardWriter writer(dir / "a.tar");
    for (const auto& r : sample_records()) writer.add(r);
    EXPECT_EQ(list_dir(dir.path()).size(), 1u);  // the tar's temporary
  }
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{});
}

TEST(RecordShards, ManifestRoundTripAndErrors) {
  TempDir dir("shards");
  expect_error_of<DataError>([&] { paisoar::data::read_manifest(dir.path()); },
                             {(dir / "dataset.json").c_str(), "run paisoar convert first"});
  ShardManifest m;
  m.classes = {"cat", "dog", "\"odd\" name"};
  m.shards = {"shard-000000.tar", "shard-000001.tar"};
  m.records = {10, 3};
  paisoar::data::write_manifest(dir.path(), m);
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"dataset.json"});
  const auto text = paisoar::testing::read_file_bytes(dir / "dataset.json");
  EXPECT_NE(text.find("\"format\": \"paisoar-shards-v1\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"records\": 13"), std::string::npos) << text;
  const auto back = paisoar::data::read_manifest(dir.path());
  EXPECT_EQ(back.classes, m.classes);
  EXPECT_EQ(back.shards, m.shards);
  EXPECT_EQ(back.records, m.records);

  std::ofstream(dir / "dataset.json") << "{\"format\": \"paisoar-shards-v1\", \"classes\": [";
  expect_error_of<DataError>([&] { paisoar::data::read_manifest(dir.path()); },
                             {(dir / "dataset.json").c_str(), "malformed"});
  std::ofstream(dir / "dataset.json") << "{\"format\": \"other\"}";
  expect_error_of<DataError>([&] { paisoar::data::read_manifest(dir.path()); }, {"format"});
  std::ofstream(dir / "dataset.json")
      << R"({"format": "paisoar-shards-v1", "classes": ["a"], "shards": [{"file": "../x.tar", "records": 1}]})";
  expect_error_of<DataError>([&] { paisoar::data::read_manifest(dir.path()); }, {"../x.tar"});
  // No classes would turn the loader's label check off.
  std::ofstream(dir / "dataset.json")
      << R"({"format": "paisoar-shards-v1", "classes": [], "shards": [{"file": "x.tar", "records": 1}]})";
  expect_error_of<DataError>([&] { paisoar::data::read_manifest(dir.path()); }, {"\"classes\" is empty"});
  // Each field read for what it must be, in words: never nlohmann's own text.
  const std::pair<std::string, const char*> lies[] = {
      {R"({"format": "paisoar-shards-v1", "classes": ["a"], "records": 8.5, "shards": [{"file": "x.tar", "records": 8}]})",
       "\"records\" must be an integer, got a number with a fraction"},
      {R"({"format": "paisoar-shards-v1", "classes": ["a"], "records": 2, "shards": [{"file": "x.tar", "records": 1}, )"
       R"({"file": "x.tar", "records": 1}]})",
       "shard 'x.tar' is listed twice"},
      {R"({"format": "paisoar-shards-v1", "classes": ["a", "a"], "records": 1, "shards": [{"file": "x.tar", "records": 1}]})",
       "class 'a' is listed twice"},
      {R"({"format": "paisoar-shards-v1", "classes": [1, 2], "records": 1, "shards": []})",
       "\"classes\" must be a list of strings, one item is a number"},
      {R"({"format": "paisoar-shards-v1", "classes": ["a"], "records": 1, "shards": [{"file": 3, "records": 1}]})",
       "\"file\" of shard 0 must be a string, got a number"},
      {R"({"format": "paisoar-shards-v1", "classes": ["b"], "classes": ["a"], "shards": []})",
       "the name 'classes' appears twice in one object"},
      {R"({"format": "paisoar-shards-v1", "classes": ["a"], "records": "8", "shards": []})",
       "\"records\" must be an integer, got a string"},
      {std::string(R"({"format": "paisoar-shards-v1", "classes": ["a"], "records": 0, "shards": []})") + '\0' + "x",
       "a NUL byte at line 1"},
      {"{\"format\": \"paisoar-shards-v1\",\n \"classes\": [\"a\"\n", "not valid JSON at line 3"},
      {"  \n", "empty, not JSON"},
  };
  for (const auto& [text, words] : lies) {
    std::ofstream(dir / "dataset.json", std::ios::binary) << text;
    try {
      paisoar::data::read_manifest(dir.path());
      ADD_FAILURE() << "accepted: " << text;
    } catch (const DataError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(words), std::string::npos) << message;
      EXPECT_NE(message.find(dir / "dataset.json"), std::string::npos) << message;
      EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
    }
  }
}

// The label is in the index and, as a member of its own, in the tar: an index
// that says another class than the shard trains on a wrong label unless the
// two are compared.
TEST(RecordShards, AnIndexLabelOtherThanTheShardsIsRefusedAtRead) {
  TempDir dir("shards");
  const auto records = sample_records();
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, records);
  ASSERT_EQ(records[0].label, 0);
  std::string idx = paisoar::testing::read_file_bytes(path + ".idx");
  const size_t line2 = idx.find('\n') + 1;
  idx[idx.find('\t', line2) + 1] = '7';
  std::ofstream(path + ".idx", std::ios::binary) << idx;
  ShardReader reader(path);
  EXPECT_EQ(reader.read(1), records[1].payload);
  expect_error_of<DataError>([&] { reader.read(0); },
                             {path.c_str(), "record 0 ", "the index gives label 7 but the shard's label member holds '0'"});
}

TEST(RecordShards, FifosAndBytesThatAreNotTextAreNamedNotWaitedOn) {
  TempDir dir("shards");
  const auto path = dir / "a.tar";
  paisoar::testing::write_shard(path, sample_records());
  const std::string idx = paisoar::testing::read_file_bytes(path + ".idx");
  std::string damaged = idx;
  damaged[damaged.find('\t', damaged.find('\n') + 1) + 1] = '\x01';
  std::ofstream(path + ".idx", std::ios::binary) << damaged;
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {"line 2", "label '\\x01'"});
  fs::remove(path + ".idx");
  ASSERT_EQ(::mkfifo((path + ".idx").c_str(), 0600), 0);
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {(path + ".idx").c_str(), "FIFO"});
  fs::remove(path + ".idx");
  std::ofstream(path + ".idx", std::ios::binary) << idx;
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expect_error_of<DataError>([&] { ShardReader reader(path); }, {path.c_str(), "FIFO"});
}

}  // namespace
