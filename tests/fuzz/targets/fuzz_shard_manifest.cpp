// libFuzzer target: a record-shard data set's manifest, dataset.json
// (read_manifest), as the shard data set opens it.
#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch() / "dataset.json";
  testing::write_file_bytes(path, fuzz::bytes_of(data, size));
  fuzz::reads_or_refuses<data::DataError>([&] { data::read_manifest(fuzz::scratch().path()); }, {path});
  return 0;
}
