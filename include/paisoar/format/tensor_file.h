// TensorFile: what one tensor file holds, named tensors plus string metadata,
// and where it came from (so errors can name the file). The bottom layer: the
// safetensors codec reads and writes it; the checkpoint manager, the training
// state and ZeRO's sharded checkpoints build on it, and it knows none of them.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>

namespace paisoar::format {

// Ordered by name, so a file's header lists tensors the same way every time.
using TensorMap = std::map<std::string, torch::Tensor>;
using Metadata = std::map<std::string, std::string>;

struct TensorFile {
  TensorMap tensors;
  Metadata metadata;
  // The file it was read from ("" for one built in memory); errors name it.
  std::string source;
};

}  // namespace paisoar::format
