// FaultyFileSystem: each file the fault hits is written through a wrapper
// that counts (NoSpace), fails its commit (SyncError), or keeps the bytes so
// that its "death" can leave on the disk what a crash at that moment would
// (CrashBeforeRename, TornFile). Files the fault misses go to the disk as is.
#include "tests/support/faulty_file_system.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace paisoar::format {
namespace {

class FaultyWritableFile : public WritableFile {
 public:
  FaultyWritableFile(FaultyFileSystem& fs, const FileFault& fault, std::string path)
      : fs_(fs), fault_(fault), path_(std::move(path)) {
    if (fault_.kind == FileFault::Kind::NoSpace || fault_.kind == FileFault::Kind::SyncError) {
      file_ = fs_.disk().create_atomically(path_);
    }
  }

  void append(const void* data, size_t size) override {
    fs_.check_alive();
    if (fault_.kind == FileFault::Kind::NoSpace && written_ + size > fault_.bytes) {
      fail("write failed", ENOSPC);
    }
    written_ += size;
    if (file_) {
      file_->append(data, size);
    } else {
      bytes_.append(static_cast<const char*>(data), size);
    }
  }

  void commit() override {
    fs_.check_alive();
    switch (fault_.kind) {
      case FileFault::Kind::NoSpace: file_->commit(); return;
      case FileFault::Kind::SyncError: fail("fsync failed", EIO);
      case FileFault::Kind::CrashBeforeRename: {
        auto left = fs_.disk().create_atomically(path_ + ".tmp.crash");
        left->append(bytes_);
        left->commit();
        fs_.crash("after writing '" + path_ + "' and before renaming it into place");
      }
      case FileFault::Kind::TornFile: {
        const size_t kept = std::min<size_t>(fault_.bytes ? fault_.bytes : bytes_.size() / 2, bytes_.size());
        auto torn = fs_.disk().create_atomically(path_);
        torn->append(bytes_.data(), kept);
        torn->commit();
        fs_.crash("with " + std::to_string(kept) + " of the " + std::to_string(bytes_.size()) + " bytes of '" +
                  path_ + "' on the disk");
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what, int error) {
    C10_THROW_ERROR(Error, "cannot write '" + path_ + "': " + what + ": " + std::strerror(error));
  }

  FaultyFileSystem& fs_;
  FileFault fault_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;  // NoSpace, SyncError: the disk's own
  std::string bytes_;                   // the crash kinds: kept until commit
  uint64_t written_ = 0;
};

}  // namespace

FaultyFileSystem::FaultyFileSystem(std::shared_ptr<FileSystem> disk, FileFault fault)
    : disk_(std::move(disk)), fault_(std::move(fault)) {}

void FaultyFileSystem::check_alive() const {
  if (crashed_) throw SimulatedCrash("the process crashed (simulated by FaultyFileSystem); nothing more is written");
}

void FaultyFileSystem::crash(const std::string& where) {
  crashed_ = true;
  throw SimulatedCrash("simulated crash " + where);
}

std::unique_ptr<WritableFile> FaultyFileSystem::create_atomically(const std::string& path) {
  check_alive();
  bool hit = false;
  if (path.find(fault_.path_contains) != std::string::npos) {
    std::lock_guard<std::mutex> hold(mutex_);
    hit = matched_++ >= fault_.skip;
  }
  if (!hit) return disk_->create_atomically(path);
  ++hits_;
  return std::make_unique<FaultyWritableFile>(*this, fault_, path);
}

std::unique_ptr<ReadableFile> FaultyFileSystem::open(const std::string& path, const std::string& what) {
  check_alive();
  return disk_->open(path, what);
}

FileStatus FaultyFileSystem::status(const std::string& path) {
  check_alive();
  return disk_->status(path);
}

std::vector<std::string> FaultyFileSystem::list(const std::string& dir) {
  check_alive();
  return disk_->list(dir);
}

void FaultyFileSystem::create_directories(const std::string& dir) {
  check_alive();
  disk_->create_directories(dir);
}

void FaultyFileSystem::remove_all(const std::string& path) {
  check_alive();
  disk_->remove_all(path);
}

std::shared_ptr<const void> FaultyFileSystem::try_lock(const std::string& path, std::string* holder) {
  check_alive();
  return disk_->try_lock(path, holder);
}

}  // namespace paisoar::format
