// The local FileSystem: writes through util::AtomicFile (so its test fault
// points, PAISOAR_TEST_FAULT=atomic_file.*, apply), reads through
// util::InputFile (a FIFO is refused, never waited on), locks with flock,
// lists and removes with std::filesystem. Also the helpers every
// implementation shares (read_file, read_exactly, regular_files_under).
#include "paisoar/format/file_system.h"

#include <c10/util/Exception.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "src/util/atomic_file.h"
#include "src/util/input_file.h"

namespace paisoar::format {
namespace {

namespace fs = std::filesystem;

class LocalWritableFile : public WritableFile {
 public:
  explicit LocalWritableFile(const std::string& path) : file_(path) {}
  void append(const void* data, size_t size) override { file_.write(data, size); }
  void commit() override { file_.commit(); }

 private:
  util::AtomicFile file_;
};

class LocalReadableFile : public ReadableFile {
 public:
  LocalReadableFile(const std::string& path, const std::string& what) : path_(path), what_(what), in_(path, what) {}
  uint64_t size() const override { return in_.size(); }
  size_t read(void* out, size_t size) override {
    char* p = static_cast<char*>(out);
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(in_.fd(), p + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) C10_THROW_ERROR(Error, "cannot read the " + what_ + " '" + path_ + "': " + std::strerror(errno));
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  std::string path_, what_;
  util::InputFile in_;
};

class LocalFileSystem : public FileSystem {
 public:
  std::unique_ptr<WritableFile> create_atomically(const std::string& path) override {
    return std::make_unique<LocalWritableFile>(path);
  }

  std::unique_ptr<ReadableFile> open(const std::string& path, const std::string& what) override {
    return std::make_unique<LocalReadableFile>(path, what);
  }

  FileStatus status(const std::string& path) override {
    std::error_code ec;
    const fs::file_status s = fs::status(path, ec);
    if (s.type() == fs::file_type::not_found) {
      // A link to nothing: present, but not a file.
      return {fs::is_symlink(fs::symlink_status(path, ec)) ? FileKind::Other : FileKind::Missing, 0};
    }
    if (ec) return {FileKind::Other, 0};
    if (fs::is_regular_file(s)) return {FileKind::Regular, fs::file_size(path, ec)};
    return {fs::is_directory(s) ? FileKind::Directory : FileKind::Other, 0};
  }

  std::vector<std::string> list(const std::string& dir) override {
    std::vector<std::string> names;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void create_directories(const std::string& dir) override {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!ec && fs::is_directory(dir, ec)) return;
    C10_THROW_ERROR(Error, "cannot create directory '" + dir + "': " +
                               (ec ? ec.message() : std::string("a file of that name is in the way")) +
                               "; choose a directory you can write to");
  }

  void remove_all(const std::string& path) override {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) C10_THROW_ERROR(Error, "cannot remove '" + path + "': " + ec.message());
  }

  std::shared_ptr<const void> try_lock(const std::string& path, std::string* holder) override {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) C10_THROW_ERROR(Error, "cannot open '" + path + "': " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char text[64] = {0};
      const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
      ::close(fd);
      if (holder) *holder = std::string(text, n > 0 ? static_cast<size_t>(n) : 0);
      return nullptr;
    }
    const std::string me = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
      // Only the message another holder would print depends on it.
    }
    return std::shared_ptr<const int>(new int(fd), [](const int* held) {
      ::close(*held);  // drops the lock
      delete held;
    });
  }
};

}  // namespace

std::shared_ptr<FileSystem> local_file_system() {
  static const auto local = std::make_shared<LocalFileSystem>();
  return local;
}

bool read_exactly(ReadableFile& file, void* out, size_t size) { return file.read(out, size) == size; }

std::string read_file(FileSystem& fs, const std::string& path, const std::string& what, uint64_t max_bytes) {
  auto file = fs.open(path, what);
  if (file->size() > max_bytes) {
    C10_THROW_ERROR(ValueError, "the " + what + " '" + path + "' holds " + std::to_string(file->size()) +
                                    " bytes, more than the " + std::to_string(max_bytes) + " allowed");
  }
  std::string text(file->size(), '\0');
  text.resize(file->read(text.data(), text.size()));
  return text;
}

std::vector<std::string> regular_files_under(FileSystem& fs, const std::string& root, const std::string& subdir,
                                             std::vector<std::string>* other) {
  std::vector<std::string> regular;
  std::vector<std::string> pending = {subdir};
  if (fs.status(subdir.empty() ? root : root + "/" + subdir).kind != FileKind::Directory) return regular;
  while (!pending.empty()) {
    const std::string dir = pending.back();
    pending.pop_back();
    for (const auto& name : fs.list(dir.empty() ? root : root + "/" + dir)) {
      const std::string relative = dir.empty() ? name : dir + "/" + name;
      switch (fs.status(root + "/" + relative).kind) {
        case FileKind::Regular: regular.push_back(relative); break;
        case FileKind::Directory: pending.push_back(relative); break;
        case FileKind::Missing: break;  // removed meanwhile
        case FileKind::Other:
          if (other) other->push_back(relative);
          break;
      }
    }
  }
  std::sort(regular.begin(), regular.end());
  if (other) std::sort(other->begin(), other->end());
  return regular;
}

}  // namespace paisoar::format
