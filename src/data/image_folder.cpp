// ImageFolder: the shared directory scan (folder_scan.h, torchvision's order)
// and per-sample read + ImagePipeline, with the file's path added to errors.
#include "paisoar/data/image_folder.h"
#include "paisoar/error.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "paisoar/data/data_error.h"
#include "paisoar/data/folder_scan.h"
#include "src/util/input_file.h"

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
  try {
    // A FIFO is refused, not waited on; so is a file larger than any image
    // the default pixel limit lets through (a 16-bit PPM of 178956970 pixels
    // is about 1.1 GB), before it is read into memory.
    constexpr uint64_t kMaxImageFileBytes = uint64_t{2} << 30;
    return util::InputFile(path, "image file").read_all_bytes(kMaxImageFileBytes);
  } catch (const c10::Error& e) {
    throw DataError(error_text(e));
  }
}

}  // namespace paisoar::data
