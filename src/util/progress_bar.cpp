// ProgressBar: advance() adds to an atomic count and only takes the mutex
// when a redraw is due (Line: 100 ms since the last; Plain: a new 10% step).
#include "src/util/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace paisoar::util {
namespace {

constexpr int kBarWidth = 30;
constexpr int64_t kRedrawNs = 100'000'000;

bool is_terminal(const std::ostream& out) {
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) != 0;
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  return false;
}

}  // namespace

double ProgressBar::steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::ostream& out, Style style, Clock clock)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      line_(style == Style::Line || (style == Style::Auto && is_terminal(out))),
      clock_(clock ? std::move(clock) : Clock(steady_now_s)),
      start_s_(clock_()) {}

ProgressBar::~ProgressBar() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (line_ && drawn_ && !finished_) out_ << "\n" << std::flush;
}

void ProgressBar::advance(int64_t n) {
  const int64_t done = done_.fetch_add(n) + n;
  if (line_) {
    const auto now = static_cast<int64_t>(elapsed_s() * 1e9);
    int64_t due = next_draw_ns_.load();
    if (now < due || !next_draw_ns_.compare_exchange_strong(due, now + kRedrawNs)) return;
  } else {
    if (total_ <= 0) return;
    int64_t decile = next_decile_.load();
    if (done * 10 < decile * total_) return;
    const int64_t reached = std::min<int64_t>(done * 10 / total_, 10);
    if (!next_decile_.compare_exchange_strong(decile, reached + 1)) return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!finished_) draw(done_.load(), false);
}

void ProgressBar::set_status(std::string status) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = std::move(status);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  draw(done_.load(), true);
  finished_ = true;
}

void ProgressBar::draw(int64_t done, bool final) {
  const double elapsed = elapsed_s();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  std::string text = label_;
  if (line_) {
    if (total_ > 0) {
      const int64_t filled = std::min<int64_t>(kBarWidth, done * kBarWidth / total_);
      text += " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
      text += std::to_string(done) + "/" + std::to_string(total_);
    } else {
      text += " " + std::to_string(done);
    }
    text += " " + format_rate(rate);
    if (final) {
      text += " in " + format_duration(elapsed);
    } else if (total_ > 0 && rate > 0 && done < total_) {
      text += " ETA " + format_duration((total_ - done) / rate);
    }
    if (!status_.empty()) text += "  " + status_;
    out_ << "\r" << text << "\033[K" << (final ? "\n" : "") << std::flush;
  } else {
    text += ": " + std::to_string(done);
    if (total_ > 0) text += "/" + std::to_string(total_) + " (" + std::to_string(done * 100 / total_) + "%)";
    text += final ? " done in " + format_duration(elapsed) + ", " + format_rate(rate) : ", " + format_rate(rate);
    if (!status_.empty()) text += ", " + status_;
    out_ << text << "\n" << std::flush;
  }
  drawn_ = true;
}

std::string ProgressBar::format_rate(double per_second) {
  char s[32];
  if (per_second >= 1e6) {
    std::snprintf(s, sizeof(s), "%.1fM/s", per_second / 1e6);
  } else if (per_second >= 1e3) {
    std::snprintf(s, sizeof(s), "%.1fk/s", per_second / 1e3);
  } else {
    std::snprintf(s, sizeof(s), "%.0f/s", per_second);
  }
  return s;
}

std::string ProgressBar::format_duration(double seconds) {
  const auto total = static_cast<int64_t>(seconds + 0.5);
  const int64_t h = total / 3600, m = total / 60 % 60, sec = total % 60;
  char s[32];
  if (h > 0) {
    std::snprintf(s, sizeof(s), "%lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(sec));
  } else {
    std::snprintf(s, sizeof(s), "%lld:%02lld", static_cast<long long>(m), static_cast<long long>(sec));
  }
  return s;
}

}  // namespace paisoar::util
