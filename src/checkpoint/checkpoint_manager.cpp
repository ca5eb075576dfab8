// CheckpointManager: file naming, the directory's lock, pruning and
// newest-intact resume over format::save_safetensors/format::load_safetensors,
// all through the options' FileSystem. Names are parsed strictly, so a
// temporary ("step-...safetensors.tmp.<pid>.<n>") is never taken
// for a checkpoint.
#include "paisoar/checkpoint/checkpoint_manager.h"

#include "paisoar/format/safetensors.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace paisoar::checkpoint {
namespace {

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

// Locks <dir>/.paisoar-lock, holding this process's id for the message
// another job gets; released when the returned handle goes.
std::shared_ptr<const void> lock_directory(format::FileSystem& files, const std::string& dir) {
  const std::string path = dir + "/.paisoar-lock";
  std::string holder;
  std::shared_ptr<const void> lock;
  try {
    lock = files.try_lock(path, &holder);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "CheckpointManager: ", e.what_without_backtrace(), "; choose a checkpoint directory you can write to");
  }
  if (lock) return lock;
  while (!holder.empty() && std::isspace(static_cast<unsigned char>(holder.back()))) holder.pop_back();
  TORCH_CHECK(false, "CheckpointManager: checkpoint directory '", dir, "' is in use by another job (process ",
              holder.empty() ? std::string("?") : holder, " holds ", path,
              "); two runs writing one directory would overwrite each other's checkpoints: give this run its own "
              "checkpoint.dir (or run_dir), or stop the other");
}

}  // namespace

CheckpointManager::CheckpointManager(CheckpointOptions options) : options_(std::move(options)) {
  TORCH_CHECK(!options_.dir.empty(), "CheckpointManager: options.dir is empty; give the checkpoint directory");
  if (!options_.file_system) options_.file_system = format::local_file_system();
  if (options_.rank != 0) return;
  format::FileSystem& files = file_system();
  try {
    files.create_directories(options_.dir);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "CheckpointManager: ", e.what_without_backtrace());
  }
  try {
    files.create_atomically(options_.dir + "/.paisoar-write-check");  // removed uncommitted
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "CheckpointManager: checkpoint directory '", options_.dir, "' is not writable (", e.what_without_backtrace(),
                ")");
  }
  lock_ = lock_directory(files, options_.dir);
  for (const auto& name : files.list(options_.dir)) {
    if (!is_leftover_temporary(name)) continue;
    try {
      files.remove_all(options_.dir + "/" + name);
    } catch (const c10::Error&) {
      // A leftover that stays is never taken for a checkpoint.
    }
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
  format::save_safetensors(file_system(), path_for(step), tensors, with_step);
  prune();
}

void CheckpointManager::prune() const {
  if (options_.keep_last <= 0) return;
  const std::vector<CheckpointFile> files = list();
  const size_t keep = static_cast<size_t>(options_.keep_last);
  for (size_t i = 0; i + keep < files.size(); ++i) {
    try {
      file_system().remove_all(files[i].path);
    } catch (const c10::Error& e) {
      std::cerr << "warning: could not delete old checkpoint: " << e.what_without_backtrace() << std::endl;
    }
  }
}

std::vector<CheckpointFile> CheckpointManager::list() const {
  std::vector<CheckpointFile> files;
  for (const auto& name : file_system().list(options_.dir)) {
    const auto step = step_of(name);
    const std::string path = options_.dir + "/" + name;
    if (step && file_system().status(path).kind == format::FileKind::Regular) files.push_back({*step, path});
  }
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) { return a.step < b.step; });
  return files;
}

void CheckpointManager::warn_unusable_entries() const {
  for (const auto& name : file_system().list(options_.dir)) {
    const std::string path = options_.dir + "/" + name;
    if (step_of(name) && file_system().status(path).kind != format::FileKind::Regular) {
      std::cerr << "warning: skipping checkpoint '" << path
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
      return Loaded{it->step, format::load_safetensors(file_system(), it->path)};
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
