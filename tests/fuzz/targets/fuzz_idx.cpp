// libFuzzer target: IDX files (read_idx), the input read as a plain file and,
// gzipped by the target, as a .gz file (the reader detects which).
#include <zlib.h>

#include <torch/torch.h>

#include "paisoar/data/idx.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

namespace {

void read(const std::string& path) {
  fuzz::reads_or_refuses<c10::Error>([&] { data::read_idx(path); }, {path});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string plain = fuzz::scratch() / "input.idx";
  testing::write_file_bytes(plain, fuzz::bytes_of(data, size));
  read(plain);

  const std::string gz = fuzz::scratch() / "input.idx.gz";
  gzFile f = gzopen(gz.c_str(), "wb1");
  if (f == nullptr || (size > 0 && gzwrite(f, data, static_cast<unsigned>(size)) != static_cast<int>(size)) ||
      gzclose(f) != Z_OK) {
    fuzz::finding("cannot write " + gz);
  }
  read(gz);
  return 0;
}
