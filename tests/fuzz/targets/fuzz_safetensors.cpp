// libFuzzer target: safetensors files (load_safetensors), as checkpoint
// loading and `paisoar zero-consolidate` read them.
#include "paisoar/format/safetensors.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch() / "input.safetensors";
  testing::write_file_bytes(path, fuzz::bytes_of(data, size));
  fuzz::reads_or_refuses<c10::Error>([&] { format::load_safetensors(path); }, {path});
  return 0;
}
