// write_report: read the runs, lay out the plots once, write the page and the
// PNG of the headline plots (a 2 x 2 grid under a title line) atomically.
#include "paisoar/report/run_report_page.h"

#include <c10/util/Exception.h>

#include <filesystem>

#include "paisoar/data/image_codec.h"
#include "src/report/canvas.h"
#include "src/report/html_page.h"
#include "src/report/raster.h"
#include "src/report/run_charts.h"
#include "src/util/atomic_file.h"
#include "src/util/output_path.h"

namespace paisoar::report {
namespace {

namespace fs = std::filesystem;

constexpr int kPngColumns = 2;
constexpr double kPngPlotWidth = 640, kPngPlotHeight = 380, kPngTitle = 36;

std::vector<uint8_t> headline_png(const std::vector<Plot>& plots, const std::string& title) {
  std::vector<const Plot*> headline;
  for (const auto& p : plots) {
    if (p.headline) headline.push_back(&p);
  }
  const int rows = std::max<int>(1, (static_cast<int>(headline.size()) + kPngColumns - 1) / kPngColumns);
  Canvas canvas(static_cast<int>(kPngColumns * kPngPlotWidth), static_cast<int>(kPngTitle + rows * kPngPlotHeight),
                Rgb{246, 247, 249});
  canvas.text({12, kPngTitle / 2}, title, Rgb{20, 20, 20}, 2);
  for (size_t i = 0; i < headline.size(); ++i) {
    const Point origin{(i % kPngColumns) * kPngPlotWidth, kPngTitle + (i / kPngColumns) * kPngPlotHeight};
    draw(lay_out(headline[i]->chart, kPngPlotWidth - 6, kPngPlotHeight - 6), canvas, {origin.x + 3, origin.y + 3});
  }
  return data::encode_png(canvas.image());
}

void write_whole(const std::string& path, const void* bytes, size_t size) {
  util::AtomicFile file(path);
  file.write(bytes, size);
  file.commit();
}

}  // namespace

ReportFiles write_report(const std::vector<std::string>& run_dirs, const ReportOptions& options) {
  if (run_dirs.empty()) {
    C10_THROW_ERROR(ValueError, "paisoar report: no run directory given; pass one or more run_dirs");
  }
  std::vector<RunHistory> runs;
  for (const auto& dir : run_dirs) runs.push_back(read_run(dir));

  ReportFiles files;
  files.html = options.html_path.empty() ? (fs::path(run_dirs.front()) / "report.html").string() : options.html_path;
  files.png = options.png_path.empty() ? fs::path(files.html).replace_extension(".png").string() : options.png_path;
  for (const auto& run : runs) files.warnings.insert(files.warnings.end(), run.warnings.begin(), run.warnings.end());
  std::vector<std::string> inputs;
  for (const auto& run : runs) {
    inputs.push_back((fs::path(run.dir) / "metrics.jsonl").string());
    for (const auto& trace : run.traces) inputs.push_back((fs::path(run.dir) / trace).string());
  }
  util::require_not_an_input(files.html, inputs, "paisoar report: --html");
  util::require_not_an_input(files.png, inputs, "paisoar report: --png");
  if (fs::weakly_canonical(files.png) == fs::weakly_canonical(files.html)) {
    C10_THROW_ERROR(ValueError, "paisoar report: --png and --html name the same file '" + files.png +
                                    "'; give the PNG another path (by default it is the page's, with .png)");
  }

  std::vector<Finding> unplaced;
  const std::vector<Plot> plots = plots_for(runs, unplaced);
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : ", ") + run.name;
  const std::vector<uint8_t> png = headline_png(plots, "paisoar report: " + names);

  const fs::path html_dir = fs::absolute(files.html).parent_path();
  const fs::path png_abs = fs::absolute(files.png);
  const std::string png_link =
      png_abs.parent_path() == html_dir ? png_abs.filename().string() : fs::relative(png_abs, html_dir).string();
  const std::string page = html_page(PageParts{runs, plots, unplaced, html_dir.string(), png_link});
  write_whole(files.png, png.data(), png.size());
  write_whole(files.html, page.data(), page.size());
  return files;
}

}  // namespace paisoar::report
