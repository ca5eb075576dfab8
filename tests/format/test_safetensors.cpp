// safetensors: every dtype round-trips bit for bit (0-d, empty and
// non-contiguous tensors too), Python reads our files and we read Python's,
// and damaged files (a flipped byte, any truncation) fail with the file's name.
#include "paisoar/format/safetensors.h"

#include "tests/support/expect_error.h"
#include "tests/support/python.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace paisoar::format {
namespace {

using testing::expect_error;
using testing::TempDir;

TensorMap every_dtype() {
  torch::manual_seed(1);
  const auto values = torch::randn({3, 5}) * 100;
  TensorMap t;
  t["f64"] = values.to(torch::kFloat64);
  t["f32"] = values;
  t["f16"] = values.to(torch::kFloat16);
  t["bf16"] = values.to(torch::kBFloat16);
  t["i64"] = values.to(torch::kInt64) * static_cast<int64_t>(1000000007);
  t["i32"] = values.to(torch::kInt32);
  t["i16"] = values.to(torch::kInt16);
  t["i8"] = values.clamp(-128, 127).to(torch::kInt8);
  t["u8"] = values.abs().clamp(0, 255).to(torch::kUInt8);
  t["bool"] = values > 0;
  t["scalar"] = torch::scalar_tensor(2.5, torch::kFloat64);
  t["empty"] = torch::empty({0, 4}, torch::kFloat32);
  t["transposed"] = torch::arange(12, torch::kFloat32).reshape({3, 4}).t();  // non-contiguous
  return t;
}

TEST(Safetensors, EveryDtypeRoundTripsBitForBit) {
  TempDir dir("safetensors");
  const TensorMap saved = every_dtype();
  save_safetensors(dir / "a.safetensors", saved, {{"epoch", "3"}, {"config", "lr: 0.1\n"}});
  const TensorFile loaded = load_safetensors(dir / "a.safetensors");
  EXPECT_EQ(loaded.source, dir / "a.safetensors");
  ASSERT_EQ(loaded.tensors.size(), saved.size());
  for (const auto& [name, t] : saved) {
    const torch::Tensor& back = loaded.tensors.at(name);
    EXPECT_EQ(back.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(back.sizes(), t.sizes()) << name;
    EXPECT_TRUE(torch::equal(back, t)) << name;
    EXPECT_TRUE(back.is_contiguous()) << name;
  }
  EXPECT_EQ(loaded.metadata.at("epoch"), "3");
  EXPECT_EQ(loaded.metadata.at("config"), "lr: 0.1\n");
  // Loaded tensors own their memory: changing the source changes nothing.
  TensorMap again = {{"x", torch::ones({4})}};
  save_safetensors(dir / "b.safetensors", again);
  torch::Tensor x = load_safetensors(dir / "b.safetensors").tensors.at("x");
  again["x"].fill_(7);
  EXPECT_TRUE(torch::equal(x, torch::ones({4})));
}

TEST(Safetensors, HeaderFollowsTheFormat) {
  TempDir dir("safetensors");
  save_safetensors(dir / "a.safetensors", every_dtype());
  const std::string bytes = testing::read_file_bytes(dir / "a.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["f32"]["dtype"], "F32");
  EXPECT_EQ(header["bf16"]["dtype"], "BF16");
  EXPECT_EQ(header["bool"]["dtype"], "BOOL");
  EXPECT_EQ(header["scalar"]["shape"], nlohmann::json::array());
  EXPECT_EQ(header["transposed"]["shape"], nlohmann::json({4, 3}));
  // Largest elements first, so every tensor starts aligned to its element size.
  EXPECT_EQ(header["f64"]["data_offsets"][0], 0);
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const uint64_t begin = info["data_offsets"][0];
    EXPECT_EQ(begin % torch::elementSize(every_dtype().at(name).scalar_type()), 0u) << name;
  }
  EXPECT_TRUE(header["__metadata__"]["paisoar.crc32"].is_string());
}

// The Python peer runs in the project's venv (tests/support/python.h), with
// torch and Hugging Face's safetensors package.
std::string peer() {
  std::string path = PAISOAR_FORMAT_TEST_DIR;
  path += "/safetensors_peer.py";
  return path;
}

TEST(Safetensors, PythonReadsOurFile) {
  TempDir dir("safetensors");
  const TensorMap saved = every_dtype();
  save_safetensors(dir / "a.safetensors", saved, {{"step", "12"}});
  paisoar::testing::run_python(peer() + " read " + (dir / "a.safetensors") + " " + (dir / "out.json"));
  const auto out = nlohmann::json::parse(testing::read_file_bytes(dir / "out.json"));
  EXPECT_EQ(out["__metadata__"]["step"], "12");
  // zlib's CRC-32 as Python computes it is the one we stored.
  EXPECT_EQ(out["crc32"], out["__metadata__"]["paisoar.crc32"]);
  ASSERT_EQ(out["tensors"].size(), saved.size());
  for (const auto& [name, t] : saved) {
    const auto& info = out["tensors"][name];
    EXPECT_EQ(info["shape"].get<std::vector<int64_t>>(), t.sizes().vec()) << name;
    const std::vector<double> values = info["values"];
    const torch::Tensor expected = t.to(torch::kFloat64).contiguous().flatten();
    ASSERT_EQ(static_cast<int64_t>(values.size()), expected.numel()) << name;
    for (int64_t i = 0; i < expected.numel(); ++i) EXPECT_EQ(values[i], expected[i].item<double>()) << name << "[" << i << "]";
  }
}

TEST(Safetensors, WeReadPythonsFile) {
  TempDir dir("safetensors");
  paisoar::testing::run_python(peer() + " write " + (dir / "py.safetensors"));
  const TensorFile c = load_safetensors(dir / "py.safetensors");
  EXPECT_TRUE(torch::equal(c.tensors.at("weight"), torch::arange(6, torch::kFloat32).reshape({2, 3}) / 4));
  EXPECT_TRUE(torch::equal(c.tensors.at("half"), torch::tensor({1.5, -2.25}, torch::kFloat16)));
  EXPECT_EQ(c.tensors.at("count").dim(), 0);
  EXPECT_EQ(c.tensors.at("count").item<int64_t>(), 7);
  EXPECT_EQ(c.metadata.at("written_by"), "python");
}

TEST(Safetensors, FlippedDataByteIsACrcError) {
  TempDir dir("safetensors");
  const std::string path = dir / "a.safetensors";
  save_safetensors(path, every_dtype());
  std::string bytes = testing::read_file_bytes(path);
  bytes[bytes.size() - 10] ^= 0x20;
  testing::write_file_bytes(path, bytes);
  expect_error([&] { load_safetensors(path); }, {path.c_str(), "CRC-32"});
}

TEST(Safetensors, ChangedMetadataIsAHeaderCrcError) {
  TempDir dir("safetensors");
  const std::string path = dir / "a.safetensors";
  save_safetensors(path, {{"w", torch::ones({2})}}, {{"lr", "0.1"}});
  std::string bytes = testing::read_file_bytes(path);
  const size_t at = bytes.find("0.1");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2] = '7';  // still valid JSON, still a number: only the CRC can tell
  testing::write_file_bytes(path, bytes);
  expect_error([&] { load_safetensors(path); }, {path.c_str(), "header's CRC-32"});
}

TEST(Safetensors, EveryTruncationIsAnErrorNamingTheFile) {
  TempDir dir("safetensors");
  const std::string path = dir / "a.safetensors";
  save_safetensors(path, {{"w", torch::randn({4, 4})}, {"b", torch::randn({4})}});
  const std::string bytes = testing::read_file_bytes(path);
  for (size_t size = 0; size < bytes.size(); size += (size < 16 || size + 16 > bytes.size()) ? 1 : 7) {
    testing::write_file_bytes(path, bytes.substr(0, size));
    expect_error([&] { load_safetensors(path); }, {path.c_str()});
  }
  testing::write_file_bytes(path, bytes.substr(0, bytes.size() - 1));
  expect_error([&] { load_safetensors(path); }, {path.c_str(), "truncated"});
}

TEST(Safetensors, BadInputsAreNamed) {
  TempDir dir("safetensors");
  expect_error([&] { save_safetensors(dir / "c.safetensors", {{"z", torch::zeros({2}, torch::kComplexFloat)}}); },
               {"'z'", "ComplexFloat"});
  expect_error([&] { save_safetensors(dir / "c.safetensors", {}, {{"paisoar.crc32", "0"}}); }, {"reserved"});
  expect_error([&] { load_safetensors(dir / "missing.safetensors"); }, {"missing.safetensors"});
  // A directory that cannot exist (under a regular file) fails for root too.
  expect_error([&] { save_safetensors("/etc/hostname/x.safetensors", {{"w", torch::ones({1})}}); },
               {"/etc/hostname"});
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace paisoar::format
