// The process's resident memory as Linux reports it in /proc/self/status, for
// benchmarks that measure each run's peak in a fresh process: VmRSS (now) and
// VmHWM (the peak), and resetting the peak.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

namespace paisoar::bench {

// A field of /proc/self/status in KiB (VmRSS: current RSS, VmHWM: its peak).
inline int64_t proc_status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) return std::stoll(line.substr(field.size() + 1));
  }
  throw std::runtime_error("no " + field + " in /proc/self/status (is /proc mounted?)");
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false where not allowed.
inline bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

}  // namespace paisoar::bench
