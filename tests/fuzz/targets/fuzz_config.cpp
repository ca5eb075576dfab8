// libFuzzer target: the training config, as `paisoar train --config FILE
// --set K=V ...` reads it (load_config, then validate), and --print-config's
// output, which must load back to the same config. The input is the YAML file;
// each NUL byte in it starts one `--set` assignment.
#include <string>
#include <vector>

#include "paisoar/train/train_config.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::bytes_of(data, size);
  const size_t nul = input.find('\0');
  std::vector<std::string> sets;
  for (size_t at = nul; at != std::string::npos;) {
    const size_t next = input.find('\0', at + 1);
    sets.push_back(input.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next;
  }
  const std::string path = fuzz::scratch() / "config.yaml";
  testing::write_file_bytes(path, input.substr(0, nul));

  train::TrainConfig config;
  if (!fuzz::reads_or_refuses<train::ConfigError>([&] { config = train::load_config(path, sets); },
                                                   {path, "--set"})) {
    return 0;
  }
  for (int64_t world : {1, 4}) {
    fuzz::reads_or_refuses<train::ConfigError>([&] { train::validate(config, world); }, {});
  }
  // What --print-config prints is a config file giving the same config.
  const std::string printed = train::dump_config(config);
  const std::string again_path = fuzz::scratch() / "printed.yaml";
  testing::write_file_bytes(again_path, printed);
  train::TrainConfig again;
  try {
    again = train::load_config(again_path);
  } catch (const std::exception& e) {
    fuzz::finding("--print-config's output does not load back (" + error_text(e) + "):\n" + printed);
  }
  if (train::dump_config(again) != printed) {
    fuzz::finding("--print-config's output loads as another config:\n" + printed + "---- loads as\n" +
                  train::dump_config(again));
  }
  return 0;
}
