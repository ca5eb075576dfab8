// ImageFolder: the directory scan (torchvision's order: sorted class folders,
// then per folder, directories in sorted path order and files sorted by name)
// and per-sample read + ImagePipeline, with the file's path added to errors.
#include "paisoar/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "paisoar/data/data_error.h"

namespace paisoar::data {
namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".pgm" || ext == ".ppm";
}

// The image files under `dir` (recursively, following links, skipping hidden
// entries), grouped by directory in sorted path order, each sorted by name:
// the order of torchvision's sorted(os.walk(...)) and sorted(fnames).
std::vector<std::string> images_under(const fs::path& dir) {
  std::map<std::string, std::vector<std::string>> by_dir;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (hidden(p)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && is_image_file(p)) {
      by_dir[p.parent_path().string()].push_back(p.filename().string());
    }
  }
  if (ec) throw DataError("ImageFolder: cannot list " + dir.string() + ": " + ec.message());
  std::vector<std::string> files;
  for (auto& [parent, names] : by_dir) {
    std::sort(names.begin(), names.end());
    for (const auto& name : names) files.push_back((fs::path(parent) / name).string());
  }
  return files;
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, ImagePipeline pipeline)
    : pipeline_(std::move(pipeline)) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw DataError("ImageFolder: root " + root +
                    " is not a directory; give the folder that holds one sub-folder per class");
  }
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!hidden(it->path()) && it->is_directory(ec)) classes_.push_back(it->path().filename().string());
  }
  if (ec) throw DataError("ImageFolder: cannot list " + root + ": " + ec.message());
  if (classes_.empty()) {
    throw DataError("ImageFolder: " + root +
                    " has no class folders; put each class's images in root/<class>/");
  }
  std::sort(classes_.begin(), classes_.end());
  for (size_t label = 0; label < classes_.size(); ++label) {
    const fs::path dir = fs::path(root) / classes_[label];
    const std::vector<std::string> images = images_under(dir);
    if (images.empty()) {
      throw DataError("ImageFolder: class folder " + dir.string() +
                      " holds no image (.jpg, .jpeg, .png, .pgm, .ppm); put at least one image "
                      "in it or remove it");
    }
    for (const auto& path : images) files_.emplace_back(path, static_cast<int64_t>(label));
  }
}

Example ImageFolder::get(int64_t index, SampleRng& rng) const {
  TORCH_CHECK(index >= 0 && index < size(), "ImageFolder: index ", index, " is outside [0, ",
              size(), ")");
  const auto& [path, label] = files_[index];
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  Example example;
  try {
    example.data = pipeline_(bytes.data(), bytes.size(), rng);
  } catch (const DataError& e) {
    throw DataError(path + ": " + e.what());
  }
  example.label = label;
  return example;
}

std::string ImageFolder::describe(int64_t index) const {
  TORCH_CHECK(index >= 0 && index < size(), "ImageFolder: index ", index, " is outside [0, ",
              size(), ")");
  return files_[index].first;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) throw DataError("cannot open " + path + ": " + std::strerror(errno));
  FILE* f = file.get();
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  if (size < 0 || std::fseek(f, 0, SEEK_SET) != 0) {
    throw DataError("cannot read " + path + ": not a regular file (" + std::strerror(errno) + ")");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    throw DataError("cannot read " + path + ": " +
                    (std::ferror(f) ? std::strerror(errno) : "the file shrank while being read"));
  }
  return bytes;
}

}  // namespace paisoar::data
