// FaultyFileSystem (test support, not in the library): a FileSystem over another one (the "disk", usually
// memory_file_system()) that fails the way disks and crashes do, for tests
// of what a save leaves behind; no privileges, no full tmpfs. A fault hits
// the files created atomically whose path contains `path_contains`, after
// the first `skip` of them:
//   NoSpace            append fails with ENOSPC once the file would pass
//                      `bytes` (every later file too: the disk stays full)
//   SyncError          commit fails with EIO, as fsync does on a bad disk
//   CrashBeforeRename  commit leaves the complete temporary ("<path>.tmp.crash")
//                      and the process "dies": the write is never renamed
//   TornFile           commit renames, but only the first `bytes` bytes
//                      (half the file when 0) reach the disk, then it "dies"
// A "death" throws SimulatedCrash, and every later call on this file system
// throws it too, so nothing more reaches the disk; a test then reopens the
// disk itself, as a restarted process would.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "paisoar/format/file_system.h"

namespace paisoar::format {

struct FileFault {
  enum class Kind { NoSpace, SyncError, CrashBeforeRename, TornFile };
  Kind kind = Kind::NoSpace;
  std::string path_contains;  // "" : every file
  int skip = 0;               // matching files let through first
  uint64_t bytes = 0;         // NoSpace: the size no file may pass; TornFile: the bytes kept
};

class SimulatedCrash : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FaultyFileSystem : public FileSystem {
 public:
  FaultyFileSystem(std::shared_ptr<FileSystem> disk, FileFault fault);

  // How many files the fault has hit; whether the process has "died".
  int hits() const { return hits_; }
  bool crashed() const { return crashed_; }

  std::unique_ptr<WritableFile> create_atomically(const std::string& path) override;
  std::unique_ptr<ReadableFile> open(const std::string& path, const std::string& what) override;
  FileStatus status(const std::string& path) override;
  std::vector<std::string> list(const std::string& dir) override;
  void create_directories(const std::string& dir) override;
  void remove_all(const std::string& path) override;
  std::shared_ptr<const void> try_lock(const std::string& path, std::string* holder) override;

  // For its writable files: throws SimulatedCrash once the process "died";
  // marks the death.
  void check_alive() const;
  [[noreturn]] void crash(const std::string& where);
  FileSystem& disk() { return *disk_; }

 private:
  std::shared_ptr<FileSystem> disk_;
  FileFault fault_;
  std::mutex mutex_;
  int matched_ = 0;
  std::atomic<int> hits_{0};
  std::atomic<bool> crashed_{false};
};

}  // namespace paisoar::format
