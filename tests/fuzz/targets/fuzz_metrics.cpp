// libFuzzer target: a run's metrics.jsonl as `paisoar report RUN_DIR` reads
// it and lays it out: read_run, the charts, the HTML page with its SVG. The
// PNG the command also draws is fuzz_report's (100 times slower a run).
#include "src/report/html_page.h"
#include "src/report/run_charts.h"
#include "src/report/run_history.h"
#include "tests/fuzz/targets/fuzz_support.h"

using namespace paisoar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = fuzz::scratch().path();
  testing::write_file_bytes(dir + "/metrics.jsonl", fuzz::bytes_of(data, size));
  fuzz::reads_or_refuses<c10::Error>(
      [&] {
        const std::vector<report::RunHistory> runs = {report::read_run(dir)};
        std::vector<report::Finding> unplaced;
        const std::vector<report::Plot> plots = report::plots_for(runs, unplaced);
        report::html_page({runs, plots, unplaced, dir, "report.png"});
      },
      {dir});
  return 0;
}
