// safetensors writer and reader. The writer makes two passes over the tensors
// (CRC, then bytes) so the header, which carries the CRC, can go first; the
// reader reads each tensor straight into its own storage, checking the layout
// the header claims against the file's real size before any allocation.
#include "paisoar/format/safetensors.h"

#include "paisoar/format/file_system.h"
#include "src/util/json_text.h"
#include "src/util/text_check.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cerrno>
#include <functional>
#include <limits>
#include <vector>


namespace paisoar::format {
namespace {

using Json = nlohmann::json;

// Python's safetensors refuses headers above 100 MB; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeName {
  torch::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {torch::kFloat64, "F64"}, {torch::kFloat32, "F32"}, {torch::kFloat16, "F16"}, {torch::kBFloat16, "BF16"},
    {torch::kInt64, "I64"},   {torch::kInt32, "I32"},   {torch::kInt16, "I16"},   {torch::kInt8, "I8"},
    {torch::kUInt8, "U8"},    {torch::kBool, "BOOL"}};

const char* dtype_name(torch::ScalarType type, const std::string& tensor) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  TORCH_CHECK(false, "safetensors: tensor '", tensor, "' has dtype ", type,
              ", which safetensors cannot store; convert it to one of F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL");
}

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

uint32_t crc_update(uint32_t crc, const void* data, uint64_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes a uInt length
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(size, std::numeric_limits<uInt>::max()));
    crc = static_cast<uint32_t>(::crc32(crc, p, chunk));
    p += chunk;
    size -= chunk;
  }
  return crc;
}

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

// The header's CRC covers its canonical form without the two CRC keys, so the
// same text can be rebuilt from a parsed header on load.
uint32_t header_crc(Json header) {
  auto& meta = header["__metadata__"];
  meta.erase(kDataCrcKey);
  meta.erase(kHeaderCrcKey);
  const std::string text = header.dump();
  return crc_update(static_cast<uint32_t>(::crc32(0, nullptr, 0)), text.data(), text.size());
}

// A shape with more dimensions than this is refused (torch's own limit is far
// lower in practice; the bound keeps a damaged header from asking for millions).
constexpr size_t kMaxDims = 64;

// The header as a JSON object. Refused before anything else looks at it: a
// value nested deeper than a tensor entry's shape list (the root is depth 0,
// an entry 1, its shape 2), since copying or printing a value recurses once
// per level and a million '[' would overflow the stack; and a name that
// appears twice in one object (util::parse_json_text), since a JSON parser
// silently keeps only one.
Json parse_header(const std::string& text, const std::function<void(const std::string&)>& bad) {
  struct TooDeep {};
  const Json::parser_callback_t depth_check = [](int depth, Json::parse_event_t event, Json&) {
    const bool opens = event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth > 2) throw TooDeep{};
    return true;
  };
  Json header;
  try {
    header = util::parse_json_text(text, depth_check);
  } catch (const TooDeep&) {
    bad("it nests values deeper than a tensor's shape list");
  } catch (const util::JsonTextError& e) {
    bad(std::string("its header: ") + e.what());
  }
  if (!header.is_object()) bad("the header is not a JSON object");
  return header;
}

uint64_t byte_size(const torch::Tensor& t) { return static_cast<uint64_t>(t.numel()) * t.element_size(); }

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  save_safetensors(*local_file_system(), path, tensors, metadata);
}

TensorFile load_safetensors(const std::string& path) { return load_safetensors(*local_file_system(), path); }

void save_safetensors(FileSystem& fs, const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  TORCH_CHECK(host_is_little_endian(), "safetensors: this host is big-endian; paisoar writes little-endian only");
  for (const char* reserved : {kDataCrcKey, kHeaderCrcKey}) {
    TORCH_CHECK(metadata.count(reserved) == 0, "safetensors: metadata key '", reserved,
                "' is reserved for paisoar's integrity check; rename it (writing '", path, "')");
  }
  // Contiguous CPU copies, in the layout order: element size descending, then name.
  std::vector<std::pair<std::string, torch::Tensor>> layout;
  for (const auto& [name, tensor] : tensors) {
    TORCH_CHECK(tensor.defined(), "safetensors: tensor '", name, "' is undefined; drop it or give it a value");
    dtype_name(tensor.scalar_type(), name);
    layout.emplace_back(name, tensor.detach().to(torch::kCPU).contiguous());
  }
  std::stable_sort(layout.begin(), layout.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });

  Json header = Json::object();
  header["__metadata__"] = Json::object();
  for (const auto& [key, value] : metadata) header["__metadata__"][key] = value;
  uint64_t offset = 0;
  uint32_t crc = static_cast<uint32_t>(::crc32(0, nullptr, 0));
  for (const auto& [name, t] : layout) {
    const uint64_t size = byte_size(t);
    header[name] = {{"dtype", dtype_name(t.scalar_type(), name)},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + size}}};
    if (size > 0) crc = crc_update(crc, t.data_ptr(), size);
    offset += size;
  }
  header["__metadata__"][kHeaderCrcKey] = hex32(header_crc(header));
  header["__metadata__"][kDataCrcKey] = hex32(crc);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  uint64_t n = text.size();
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
  try {
    auto file = fs.create_atomically(path);
    file->append(length, sizeof length);
    file->append(text);
    for (const auto& [name, t] : layout) {
      if (t.numel() > 0) file->append(t.data_ptr(), byte_size(t));
    }
    file->commit();
  } catch (const c10::Error& e) {  // the file system's, naming the path
    TORCH_CHECK(false, "safetensors: ", e.what_without_backtrace());
  }
}

