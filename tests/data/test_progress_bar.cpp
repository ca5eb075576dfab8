// ProgressBar: exactly one plain line per 10% however many threads advance it,
// a redrawn terminal line with bar, counts, rate and ETA, and the number formats.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <sstream>
#include <thread>
#include <vector>

#include "src/util/progress_bar.h"

using paisoar::util::ProgressBar;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ProgressBar, PlainPrintsEachTenthOnceFromManyThreads) {
  std::ostringstream out;
  {
    ProgressBar bar("convert", 1000, out, ProgressBar::Style::Plain, [] { return 5.0; });  // no time passes
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 250; ++i) bar.advance();
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(bar.count(), 1000);
    bar.finish();
    bar.finish();  // idempotent
    bar.advance();  // ignored after finish
  }
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 11u) << out.str();
  int last_percent = 0;
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(lines[i].rfind("convert: ", 0), 0u) << lines[i];
    const auto open = lines[i].find('('), pct = lines[i].find("%)");
    ASSERT_NE(pct, std::string::npos) << lines[i];
    const int percent = std::stoi(lines[i].substr(open + 1, pct - open - 1));
    EXPECT_GE(percent, static_cast<int>(10 * (i + 1))) << lines[i];
    EXPECT_GE(percent, last_percent);
    last_percent = percent;
  }
  EXPECT_NE(lines[10].find("1000/1000 (100%) done in 0:00"), std::string::npos) << lines[10];
}

TEST(ProgressBar, PlainWithUnknownTotalPrintsOnlyTheSummary) {
  std::ostringstream out;
  ProgressBar bar("scan", 0, out, ProgressBar::Style::Plain);
  bar.advance(5);
  bar.advance(7);
  EXPECT_EQ(out.str(), "");
  bar.finish();
  EXPECT_EQ(out.str().rfind("scan: 12 done in", 0), 0u) << out.str();
}

// A fake clock: 1000 advances within 99 ms redraw nothing, the next one 1 ms
// later does; the rate and ETA follow the clock (18000 in 10 s: 1.8k/s, 42000 left: 0:23).
TEST(ProgressBar, LineRedrawsInPlaceAtMostTenTimesASecond) {
  std::ostringstream out;
  std::atomic<double> now_s{1000.0};
  ProgressBar bar("train", 60000, out, ProgressBar::Style::Line, [&] { return now_s.load(); });
  bar.advance(1);  // the first advance draws
  for (int i = 0; i < 1000; ++i) {
    now_s = 1000.0 + 0.099 * (i + 1) / 1000;
    bar.advance(1);  // within 100 ms of the first draw: no redraw
  }
  const std::string first = out.str();
  EXPECT_EQ(std::count(first.begin(), first.end(), '\r'), 1) << first;
  now_s = 1010.0;
  bar.advance(18000 - 1001);  // 18000 = 30%: 9 of 30 cells
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2) << text;
  EXPECT_NE(text.find("\rtrain [#########.....................] 18000/60000 1.8k/s ETA 0:23\033[K"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);
  now_s = 1020.0;
  bar.finish();
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_NE(out.str().find("18000/60000 900/s in 0:20\033[K\n"), std::string::npos) << out.str();
}

TEST(ProgressBar, LineEndsTheLineWhenDroppedUnfinished) {
  std::ostringstream out;
  {
    ProgressBar bar("x", 10, out, ProgressBar::Style::Line);
    bar.advance(3);
  }
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_EQ(out.str().find(" in "), std::string::npos);  // no summary for a job that did not finish
}

TEST(ProgressBar, StatusFollowsTheRateFromTheNextDrawOn) {
  std::ostringstream out;
  // 1 ms passes at each clock read: a rate (hence an ETA), and 0:00 in all.
  ProgressBar bar("epoch 0", 4, out, ProgressBar::Style::Line, [t = 0.0]() mutable { return t += 0.001; });
  bar.set_status("loss 0.4321");
  bar.advance(1);
  EXPECT_NE(out.str().find("/s ETA "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("  loss 0.4321\033[K"), std::string::npos) << out.str();
  bar.set_status("loss 0.3000");
  bar.finish();
  EXPECT_NE(out.str().find(" in 0:00  loss 0.3000\033[K\n"), std::string::npos) << out.str();
}

TEST(ProgressBar, Formats) {
  EXPECT_EQ(ProgressBar::format_rate(950), "950/s");
  EXPECT_EQ(ProgressBar::format_rate(2100), "2.1k/s");
  EXPECT_EQ(ProgressBar::format_rate(3.21e6), "3.2M/s");
  EXPECT_EQ(ProgressBar::format_duration(12.2), "0:12");
  EXPECT_EQ(ProgressBar::format_duration(65), "1:05");
  EXPECT_EQ(ProgressBar::format_duration(3723), "1:02:03");
}

}  // namespace
