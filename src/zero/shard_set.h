// ShardSet: the files of one sharded ZeRO checkpoint, checked for
// completeness, with the full parameters (and optimizer fields) reassembled
// from the ranks' pieces. Shared by load_sharded and consolidate_shards.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "paisoar/format/tensor_file.h"

namespace paisoar::zero::detail {

std::string shard_file_name(int rank, int world);

struct ShardSet {
  std::string dir;
  int world = 0;
  format::Metadata metadata;                 // rank 0's
  std::vector<std::string> names;                // parameters, in the saved model's order
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string dtype;                             // the model's parameter dtype
  std::map<std::string, torch::Tensor> params;   // full, flat, fp32
  std::map<std::string, torch::Tensor> buffers;  // by buffer name
  // Optimizer fields: elementwise ones full and flat; per-parameter numbers (step) 0-d.
  std::map<std::string, std::map<std::string, torch::Tensor>> elementwise, scalars;
};

// Throws c10::Error listing missing files, files of another save or world
// size, or pieces that do not cover a parameter.
ShardSet read_shard_set(const std::string& dir);

}  // namespace paisoar::zero::detail
