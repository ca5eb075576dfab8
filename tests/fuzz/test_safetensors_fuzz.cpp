// Fuzz test of the safetensors reader (checkpoint loading must never trust a
// header field): random byte edits of a paisoar-written file (with CRCs) and of
// the same file without them (as Python writes it, so the edits reach the
// layout checks), tampered header fields (huge, negative, fractional or
// overflowing shapes and offsets, unknown dtypes, duplicate names, deep
// nesting, lying header lengths). Each must load or throw c10::Error naming
// the file, without crashing or allocating more than the cap.
#include "paisoar/format/safetensors.h"

#include "tests/fuzz/byte_mutator.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace paisoar::checkpoint {
namespace {

using Json = nlohmann::json;
using testing::ByteMutator;
using testing::fuzz_file;
using testing::TempDir;

constexpr int kMutants = 1500;

format::TensorMap small_tensors() {
  torch::manual_seed(3);
  format::TensorMap t;
  t["w"] = torch::randn({4, 3});
  t["b"] = torch::arange(5, torch::kInt64);
  t["h"] = torch::randn({2, 2}).to(torch::kBFloat16);
  t["flag"] = torch::tensor({true, false, true});
  t["s"] = torch::scalar_tensor(2.5, torch::kFloat64);
  t["e"] = torch::empty({0, 3});
  return t;
}

// A safetensors file from a header and a data section.
std::string assemble(const std::string& header_text, const std::string& data) {
  std::string text = header_text;
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t{text.size()} >> (8 * i));
  return out + text + data;
}

struct Parts {
  Json header;
  std::string data;
};

Parts split(const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(file[i])} << (8 * i);
  Parts p{Json::parse(file.substr(8, n)), file.substr(8 + n)};
  return p;
}

// The same file without paisoar's CRC keys, as another writer would make it.
std::string without_crcs(const std::string& file) {
  Parts p = split(file);
  p.header["__metadata__"].erase(format::kDataCrcKey);
  p.header["__metadata__"].erase(format::kHeaderCrcKey);
  return assemble(p.header.dump(), p.data);
}

Json nasty_value(ByteMutator& m) {
  static const Json kValues[] = {-1,
                                 0,
                                 1,
                                 7,
                                 int64_t{1} << 31,
                                 int64_t{1} << 32,
                                 int64_t{1} << 53,
                                 std::numeric_limits<int64_t>::max(),
                                 uint64_t{1} << 63,
                                 std::numeric_limits<uint64_t>::max(),
                                 std::numeric_limits<int64_t>::min(),
                                 1.5,
                                 -0.0,
                                 1e300,
                                 "12",
                                 "F32",
                                 "F99",
                                 "",
                                 nullptr,
                                 true,
                                 Json::array(),
                                 Json::object(),
                                 {1, 2, 3},
                                 {0, std::numeric_limits<uint64_t>::max()},
                                 {uint64_t{1} << 62, uint64_t{1} << 62},
                                 {{"dtype", "F32"}}};
  return kValues[m.below(std::size(kValues))];
}

// One tampered header field (or a few), the data section kept or cut.
std::string tamper(ByteMutator& m, const std::string& valid) {
  Parts p = split(valid);
  std::vector<std::string> names;
  for (const auto& [name, info] : p.header.items()) {
    if (name != "__metadata__") names.push_back(name);
  }
  const int edits = 1 + static_cast<int>(m.below(2));
  for (int e = 0; e < edits; ++e) {
    Json& info = p.header[names[m.below(names.size())]];
    if (!info.is_object()) info = Json::object();
    for (const char* list : {"shape", "data_offsets"}) {
      if (!info[list].is_array()) info[list] = Json::array();
    }
    if (info["data_offsets"].size() < 2) info["data_offsets"] = {0, 0};
    switch (m.below(7)) {
      case 0: info["dtype"] = m.below(2) ? nasty_value(m) : Json("BF16"); break;
      case 1: info["shape"] = nasty_value(m); break;
      case 2:
        if (info["shape"].empty()) info["shape"].push_back(nasty_value(m));
        else info["shape"][m.below(info["shape"].size())] = nasty_value(m);
        break;
      case 3: info["shape"].push_back(m.below(2) ? nasty_value(m) : Json(0)); break;
      case 4: info["data_offsets"][m.below(2)] = nasty_value(m); break;
      case 5: info.erase(m.below(2) ? "shape" : "data_offsets"); break;
      default: p.header["__metadata__"][m.below(2) ? "epoch" : "x"] = nasty_value(m); break;
    }
  }
  if (m.below(4) == 0) p.data.resize(m.below(p.data.size() + 64), '\0');
  return assemble(p.header.dump(), p.data);
}

