// IdxDataset: read_idx once, then one Image per sample through the pipeline.
#include "paisoar/data/idx_dataset.h"

#include <torch/torch.h>

#include <cstring>
#include <stdexcept>

#include "paisoar/data/data_error.h"
#include "paisoar/data/idx.h"

namespace paisoar::data {
namespace {

torch::Tensor read_checked(const std::string& path) {
  try {
    return read_idx(path);
  } catch (const c10::Error& e) {
    throw DataError(e.what_without_backtrace());
  }
}

}  // namespace

IdxDataset::IdxDataset(const std::string& images, const std::string& labels,
                       ImagePipeline pipeline, IdxDatasetOptions options)
    : images_path_(images), labels_path_(labels), pipeline_(std::move(pipeline)), options_(options) {
  images_ = read_checked(images);
  auto raw_labels = read_checked(labels);
  if (images_.scalar_type() != torch::kUInt8 || images_.dim() != 3) {
    throw DataError(images + ": expected uint8 images [N, H, W], got " +
                    std::string(c10::toString(images_.scalar_type())) + " with " +
                    std::to_string(images_.dim()) + " dimensions; is it the labels file?");
  }
  if (raw_labels.dim() != 1 || raw_labels.is_floating_point()) {
    throw DataError(labels + ": expected integer labels [N]; is it the images file?");
  }
  if (raw_labels.size(0) != images_.size(0)) {
    throw DataError(images + " holds " + std::to_string(images_.size(0)) + " images but " +
                    labels + " holds " + std::to_string(raw_labels.size(0)) +
                    " labels; are they from the same set (train vs t10k)?");
  }
  labels_ = raw_labels.to(torch::kLong);
  if (options_.limit > 0 && options_.limit < images_.size(0)) {
    images_ = images_.narrow(0, 0, options_.limit).contiguous();
    labels_ = labels_.narrow(0, 0, options_.limit).contiguous();
  }
}

Example IdxDataset::get(int64_t index, SampleRng& rng) const {
  const int64_t h = images_.size(1), w = images_.size(2);
  Image image(h, w, 1);
  std::memcpy(image.pixels.data(), images_.data_ptr<uint8_t>() + index * h * w,
              static_cast<size_t>(h * w));
  return Example{pipeline_(std::move(image), rng), labels_.data_ptr<int64_t>()[index]};
}

std::string IdxDataset::describe(int64_t index) const {
  return images_path_ + " record " + std::to_string(index);
}

std::string IdxDataset::describe_label(int64_t index) const {
  return labels_path_ + " record " + std::to_string(index);
}

ImagePipeline fashion_mnist_pipeline(TransformList augment) {
  ToTensorOptions to_tensor;
  to_tensor.channels = 1;
  to_tensor.mean = {kFashionMnistMean};
  to_tensor.std = {kFashionMnistStd};
  return ImagePipeline(std::move(augment), to_tensor);
}

}  // namespace paisoar::data
