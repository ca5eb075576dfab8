// Test support: TempDir, a fresh directory (mkdtemp under $TMPDIR or /tmp)
// removed with everything in it when the object goes away, and
// fast_temp_parent(), where tests that rewrite a file thousands of times put it.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace paisoar::testing {

class TempDir {
 public:
  // Under `parent` if given, else the system temp directory.
  explicit TempDir(const std::string& tag = "test", const std::string& parent = "") {
    const std::filesystem::path root = parent.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(parent);
    std::string pattern = (root / ("paisoar_" + tag + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// /dev/shm when it is a writable directory (thousands of rewrites of one file
// are about 100 times slower on this machine's ext4 with `discard`), else ""
// (the system temp directory).
inline std::string fast_temp_parent() {
  return ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "";
}

}  // namespace paisoar::testing
