// What the libFuzzer targets (tests/fuzz/targets, scripts/fuzz.sh) found, kept
// as tests: each input they crashed, hung or blew up on is a file under
// tests/fuzz/findings/<reader>/, read here by the reader that failed on it,
// which must now refuse it with an error naming the file and what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "paisoar/data/idx.h"
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

}  // namespace
}  // namespace paisoar::testing
