// Fuzz tests of the data readers: IDX files (plain and gzipped), record shards
// (the tar and its .idx index) and the data set manifest. Random byte edits
// plus tampered header fields (huge dimensions, offsets and sizes past the end
// or overflowing, negative numbers, duplicate keys). Each damaged file must
// read or throw the reader's error naming the file, without crashing or
// allocating more than the cap.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <sstream>

#include "paisoar/data/data_error.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/record_shards.h"
#include "tests/fuzz/byte_mutator.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

namespace paisoar::data {
namespace {

using testing::ByteMutator;
using testing::fuzz_file;
using testing::read_file_bytes;
using testing::TempDir;
using testing::write_file_bytes;

constexpr int kMutants = 1500;

// ---- IDX --------------------------------------------------------------------

void load_idx(const std::string& path) {
  const torch::Tensor t = read_idx(path);
  ASSERT_TRUE(t.defined());
}

// An IDX header (type code, dimensions) over a few data bytes.
std::string idx_bytes(uint8_t code, const std::vector<uint32_t>& dims, size_t data_bytes) {
  std::string s = {0, 0, static_cast<char>(code), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(d >> shift));
  }
  return s + std::string(data_bytes, '\x5a');
}

std::string tampered_idx(ByteMutator& m, const std::string&) {
  static const uint32_t kDims[] = {0, 1, 2, 28, 255, 65535, 1u << 20, 0x7fffffff, 0xffffffff};
  static const uint8_t kCodes[] = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x00, 0x0A, 0xff};
  std::vector<uint32_t> dims(m.below(5));
  for (auto& d : dims) d = kDims[m.below(std::size(kDims))];
  return idx_bytes(kCodes[m.below(std::size(kCodes))], dims, m.below(600));
}

class IdxFuzz : public ::testing::Test {
 protected:
  TempDir dir_{"fuzz_idx", testing::fast_temp_parent()};
};

TEST_F(IdxFuzz, ByteEditsOfAPlainFile) {
  write_idx(dir_ / "valid.idx", torch::arange(3 * 5 * 7, torch::kInt16).reshape({3, 5, 7}));
  fuzz_file<c10::Error>(dir_ / "m.idx", read_file_bytes(dir_ / "valid.idx"), kMutants, 21, load_idx);
}

TEST_F(IdxFuzz, ByteEditsOfAGzippedFile) {
  write_idx(dir_ / "valid.idx.gz", torch::arange(4 * 28 * 28, torch::kInt32).reshape({4, 28, 28}).to(torch::kUInt8));
  fuzz_file<c10::Error>(dir_ / "m.idx.gz", read_file_bytes(dir_ / "valid.idx.gz"), kMutants, 22,
                                load_idx);
}

TEST_F(IdxFuzz, TamperedHeaders) {
  fuzz_file<c10::Error>(dir_ / "t.idx", "", kMutants, 23, load_idx, tampered_idx);
}

TEST_F(IdxFuzz, HeaderAnnouncingATerabyteIsRefusedBeforeAllocating) {
  // 2^20 x 2^20 bytes is within the old 1 TiB sanity bound; the file holds 10.
  write_file_bytes(dir_ / "big.idx", idx_bytes(0x08, {1u << 20, 1u << 20}, 10));
  testing::AllocationCap cap(size_t{64} << 20);
  testing::expect_error_of<c10::Error>([&] { read_idx(dir_ / "big.idx"); },
                                               {"big.idx", "announces", "holds"});
  EXPECT_EQ(cap.refused(), 0u);
  // Gzipped, the size cannot be known in advance; the reader must still not
  // allocate what the header claims before the data is there.
  const std::string plain = idx_bytes(0x08, {1u << 20, 1u << 20}, 10);
  gzFile f = gzopen((dir_ / "big.idx.gz").c_str(), "wb6");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, plain.data(), static_cast<unsigned>(plain.size())), static_cast<int>(plain.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  testing::expect_error_of<c10::Error>([&] { read_idx(dir_ / "big.idx.gz"); }, {"big.idx.gz"});
  EXPECT_EQ(cap.refused(), 0u);
}

// ---- record shards ----------------------------------------------------------

std::vector<Record> small_records() {
  std::vector<Record> records;
  for (int i = 0; i < 4; ++i) {
    Record r;
    r.key = {'k', static_cast<char>('0' + i)};
    r.label = i * 3;
    r.ext = "pgm";
    r.payload.assign(static_cast<size_t>(100 + 300 * i), static_cast<uint8_t>(i * 41));
    records.push_back(std::move(r));
  }
  return records;
}

void load_shard(const std::string& tar) {
  ShardReader reader(tar);
  for (int64_t i = 0; i < reader.size(); ++i) {
    const auto payload = reader.read(i);
    ASSERT_EQ(payload.size(), reader.entry(i).size);
  }
}

