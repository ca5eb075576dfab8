// What the libFuzzer targets (tests/fuzz/targets, scripts/fuzz.sh) found, kept
// as tests: each input they crashed, hung or blew up on is a file under
// tests/fuzz/findings/<reader>/, read here by the reader that failed on it,
// which must now refuse it with an error naming the file and what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "paisoar/data/data_error.h"
#include "paisoar/data/idx.h"
#include "paisoar/data/record_shards.h"
#include "paisoar/train/train_config.h"
#include "tests/support/expect_error.h"

namespace paisoar::testing {
namespace {

std::string finding(const std::string& name) { return std::string(PAISOAR_FUZZ_FINDINGS_DIR) + "/" + name; }

// A 0 among an IDX header's dimensions made the size check skip the others;
// four-billion-sized ones then overflowed torch::empty's stride computation
// ("Stride calculation overflowed", no file named), plain and gzipped.
TEST(FuzzFindings, IdxWithAZeroAndHugeDimensionsIsRefusedNamingTheFile) {
  for (const char* name : {"idx/zero-then-huge-dims.idx", "idx/zero-then-huge-dims.idx.gz"}) {
    expect_error([&] { data::read_idx(finding(name)); }, {name, "dimensions", "2^40"});
  }
}

// YAML's complex keys (`? me: fashion_cnn`, a mapping as a key) reached
// yaml-cpp's as<std::string>() and escaped as its TypedBadConversion ("bad
// conversion", no file named). Fixed on main before the fuzzer's input was
// replayed there; kept so that it stays fixed.
TEST(FuzzFindings, AConfigKeyThatIsAMappingIsRefusedNamingTheFileAndSection) {
  expect_error([] { train::load_config(finding("config/mapping-as-key.yaml")); },
               {"mapping-as-key.yaml:2", "a key must be a name", "section 'model'"});
}

// yaml-cpp's LoadAll, used for a while to find a second document, loops
// forever on this text (3.6 GB in a minute, found by fuzz_config): the config
// reader now asks the parser for at most two documents.
TEST(FuzzFindings, AConfigOnWhichYamlCppsLoadAllNeverEndsIsRefused) {
  expect_error_of<train::ConfigError>([] { train::load_config(finding("config/loadall-never-ends.yaml")); },
                                      {"loadall-never-ends.yaml", "more than one YAML document"});
}

// A number past double's range ("7777777777777e477") makes nlohmann's parser
// throw out_of_range, not parse_error: it escaped the manifest reader's
// handling as a raw "[json.exception.out_of_range.406]".
TEST(FuzzFindings, AManifestWithANumberPastDoublesRangeIsRefusedNamingTheFile) {
  expect_error_of<data::DataError>([] { data::read_manifest(finding("shard_manifest/number-overflow")); },
                                   {"number-overflow/dataset.json", "malformed", "not valid JSON",
                                    "number overflow"});
  try {
    data::read_manifest(finding("shard_manifest/number-overflow"));
  } catch (const data::DataError& e) {
    EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paisoar::testing
