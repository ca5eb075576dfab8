// MNIST-style data (IDX images uint8 [N, H, W] and labels [N], gzipped or
// not) as a Dataset: the files are read into memory once, and each sample goes
// through an ImagePipeline (augmentations such as RandomAffine, then the fused
// normalisation) into a float [1, H, W] tensor.
#pragma once

#include <torch/types.h>

#include <string>

#include "paisoar/data/dataset.h"
#include "paisoar/data/image_pipeline.h"

namespace paisoar::data {

// Fashion-MNIST's training statistics, the usual normalisation.
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

struct IdxDatasetOptions {
  int64_t num_classes = 10;  // labels must lie in [0, num_classes)
  int64_t limit = 0;         // use only the first `limit` samples; 0: all
};

class IdxDataset : public Dataset {
 public:
  // Throws DataError naming the file when one is missing or malformed, or when
  // the counts of images and labels differ.
  IdxDataset(const std::string& images, const std::string& labels, ImagePipeline pipeline,
             IdxDatasetOptions options = {});

  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index, SampleRng& rng) const override;
  int64_t num_classes() const override { return options_.num_classes; }
  std::string describe(int64_t index) const override;
  std::string describe_label(int64_t index) const override;

  const torch::Tensor& images() const { return images_; }  // uint8 [N, H, W]
  const torch::Tensor& labels() const { return labels_; }  // int64 [N]

 private:
  std::string images_path_;
  std::string labels_path_;
  torch::Tensor images_;
  torch::Tensor labels_;
  ImagePipeline pipeline_;
  IdxDatasetOptions options_;
};

// The pipeline that only normalises with Fashion-MNIST's statistics.
ImagePipeline fashion_mnist_pipeline(TransformList augment = {});

}  // namespace paisoar::data
