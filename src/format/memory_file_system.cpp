// The in-memory FileSystem: files are byte strings under normalised paths
// ("a//b/" is "a/b"), directories a set, all behind one mutex. It keeps the
// local one's visible behaviour that checkpoints rely on: a write goes to a
// listed "<path>.tmp.mem.<n>" sibling until commit renames it; a file needs
// its directory; a reader sees the bytes as they were when it opened.
#include "paisoar/format/file_system.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

namespace paisoar::format {
namespace {

using Bytes = std::shared_ptr<const std::string>;

std::string normal(const std::string& path) {
  std::string out = !path.empty() && path[0] == '/' ? "/" : "";
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, slash - at);
    if (!part.empty() && part != ".") out += (out.empty() || out == "/" ? "" : "/") + part;
    at = slash + 1;
  }
  return out.empty() ? "." : out;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

class MemoryFileSystem;

class MemoryReadableFile : public ReadableFile {
 public:
  explicit MemoryReadableFile(Bytes bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_->size(); }
  size_t read(void* out, size_t size) override {
    const size_t n = std::min(size, bytes_->size() - at_);
    std::copy_n(bytes_->data() + at_, n, static_cast<char*>(out));
    at_ += n;
    return n;
  }

 private:
  Bytes bytes_;
  size_t at_ = 0;
};

class MemoryFileSystem : public FileSystem, public std::enable_shared_from_this<MemoryFileSystem> {
 public:
  MemoryFileSystem() { dirs_ = {"/", "."}; }

  std::unique_ptr<WritableFile> create_atomically(const std::string& path) override;

  std::unique_ptr<ReadableFile> open(const std::string& path, const std::string& what) override {
    std::lock_guard<std::mutex> hold(mutex_);
    const std::string p = normal(path);
    if (dirs_.count(p)) {
      C10_THROW_ERROR(ValueError, what + " '" + path + "' is a directory, not a regular file; give the path of a "
                                         "regular file");
    }
    auto it = files_.find(p);
    if (it == files_.end()) {
      C10_THROW_ERROR(Error, "cannot open the " + what + " '" + path + "': No such file or directory; check the path");
    }
    return std::make_unique<MemoryReadableFile>(it->second);
  }

  FileStatus status(const std::string& path) override {
    std::lock_guard<std::mutex> hold(mutex_);
    const std::string p = normal(path);
    if (dirs_.count(p)) return {FileKind::Directory, 0};
    auto it = files_.find(p);
    return it == files_.end() ? FileStatus{} : FileStatus{FileKind::Regular, it->second->size()};
  }

  std::vector<std::string> list(const std::string& dir) override {
    std::lock_guard<std::mutex> hold(mutex_);
    const std::string d = normal(dir);
    std::vector<std::string> names;
    const auto child = [&](const std::string& p) {
      if (p != d && parent_of(p) == d) names.push_back(p.substr(d == "/" ? 1 : d == "." ? 0 : d.size() + 1));
    };
    for (const auto& [p, bytes] : files_) child(p);
    for (const auto& p : dirs_) child(p);
    std::sort(names.begin(), names.end());
    return names;
  }

  void create_directories(const std::string& dir) override {
    std::lock_guard<std::mutex> hold(mutex_);
    std::vector<std::string> missing;
    for (std::string d = normal(dir); !dirs_.count(d); d = parent_of(d)) {
      if (files_.count(d)) {
        C10_THROW_ERROR(Error, "cannot create directory '" + dir + "': the file '" + d +
                                   "' is in the way; choose a directory you can write to");
      }
      missing.push_back(d);
    }
    dirs_.insert(missing.begin(), missing.end());
  }

  void remove_all(const std::string& path) override {
    std::lock_guard<std::mutex> hold(mutex_);
    const std::string p = normal(path), under = p + "/";
    const auto doomed = [&](const std::string& q) { return q == p || q.compare(0, under.size(), under) == 0; };
    for (auto it = files_.begin(); it != files_.end();) it = doomed(it->first) ? files_.erase(it) : std::next(it);
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      it = doomed(*it) && *it != "/" && *it != "." ? dirs_.erase(it) : std::next(it);
    }
  }

  std::shared_ptr<const void> try_lock(const std::string& path, std::string* holder) override {
    std::lock_guard<std::mutex> hold(mutex_);
    const std::string p = normal(path);
    require_directory(parent_of(p), path);
    if (!files_.count(p)) files_[p] = std::make_shared<const std::string>();
    if (locks_.count(p)) {
      if (holder) *holder = std::to_string(::getpid());  // locks live in this process
      return nullptr;
    }
    locks_.insert(p);
    auto self = shared_from_this();
    return std::shared_ptr<const int>(new int(0), [self, p](const int* handle) {
      delete handle;
      std::lock_guard<std::mutex> hold(self->mutex_);
      self->locks_.erase(p);
    });
  }

  // For MemoryWritableFile: its temporary's bytes, and the rename.
  void put(const std::string& path, std::string bytes) {
    std::lock_guard<std::mutex> hold(mutex_);
    files_[normal(path)] = std::make_shared<const std::string>(std::move(bytes));
  }
  void rename(const std::string& from, const std::string& to) {
    std::lock_guard<std::mutex> hold(mutex_);
    auto it = files_.find(normal(from));
    TORCH_CHECK(it != files_.end(), "cannot write '", to, "': its temporary '", from, "' is gone");
    files_[normal(to)] = it->second;
    files_.erase(it);
  }
  void erase(const std::string& path) {
    std::lock_guard<std::mutex> hold(mutex_);
    files_.erase(normal(path));
  }
  std::string temp_name(const std::string& path) {
    std::lock_guard<std::mutex> hold(mutex_);
    require_directory(parent_of(normal(path)), path);
    const std::string name = path + ".tmp.mem." + std::to_string(counter_++);
    files_[normal(name)] = std::make_shared<const std::string>();
    return name;
  }

 private:
  void require_directory(const std::string& dir, const std::string& path) const {
    if (!dirs_.count(dir)) {
      C10_THROW_ERROR(Error, "cannot create a file in '" + dir + "' (for '" + path +
                                 "'): No such file or directory; check that the directory exists and is writable");
    }
  }

  std::mutex mutex_;
  std::map<std::string, Bytes> files_;
  std::set<std::string> dirs_;
  std::set<std::string> locks_;
  uint64_t counter_ = 0;
};

// Appends into a string; the temporary is listed (empty) from the start and
// holds the bytes from commit, which renames it.
class MemoryWritableFile : public WritableFile {
 public:
  MemoryWritableFile(std::shared_ptr<MemoryFileSystem> fs, std::string path)
      : fs_(std::move(fs)), path_(std::move(path)), temp_(fs_->temp_name(path_)) {}
  ~MemoryWritableFile() override {
    if (!committed_) fs_->erase(temp_);
  }
  void append(const void* data, size_t size) override {
    bytes_.append(static_cast<const char*>(data), size);
  }
  void commit() override {
    TORCH_CHECK(!committed_, "'", path_, "' is already committed");
    fs_->put(temp_, std::move(bytes_));
    fs_->rename(temp_, path_);
    committed_ = true;
  }

 private:
  std::shared_ptr<MemoryFileSystem> fs_;
  std::string path_, temp_, bytes_;
  bool committed_ = false;
};

std::unique_ptr<WritableFile> MemoryFileSystem::create_atomically(const std::string& path) {
  return std::make_unique<MemoryWritableFile>(shared_from_this(), path);
}

}  // namespace

std::shared_ptr<FileSystem> memory_file_system() { return std::make_shared<MemoryFileSystem>(); }

}  // namespace paisoar::format
