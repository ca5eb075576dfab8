// libFuzzer target: a run's metrics.jsonl through all of `paisoar report
// RUN_DIR` (write_report): fuzz_metrics' reading and layout, and the PNG's
// rasteriser, which must clip whatever coordinates the values lead to.
#include "paisoar/report/run_report_page.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = fuzz::scratch().path();
  testing::write_file_bytes(dir + "/metrics.jsonl", fuzz::bytes_of(data, size));
  report::ReportOptions options;
  options.html_path = dir + "/report.html";
  fuzz::reads_or_refuses<c10::Error>([&] { report::write_report({dir}, options); }, {dir});
  return 0;
}
