// Checkpoint: what one checkpoint file holds, named tensors plus string
// metadata, and where it came from (so errors can name the file). The
// safetensors reader/writer, the training-state helpers and the
// CheckpointManager all pass this one type around.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>

namespace paisoar::checkpoint {

// Ordered by name, so a checkpoint's header lists tensors the same way every time.
using TensorMap = std::map<std::string, torch::Tensor>;
using Metadata = std::map<std::string, std::string>;

struct Checkpoint {
  TensorMap tensors;
  Metadata metadata;
  // The file it was read from ("" for one built in memory); errors name it.
  std::string source;
};

}  // namespace paisoar::checkpoint
