// CheckpointManager: file naming, the directory's lock, pruning and
// newest-intact resume over
// format::save_safetensors/format::load_safetensors. Names are parsed strictly, so an
// AtomicFile temporary ("step-...safetensors.tmp.<pid>.<n>") is never taken
// for a checkpoint.
#include "paisoar/checkpoint/checkpoint_manager.h"

#include "paisoar/format/safetensors.h"
#include "src/util/atomic_file.h"

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace paisoar::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "step-";
constexpr const char* kSuffix = ".safetensors";

// "step-000000000042.safetensors" -> 42; anything else -> nullopt.
std::optional<int64_t> step_of(const std::string& name) {
  const size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
  if (name.size() <= prefix + suffix || name.compare(0, prefix, kPrefix) != 0 ||
      name.compare(name.size() - suffix, suffix, kSuffix) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix, name.size() - prefix - suffix);
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoll(digits);
}

bool is_leftover_temporary(const std::string& name) {
  const size_t at = name.find(std::string(kSuffix) + ".tmp.");
  return at != std::string::npos && step_of(name.substr(0, at + std::strlen(kSuffix))).has_value();
}

// An exclusive flock on <dir>/.paisoar-lock, holding this process's id for
// the message another job gets; released when the returned handle goes.
std::shared_ptr<const int> lock_directory(const std::string& dir) {
  const std::string path = dir + "/.paisoar-lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  TORCH_CHECK(fd >= 0, "CheckpointManager: cannot open '", path, "': ", std::strerror(errno),
              "; choose a checkpoint directory you can write to");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {0};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string pid(holder, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && !std::isdigit(static_cast<unsigned char>(pid.back()))) pid.pop_back();
    TORCH_CHECK(false, "CheckpointManager: checkpoint directory '", dir, "' is in use by another job (process ",
                pid.empty() ? std::string("?") : pid, " holds ", path,
                "); two runs writing one directory would overwrite each other's checkpoints: give this run its own "
                "checkpoint.dir (or run_dir), or stop the other");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // Only the message another job would print depends on it.
  }
  return std::shared_ptr<const int>(new int(fd), [](const int* held) {
    ::close(*held);  // drops the lock
    delete held;
  });
}

}  // namespace

CheckpointManager::CheckpointManager(CheckpointOptions options) : options_(std::move(options)) {
  TORCH_CHECK(!options_.dir.empty(), "CheckpointManager: options.dir is empty; give the checkpoint directory");
  if (options_.rank != 0) return;
  std::error_code error;
  fs::create_directories(options_.dir, error);
  TORCH_CHECK(!error, "CheckpointManager: cannot create checkpoint directory '", options_.dir, "': ",
              error.message(), "; choose a directory you can write to");
  try {
    util::AtomicFile probe(options_.dir + "/.paisoar-write-check");  // removed uncommitted
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "CheckpointManager: checkpoint directory '", options_.dir, "' is not writable (", e.what_without_backtrace(),
                ")");
  }
  lock_ = lock_directory(options_.dir);
  for (const auto& entry : fs::directory_iterator(options_.dir, error)) {
    if (is_leftover_temporary(entry.path().filename().string())) fs::remove(entry.path(), error);
  }
}

bool CheckpointManager::due(int64_t step) const {
  return options_.every_steps > 0 && step > 0 && step % options_.every_steps == 0;
}

std::string CheckpointManager::path_for(int64_t step) const {
  char name[64];
  std::snprintf(name, sizeof name, "%s%012lld%s", kPrefix, static_cast<long long>(step), kSuffix);
  return options_.dir + "/" + name;
}

void CheckpointManager::save(int64_t step, const format::TensorMap& tensors, const format::Metadata& metadata) {
  TORCH_CHECK(step >= 0, "CheckpointManager::save: step is ", step, "; it must be >= 0");
  if (options_.rank != 0) return;
  format::Metadata with_step = metadata;
  with_step["paisoar.step"] = std::to_string(step);
  format::save_safetensors(path_for(step), tensors, with_step);
  prune();
}

void CheckpointManager::prune() const {
  if (options_.keep_last <= 0) return;
  const std::vector<CheckpointFile> files = list();
  const size_t keep = static_cast<size_t>(options_.keep_last);
  for (size_t i = 0; i + keep < files.size(); ++i) {
    std::error_code error;
    fs::remove(files[i].path, error);
    if (error) std::cerr << "warning: could not delete old checkpoint '" << files[i].path << "': " << error.message() << std::endl;
  }
}

std::vector<CheckpointFile> CheckpointManager::list() const {
  std::vector<CheckpointFile> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(options_.dir, error)) {
    if (!entry.is_regular_file(error)) continue;
    if (auto step = step_of(entry.path().filename().string())) files.push_back({*step, entry.path().string()});
  }
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) { return a.step < b.step; });
  return files;
}

void CheckpointManager::warn_unusable_entries() const {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(options_.dir, error)) {
    if (step_of(entry.path().filename().string()) && !entry.is_regular_file(error)) {
      std::cerr << "warning: skipping checkpoint '" << entry.path().string()
                << "': it is not a regular file (a dangling link, a directory?); remove it" << std::endl;
    }
  }
}

std::optional<CheckpointManager::Loaded> CheckpointManager::load_latest() const {
  warn_unusable_entries();
  const std::vector<CheckpointFile> files = list();
  std::string newest_error;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      return Loaded{it->step, format::load_safetensors(it->path)};
    } catch (const c10::Error& e) {
      if (newest_error.empty()) newest_error = e.what_without_backtrace();
      std::cerr << "warning: skipping checkpoint '" << it->path << "': " << e.what_without_backtrace()
                << (std::next(it) != files.rend() ? "; falling back to '" + std::next(it)->path + "'" : std::string())
                << std::endl;
    }
  }
  TORCH_CHECK(files.empty(), "CheckpointManager: none of the ", files.size(), " checkpoints in '", options_.dir,
              "' can be used (the newest: ", newest_error,
              "); remove them to start from scratch, or point checkpoint.dir elsewhere");
  return std::nullopt;
}

}  // namespace paisoar::checkpoint
