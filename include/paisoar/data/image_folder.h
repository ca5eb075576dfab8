// torchvision.datasets.ImageFolder: root/<class>/<file>.{jpg,jpeg,png}; the
// classes are the sorted folder names, label = position in that list. Files are
// read and decoded on demand by the loader's workers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "paisoar/data/dataset.h"
#include "paisoar/data/image_pipeline.h"

namespace paisoar::data {

class ImageFolder : public Dataset {
 public:
  // Scans `root` once. Throws DataError if root is missing, has no class
  // folders, or a class folder holds no image (naming the folder).
  ImageFolder(const std::string& root, ImagePipeline pipeline);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index, SampleRng& rng) const override;
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  std::string describe(int64_t index) const override;

  const std::vector<std::string>& classes() const { return classes_; }
  // (path, label) in the order of the index.
  const std::vector<std::pair<std::string, int64_t>>& files() const { return files_; }

 private:
  std::vector<std::string> classes_;
  std::vector<std::pair<std::string, int64_t>> files_;
  ImagePipeline pipeline_;
};

// Reads a whole file. Throws DataError naming the path if it cannot.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace paisoar::data
