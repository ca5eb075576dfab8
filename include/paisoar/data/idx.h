// IDX files (MNIST, Fashion-MNIST; gzipped or not) read into tensors.
// Debian's dataset-fashion-mnist installs them in /usr/share/datasets/fashion-mnist.
#pragma once

#include <torch/types.h>

#include <string>

namespace paisoar::data {

// The whole file as a tensor of its element type (uint8, int8, int16, int32,
// float32 or float64) and its dimensions, e.g. uint8 [60000, 28, 28] for
// train-images-idx3-ubyte.gz. `.gz` or not is detected from the content.
// Throws c10::Error naming the file and what is wrong (missing,
// not IDX, truncated, trailing bytes).
torch::Tensor read_idx(const std::string& path);

// Writes `tensor` (one of the types above, contiguous or not) as an IDX file,
// gzipped when `path` ends in ".gz". Writes to a temporary file and renames it,
// so a failure never leaves a half-written file at `path`.
void write_idx(const std::string& path, const torch::Tensor& tensor);

}  // namespace paisoar::data
