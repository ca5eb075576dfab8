// IDX reading (plain or gzipped, through MaybeGzipReader) and writing
// (through zlib's gz* functions). Format: 0, 0, type code, rank, then rank big-endian
// uint32 dimensions, then the big-endian elements.
#include "paisoar/data/idx.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "src/util/maybe_gzip_reader.h"

namespace paisoar::data {
namespace {

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  C10_THROW_ERROR(Error, "IDX file '" + path + "': " + what);
}

c10::ScalarType type_of(uint8_t code, const std::string& path) {
  switch (code) {
    case 0x08: return torch::kUInt8;
    case 0x09: return torch::kInt8;
    case 0x0B: return torch::kInt16;
    case 0x0C: return torch::kInt32;
    case 0x0D: return torch::kFloat32;
    case 0x0E: return torch::kFloat64;
  }
  fail(path, "unknown element type code " + std::to_string(code));
}

uint8_t code_of(c10::ScalarType type, const std::string& path) {
  switch (type) {
    case torch::kUInt8: return 0x08;
    case torch::kInt8: return 0x09;
    case torch::kInt16: return 0x0B;
    case torch::kInt32: return 0x0C;
    case torch::kFloat32: return 0x0D;
    case torch::kFloat64: return 0x0E;
    default: break;
  }
  fail(path, std::string("IDX cannot hold dtype ") + c10::toString(type) +
                 ": use uint8, int8, int16, int32, float32 or float64");
}

// IDX is big-endian; swap each element in place on this little-endian host.
void swap_bytes(char* data, int64_t count, int64_t width) {
  if (width == 1) return;
  for (int64_t i = 0; i < count; ++i) {
    char* e = data + i * width;
    for (int64_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(e[a], e[b]);
  }
}

void read_exact(util::MaybeGzipReader& in, void* out, int64_t bytes, const std::string& path, const char* what) {
  if (!in.read(out, static_cast<uint64_t>(bytes))) fail(path, std::string("truncated or corrupt while reading ") + what);
}

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  util::MaybeGzipReader in(path, "IDX file");
  const uint64_t file_bytes = in.file_bytes();
  uint8_t magic[4];
  read_exact(in, magic, 4, path, "the header");
  if (magic[0] != 0 || magic[1] != 0) fail(path, "not an IDX file (bad magic number)");
  const auto type = type_of(magic[2], path);
  std::vector<int64_t> dims(magic[3]);
  for (auto& d : dims) {
    uint8_t b[4];
    read_exact(in, b, 4, path, "the dimensions");
    d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
  }
  // Refuse absurd headers before allocating: 2^40 elements is far beyond any
  // IDX file. A 0 empties the tensor, but the other sizes still make its
  // strides, so they are bounded too.
  int64_t numel = 1, extent = 1;
  for (auto d : dims) {
    const int64_t nonzero = std::max<int64_t>(d, 1);
    if (extent > (int64_t{1} << 40) / nonzero) {
      fail(path, "its header announces dimensions of over 2^40 elements in all (damaged header?)");
    }
    extent *= nonzero;
    numel *= d;
  }
  // And check the claim against the file before allocating for it: a plain
  // file must hold exactly the header and the data; deflate expands at most
  // 1032:1, which bounds what a gzipped file can hold.
  const int64_t width = static_cast<int64_t>(c10::elementSize(type));
  const uint64_t data_bytes = static_cast<uint64_t>(numel) * static_cast<uint64_t>(width);
  const uint64_t header_bytes = 4 + 4 * dims.size();
  {
    const std::string announced = "its header announces " + std::to_string(data_bytes) + " bytes of data but ";
    if (!in.gzipped()) {
      if (header_bytes + data_bytes > file_bytes) {
        fail(path, "truncated or corrupt while reading the data: " + announced + "the file holds " +
                       std::to_string(file_bytes) + " bytes in all");
      }
      if (header_bytes + data_bytes < file_bytes) fail(path, "has bytes after the data its header announces");
    } else if (data_bytes / 1032 > file_bytes) {
      fail(path, announced + "a gzip file of " + std::to_string(file_bytes) +
                     " bytes cannot hold that much (damaged header?)");
    }
  }
  torch::Tensor out = torch::empty(dims, torch::TensorOptions().dtype(type));
  read_exact(in, out.data_ptr(), out.numel() * width, path, "the data");
  if (!in.at_end()) fail(path, "has bytes after the data its header announces");
  swap_bytes(static_cast<char*>(out.data_ptr()), out.numel(), width);
  return out;
}

void write_idx(const std::string& path, const torch::Tensor& tensor) {
  const uint8_t code = code_of(tensor.scalar_type(), path);
  if (tensor.dim() > 255) fail(path, "more than 255 dimensions");
  torch::Tensor data = tensor.cpu().contiguous().clone();
  swap_bytes(static_cast<char*>(data.data_ptr()), data.numel(), data.element_size());
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  // Unique per process and call, so concurrent writers never share it.
  static std::atomic<int> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    GzFile f(gzopen(tmp.c_str(), gz ? "wb6" : "wbT"));
    if (!f) fail(path, "cannot create '" + tmp + "'");
    std::vector<uint8_t> header = {0, 0, code, static_cast<uint8_t>(tensor.dim())};
    for (auto d : tensor.sizes()) {
      for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<uint8_t>(d >> shift));
    }
    const int64_t bytes = data.numel() * data.element_size();
    bool ok = gzwrite(f.get(), header.data(), static_cast<unsigned>(header.size())) ==
              static_cast<int>(header.size());
    const auto* p = static_cast<const char*>(data.data_ptr());
    for (int64_t done = 0; ok && done < bytes;) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(bytes - done, 1 << 30));
      ok = gzwrite(f.get(), p + done, chunk) == static_cast<int>(chunk);
      done += chunk;
    }
    ok = gzclose(f.release()) == Z_OK && ok;
    if (!ok) {
      std::remove(tmp.c_str());
      fail(path, "writing failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail(path, "cannot move the finished file into place");
  }
}

}  // namespace paisoar::data