void load(const std::string& path) {
  const format::TensorFile c = format::load_safetensors(path);
  for (const auto& [name, t] : c.tensors) ASSERT_TRUE(t.defined()) << name;
}

class SafetensorsFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    format::save_safetensors(dir_ / "valid.safetensors", small_tensors(), {{"epoch", "3"}});
    valid_ = testing::read_file_bytes(dir_ / "valid.safetensors");
  }
  TempDir dir_{"fuzz_safetensors", testing::fast_temp_parent()};
  std::string valid_;
};

TEST_F(SafetensorsFuzz, AllocationCapCatchesAHugeTensor) {
  // The harness itself: a tensor over the cap is refused and counted.
  testing::AllocationCap cap(1 << 20);
  EXPECT_THROW(torch::empty({1 << 22}), c10::Error);
  EXPECT_THROW(std::string(2 << 20, 'x'), std::bad_alloc);
  EXPECT_EQ(cap.refused(), 2u);
}

TEST_F(SafetensorsFuzz, ByteEditsOfACheckedFile) {
  fuzz_file<c10::Error>(dir_ / "m.safetensors", valid_, kMutants, 11, load);
}

TEST_F(SafetensorsFuzz, ByteEditsOfAFileWithoutCrcs) {
  const std::string plain = without_crcs(valid_);
  testing::write_file_bytes(dir_ / "plain.safetensors", plain);
  ASSERT_EQ(format::load_safetensors(dir_ / "plain.safetensors").tensors.size(), small_tensors().size());
  fuzz_file<c10::Error>(dir_ / "m.safetensors", plain, kMutants, 12, load);
}

TEST_F(SafetensorsFuzz, TamperedHeaderFields) {
  fuzz_file<c10::Error>(dir_ / "m.safetensors", without_crcs(valid_), kMutants, 13, load, tamper);
}

TEST_F(SafetensorsFuzz, LyingHeaderLength) {
  // The 8-byte length: every interesting value, little-endian.
  const std::string plain = without_crcs(valid_);
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{99'999'999}, uint64_t{100'000'001},
                     uint64_t{1} << 32, uint64_t{1} << 63, ~uint64_t{0}, uint64_t{plain.size()}}) {
    std::string bytes = plain;
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
    testing::write_file_bytes(dir_ / "n.safetensors", bytes);
    testing::AllocationCap cap(size_t{64} << 20);
    testing::expect_error([&] { format::load_safetensors(dir_ / "n.safetensors"); }, {"n.safetensors"});
    EXPECT_EQ(cap.refused(), 0u) << n;
  }
}

TEST_F(SafetensorsFuzz, DuplicateTensorNamesAreNamed) {
  // JSON parsers keep one of two equal keys; the reader must refuse the file.
  std::string text = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                     R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  testing::write_file_bytes(dir_ / "d.safetensors", assemble(text, std::string(8, '\0')));
  testing::expect_error([&] { format::load_safetensors(dir_ / "d.safetensors"); }, {"d.safetensors", "'a'", "twice"});
}

TEST_F(SafetensorsFuzz, DeeplyNestedHeaderIsRefusedNotRecursedInto) {
  // A million nested arrays: printing or copying such a value recurses once per level.
  const int depth = 1'000'000;
  std::string text = R"({"__metadata__":{"paisoar.header_crc32":"00000000"},"a":{"dtype":)" +
                     std::string(depth, '[') + std::string(depth, ']') +
                     R"(,"shape":[1],"data_offsets":[0,4]}})";
  testing::write_file_bytes(dir_ / "deep.safetensors", assemble(text, std::string(4, '\0')));
  testing::expect_error([&] { format::load_safetensors(dir_ / "deep.safetensors"); }, {"deep.safetensors", "nest"});
}

TEST_F(SafetensorsFuzz, HugeDimensionAfterAZeroOne) {
  // numel stays 0, but the second size does not fit int64.
  const std::string text =
      R"({"a":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})";
  testing::write_file_bytes(dir_ / "z.safetensors", assemble(text, ""));
  testing::expect_error([&] { format::load_safetensors(dir_ / "z.safetensors"); }, {"z.safetensors", "'a'"});
  std::string dims = "0";
  for (int i = 0; i < 100000; ++i) dims += ",1";
  const std::string rank = R"({"a":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[0,0]}})";
  testing::write_file_bytes(dir_ / "r.safetensors", assemble(rank, ""));
  testing::expect_error([&] { format::load_safetensors(dir_ / "r.safetensors"); }, {"r.safetensors", "dimensions"});
}

}  // namespace
}  // namespace paisoar::checkpoint
