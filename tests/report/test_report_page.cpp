// paisoar report end to end: a short Trainer run on 2 thread-ranks logs
// per-rank figures and the step phases; its report page opens in headless
// Chromium with no console message and a screenshot that is not blank, and
// its PNG has the plots; the same for a killed-and-resumed run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "paisoar/report/run_report_page.h"
#include "tests/support/python.h"
#include "tests/train/train_support.h"

namespace paisoar::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<nlohmann::json> records(const std::string& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto r = nlohmann::json::parse(line, nullptr, false);
    if (!r.is_discarded()) out.push_back(r);
  }
  return out;
}

train::TrainConfig report_config(const std::string& suffix, int64_t epochs) {
  auto c = small_config();
  c.run_dir += suffix;
  fs::remove_all(c.run_dir);
  c.train.epochs = epochs;  // 10 steps each on 2 ranks
  c.train.log_every = 2;
  c.eval.every_steps = 4;
  return c;
}

const std::string kPeer = std::string(PAISOAR_REPORT_TEST_DIR) + "/chromium_peer.py";

// What Chromium shows of `html`: no console message, a screenshot with plots on it.
void expect_seen_in_chromium(const std::string& html) {
  const std::string shot = html + ".screenshot.png";
  const auto seen = nlohmann::json::parse(run_python(kPeer + " " + html + " " + shot));
  EXPECT_TRUE(seen["console"].empty()) << seen["console"].dump();
  EXPECT_GT(seen["not_background"].get<double>(), 0.05) << seen.dump();
  EXPECT_GT(seen["colours"].get<int>(), 20) << seen.dump();
}

TEST(ReportPage, ARunsPageOpensInChromiumWithItsPlots) {
  const auto c = report_config("_report", 2);
  train_with(c, 2);

  // What the Trainer logged for the report: every rank's figures and the phases.
  int logged = 0;
  for (const auto& r : records(c.run_dir)) {
    if (r.value("event", "") == "run_start") {
      EXPECT_EQ(r["world_size"], 2);
      EXPECT_NE(r["config"].get<std::string>().find("log_every: 2"), std::string::npos);
    }
    if (!r.contains("loss")) continue;
    ++logged;
    ASSERT_TRUE(r.contains("ranks")) << r.dump();
    ASSERT_EQ(r["ranks"]["step_ms"].size(), 2u);
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_GT(r["ranks"]["step_ms"][rank].get<double>(), 0);
      EXPECT_LE(r["ranks"]["busy_ms"][rank].get<double>(), r["ranks"]["step_ms"][rank].get<double>());
      EXPECT_GT(r["ranks"]["resident_mb"][rank].get<double>(), 1);
    }
    EXPECT_GT(r["phases_ms"]["forward"].get<double>(), 0);
    EXPECT_GT(r["phases_ms"]["backward"].get<double>(), 0);
    EXPECT_GT(r["grad_norm"].get<double>(), 0) << "measured at logged steps without clipping";
  }
  EXPECT_EQ(logged, 10);  // steps 2, 4, ..., 20

  const auto files = report::write_report({c.run_dir});
  EXPECT_EQ(files.html, c.run_dir + "/report.html");
  EXPECT_TRUE(files.warnings.empty());
  const std::string page = read_text(files.html);
  for (const char* title : {"Training loss", "Test accuracy", "Throughput", "Step time breakdown", "Learning rate",
                            "Per-rank step time", "Resident memory per rank", "Gradient norm"}) {
    EXPECT_NE(page.find(title), std::string::npos) << title;
  }
  EXPECT_EQ(page.find("<script"), std::string::npos);
  const bool advice_shown = page.find("class=\"finding\"") != std::string::npos;
  const bool nothing_found = page.find("The profiler found nothing to change") != std::string::npos;
  EXPECT_NE(advice_shown, nothing_found) << "the page says what the profiler found, or that it found nothing";
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg")) << "nothing is fetched";

  const auto png = nlohmann::json::parse(run_python(kPeer + " --png " + files.png));
  EXPECT_EQ(png["width"], 1280);
  EXPECT_GT(png["not_background"].get<double>(), 0.05) << png.dump();
  EXPECT_GT(png["colours"].get<int>(), 10);
  expect_seen_in_chromium(files.html);
  fs::remove_all(c.run_dir);
}

TEST(ReportPage, AKilledAndResumedRunIsOneCurveWithWarnings) {
  auto c = report_config("_report_resumed", 1);
  c.checkpoint.every_steps = 2;
  c.checkpoint.resume = true;  // nothing to resume yet: the same config for both runs
  train_with(c, 2);
  // As if killed while writing the evaluation after step 8, with checkpoints up to step 6 on disk.
  for (const char* step : {"step-000000000010", "step-000000000008"}) {
    for (const auto& e : fs::directory_iterator(c.run_dir + "/checkpoints")) {
      if (e.path().filename().string().rfind(step, 0) == 0) fs::remove_all(e.path());
    }
  }
  std::string kept;
  {
    std::ifstream in(c.run_dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"accuracy\"") != std::string::npos && line.find("\"step\":8,") != std::string::npos) {
        kept += line.substr(0, line.size() / 2);
        break;
      }
      kept += line + "\n";
    }
  }
  ASSERT_NE(kept.back(), '\n') << "no evaluation at step 8 to cut";
  std::ofstream(c.run_dir + "/metrics.jsonl", std::ios::trunc) << kept;

  train_with(c, 2);

  const auto files = report::write_report({c.run_dir});
  ASSERT_EQ(files.warnings.size(), 2u) << files.warnings[files.warnings.size() - 1];
  EXPECT_NE(files.warnings[0].find("a torn or unreadable line was skipped"), std::string::npos) << files.warnings[0];
  EXPECT_NE(files.warnings[1].find("resumed at step 6; 1 earlier records"), std::string::npos) << files.warnings[1];
  const std::string page = read_text(files.html);
  EXPECT_NE(page.find("resumed at step 6"), std::string::npos) << "the page shows the warnings";
  expect_seen_in_chromium(files.html);

  // Two runs side by side: one legend entry per run.
  auto other = report_config("_report_other", 1);
  train_with(other, 2);
  const auto both = report::write_report({c.run_dir, other.run_dir}, {other.run_dir + "/both.html", ""});
  EXPECT_EQ(both.png, other.run_dir + "/both.png");
  const std::string together = read_text(both.html);
  EXPECT_NE(together.find(fs::path(c.run_dir).filename().string()), std::string::npos);
  EXPECT_NE(together.find("Step time breakdown: " + fs::path(other.run_dir).filename().string()), std::string::npos);
  expect_seen_in_chromium(both.html);
  fs::remove_all(c.run_dir);
  fs::remove_all(other.run_dir);
}

TEST(ReportPage, NoRunIsAnError) {
  EXPECT_THROW(report::write_report({}), c10::ValueError);
}

}  // namespace
}  // namespace paisoar::testing
