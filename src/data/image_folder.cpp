// ImageFolder: the shared directory scan (folder_scan.h, torchvision's order)
// and per-sample read + ImagePipeline, with the file's path added to errors.
#include "paisoar/data/image_folder.h"
#include "paisoar/error.h"

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
#include "paisoar/data/folder_scan.h"

namespace paisoar::data {
ImageFolder::ImageFolder(const std::string& root, ImagePipeline pipeline)
    : files_(scan_image_folder(root, &classes_)), pipeline_(std::move(pipeline)) {}

Example ImageFolder::get(int64_t index, SampleRng& rng) const {
  TORCH_CHECK(index >= 0 && index < size(), "ImageFolder: index ", index, " is outside [0, ",
              size(), ")");
  const auto& [path, label] = files_[index];
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  Example example;
  try {
    example.data = pipeline_(bytes.data(), bytes.size(), rng);
  } catch (const DataError& e) {
    throw DataError(path + ": " + error_text(e));
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
