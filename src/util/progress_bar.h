// ProgressBar: how far a long job (a conversion, an epoch) has got. On a
// terminal, one line redrawn in place at most ~10 times a second:
//   convert [#########.....................] 18000/60000 21.3k/s ETA 0:02
// Elsewhere (a log file, a pipe), a plain line at every 10% and one at the end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>

namespace paisoar::util {

class ProgressBar {
 public:
  enum class Style {
    Auto,   // Line when `out` is std::cerr/std::cout and that stream is a terminal, else Plain
    Line,   // redrawn with '\r'
    Plain,  // a line per 10%
  };

  // Seconds on a monotonic clock; called from every thread that advances the
  // bar, so it must be thread-safe. Tests inject a fake one.
  using Clock = std::function<double()>;
  // std::chrono::steady_clock in seconds: the default.
  static double steady_now_s();

  // `total` <= 0: unknown; counts and rates are shown without bar or ETA.
  // `out` must outlive the bar. `clock` empty: steady_now_s.
  ProgressBar(std::string label, int64_t total, std::ostream& out = std::cerr, Style style = Style::Auto,
              Clock clock = {});
  ~ProgressBar();  // without finish(): ends a redrawn line, prints no summary
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Thread-safe; cheap when no redraw is due (one atomic add and a clock read).
  void advance(int64_t n = 1);
  // Text drawn after the rate from the next redraw on (a training loss, say).
  // Thread-safe.
  void set_status(std::string status);
  // Draws the final state with the time taken and the mean rate.
  // Idempotent; advance() after it does nothing.
  void finish();

  int64_t count() const { return done_.load(); }

  // "2.1k/s"-style rate, "1:05"/"1:02:03" durations: for tests and other output.
  static std::string format_rate(double per_second);
  static std::string format_duration(double seconds);

 private:
  void draw(int64_t done, bool final);  // REQUIRES: mutex_ held
  double elapsed_s() const { return clock_() - start_s_; }

  const std::string label_;
  const int64_t total_;
  std::ostream& out_;
  const bool line_;
  const Clock clock_;
  const double start_s_;
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> next_draw_ns_{0};  // Line: earliest next redraw, in ns since the start
  std::atomic<int64_t> next_decile_{1};   // Plain: the next 10% step to print
  std::mutex mutex_;                      // guards out_ and the fields below
  bool finished_ = false;
  bool drawn_ = false;
  std::string status_;
};

}  // namespace paisoar::util