// One field of one index line replaced by a hostile value.
std::string tampered_index(ByteMutator& m, const std::string& valid) {
  static const char* kValues[] = {"0", "1", "-1", "512", "1024", "4294967296", "9223372036854775807",
                                  "9223372036854775808", "18446744073709551615", "18446744073709551616",
                                  "-9223372036854775808", "", "x", "k0", "k1", "00000000", "ffffffff",
                                  "pgm", " 5", "+5", "1e9"};
  std::vector<std::string> lines;
  std::istringstream in(valid);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const int edits = 1 + static_cast<int>(m.below(2));
  for (int e = 0; e < edits; ++e) {
    const size_t row = 1 + m.below(lines.size() - 1);
    std::vector<std::string> fields;
    std::istringstream cells(lines[row]);
    for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
    fields[m.below(fields.size())] = kValues[m.below(std::size(kValues))];
    std::string joined;
    for (size_t i = 0; i < fields.size(); ++i) joined += (i ? "\t" : "") + fields[i];
    lines[row] = joined;
  }
  if (m.below(8) == 0) lines[0] = "# paisoar-shard-index v1 records=" + std::string(kValues[m.below(11)]);
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

class ShardFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardWriter writer(dir_ / "s.tar");
    for (const auto& r : small_records()) writer.add(r);
    writer.finish();
    tar_ = read_file_bytes(dir_ / "s.tar");
    index_ = read_file_bytes(dir_ / "s.tar.idx");
    load_shard(dir_ / "s.tar");
  }
  TempDir dir_{"fuzz_shards", testing::fast_temp_parent()};
  std::string tar_, index_;
};

TEST_F(ShardFuzz, ByteEditsOfTheTar) {
  fuzz_file<DataError>(dir_ / "s.tar", tar_, kMutants, 31, [&](const std::string& path) { load_shard(path); });
}

TEST_F(ShardFuzz, ByteEditsOfTheIndex) {
  // The tar stays valid; the error names the index or the shard.
  fuzz_file<DataError>(dir_ / "s.tar.idx", index_, kMutants, 32,
                       [&](const std::string&) { load_shard(dir_ / "s.tar"); }, nullptr, dir_ / "s.tar");
}

TEST_F(ShardFuzz, TamperedIndexFields) {
  fuzz_file<DataError>(dir_ / "s.tar.idx", index_, kMutants, 33,
                       [&](const std::string&) { load_shard(dir_ / "s.tar"); }, tampered_index, dir_ / "s.tar");
}

TEST_F(ShardFuzz, HugeSizeOrOffsetIsRefusedAtOpen) {
  // A size near 2^64 wraps the end-of-record arithmetic; it must not pass.
  for (const char* size : {"18446744073709551615", "18446744073709551104", "9223372036854775807"}) {
    std::string index = index_;
    const size_t line = index.find("\nk3\t");
    ASSERT_NE(line, std::string::npos);
    std::istringstream cells(index.substr(line + 1, index.find('\n', line + 1) - line - 1));
    std::vector<std::string> f;
    for (std::string c; std::getline(cells, c, '\t');) f.push_back(c);
    const std::string tampered = f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + size + "\t" + f[4] + "\t" + f[5];
    index.replace(line + 1, index.find('\n', line + 1) - line - 1, tampered);
    write_file_bytes(dir_ / "s.tar.idx", index);
    testing::AllocationCap cap(size_t{64} << 20);
    testing::expect_error_of<DataError>([&] { load_shard(dir_ / "s.tar"); }, {"s.tar", "k3"});
    EXPECT_EQ(cap.refused(), 0u) << size;
  }
}

TEST_F(ShardFuzz, DuplicateKeysAreRefused) {
  std::string index = index_;
  index.replace(index.find("\nk2\t") + 1, 2, "k1");
  write_file_bytes(dir_ / "s.tar.idx", index);
  testing::expect_error_of<DataError>([&] { load_shard(dir_ / "s.tar"); }, {"s.tar.idx", "k1", "twice"});
}

TEST_F(ShardFuzz, ByteEditsOfTheManifest) {
  write_manifest(dir_.path(), {{"a", "b"}, {"s.tar"}, {4}});
  const std::string valid = read_file_bytes(dir_ / "dataset.json");
  fuzz_file<DataError>(dir_ / "dataset.json", valid, kMutants, 34,
                       [&](const std::string&) { read_manifest(dir_.path()); });
}

TEST_F(ShardFuzz, ManifestCountsThatOverflowAreRefused) {
  write_file_bytes(dir_ / "dataset.json",
                   R"({"format":"paisoar-shards-v1","classes":["a"],"shards":[)"
                   R"({"file":"a.tar","records":9223372036854775807},{"file":"b.tar","records":9223372036854775807}]})");
  testing::expect_error_of<DataError>([&] { read_manifest(dir_.path()); }, {"dataset.json", "records"});
}

}  // namespace
}  // namespace paisoar::data
