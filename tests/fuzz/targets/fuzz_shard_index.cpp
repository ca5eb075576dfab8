// libFuzzer target: one record shard, its `.tar.idx` index and its tar, as
// ShardReader opens it and reads every record. The input is the index text,
// a NUL byte, then the tar's bytes.
#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::bytes_of(data, size);
  const size_t nul = input.find('\0');
  const std::string tar = fuzz::scratch() / "shard-000000.tar";
  testing::write_file_bytes(tar + ".idx", input.substr(0, nul));
  testing::write_file_bytes(tar, nul == std::string::npos ? "" : input.substr(nul + 1));
  fuzz::reads_or_refuses<data::DataError>(
      [&] {
        const data::ShardReader reader(tar);
        for (int64_t i = 0; i < reader.size(); ++i) {
          if (reader.read(i).size() != reader.entry(i).size) fuzz::finding("a record's payload has the wrong size");
        }
      },
      {tar});
  return 0;
}
