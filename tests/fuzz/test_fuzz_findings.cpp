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
#include "src/report/run_history.h"
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

// A run_start's "world_size" of 1e87 went to json::value<int>, converting a
// double past int's range (undefined behaviour, found by fuzz_metrics under
// UBSan); a "step" past 2^63 became a negative step. Both records are now
// skipped as fields of the wrong type, and the report reads the rest.
TEST(FuzzFindings, MetricsWithAWorldSizePastIntAreSkippedWithAWarning) {
  const report::RunHistory run = report::read_run(finding("metrics/world-size-past-int"));
  EXPECT_TRUE(run.starts.empty());
  ASSERT_EQ(run.steps.size(), 1u);
  EXPECT_EQ(run.steps[0]["step"].get<int64_t>(), 1);
  std::string warnings;
  for (const auto& w : run.warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("metrics.jsonl:1: a record with a field of the wrong type was skipped (\"world_size\""),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("2 records with fields of the wrong type were skipped"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace paisoar::testing