TensorFile load_safetensors(FileSystem& fs, const std::string& path) {
  TORCH_CHECK(host_is_little_endian(), "safetensors: this host is big-endian; paisoar reads little-endian only");
  const auto in = fs.open(path, "safetensors file");  // a FIFO or device is refused, never waited on
  const uint64_t file_size = in->size();
  auto bad = [&path](const std::string& why) {
    TORCH_CHECK(false, "safetensors: '", path, "' is not a valid safetensors file: ", why,
                "; it is damaged or was not fully written, use another copy");
  };
  if (file_size < 8) bad("it holds " + std::to_string(file_size) + " bytes, fewer than the 8-byte header length");
  unsigned char length[8];
  if (!read_exactly(*in, length, 8)) bad("reading the header length failed");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(length[i]) << (8 * i);
  if (n > kMaxHeaderBytes || n > file_size - 8) {
    bad("the header length is " + std::to_string(n) + " bytes but the file holds " + std::to_string(file_size));
  }
  std::string text(n, '\0');
  if (!read_exactly(*in, text.data(), n)) bad("reading the header failed");

  const Json header = parse_header(text, bad);

  TensorFile result;
  result.source = path;
  if (header.contains("__metadata__")) {
    const Json& meta = header["__metadata__"];
    if (!meta.is_object()) bad("\"__metadata__\" is not an object");
    for (const auto& [key, value] : meta.items()) {
      if (!value.is_string()) bad("metadata " + util::shown(key) + " is not a string");
      result.metadata[key] = value.get<std::string>();
    }
  }
  const auto header_crc_it = result.metadata.find(kHeaderCrcKey);
  if (header_crc_it != result.metadata.end() && header_crc_it->second != hex32(header_crc(header))) {
    bad("the header's CRC-32 does not match (" + header_crc_it->second + " stored, " +
        hex32(header_crc(header)) + " computed)");
  }

  // Check the layout: byte ranges match shapes, tile the data section exactly.
  const uint64_t data_size = file_size - 8 - n;
  struct Entry {
    std::string name;
    torch::ScalarType type;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = "tensor " + util::shown(name);
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets")) {
      bad(what + " lacks dtype, shape or data_offsets");
    }
    Entry e{name, torch::kFloat32, {}, 0, 0};
    const Json& dtype = info["dtype"];
    const auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                    [&](const DtypeName& d) { return dtype.is_string() && dtype == d.name; });
    if (known == std::end(kDtypes)) bad(what + " has unsupported dtype " + dtype.dump());
    e.type = known->type;
    const Json& shape = info["shape"];
    const Json& offsets = info["data_offsets"];
    if (!shape.is_array()) bad(what + " has a shape that is not a list");
    if (shape.size() > kMaxDims) {
      bad(what + " has " + std::to_string(shape.size()) + " dimensions, more than " + std::to_string(kMaxDims));
    }
    uint64_t numel = 1;
    for (const Json& d : shape) {
      if (!d.is_number_unsigned()) bad(what + " has shape " + shape.dump() + " with a non-size entry");
      const uint64_t dim = d.get<uint64_t>();
      // Each size on its own, too: after a 0, numel no longer bounds the next one.
      if (dim > (uint64_t{1} << 60) || (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 / dim)) {
        bad(what + " is impossibly large (shape " + shape.dump() + ")");
      }
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      bad(what + " has data_offsets " + offsets.dump() + ", not [begin, end]");
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    const uint64_t expected = numel * c10::elementSize(e.type);
    if (e.end < e.begin || e.end - e.begin != expected) {
      bad(what + " has data_offsets " + offsets.dump() + " but its shape and dtype need " +
          std::to_string(expected) + " bytes");
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin != covered) bad("tensor " + util::shown(e.name) + " does not start where the previous one ends");
    covered = e.end;
  }
  if (covered > data_size) {
    bad("it is truncated: the header describes " + std::to_string(covered) + " data bytes, the file holds " +
        std::to_string(data_size));
  }
  if (covered < data_size) bad(std::to_string(data_size - covered) + " bytes follow the last tensor");

  uint32_t crc = static_cast<uint32_t>(::crc32(0, nullptr, 0));
  for (const Entry& e : entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.type));
    const uint64_t size = e.end - e.begin;
    if (size > 0) {
      if (!read_exactly(*in, t.data_ptr(), size)) bad("reading tensor " + util::shown(e.name) + " failed");
      crc = crc_update(crc, t.data_ptr(), size);
    }
    result.tensors[e.name] = std::move(t);
  }
  const auto data_crc_it = result.metadata.find(kDataCrcKey);
  if (data_crc_it != result.metadata.end() && data_crc_it->second != hex32(crc)) {
    bad("the CRC-32 of its data is " + hex32(crc) + ", the header says " + data_crc_it->second);
  }
  return result;
}

}  // namespace paisoar::format
