// Joining and cutting tensor-parallel shards of a checkpoint's model state.
// ShardSet keeps parameters and elementwise optimizer state flat; they are
// viewed in the parameter's shape, joined or cut along the split dimension
// (tensor_parallel::join_shards, shard_of), and flattened again.
#include "src/state/tensor_split_state.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <iterator>
#include <optional>

namespace paisoar::train {
namespace {

using tensor_parallel::ParameterSplit;
using zero::detail::ShardSet;

std::string dirs_of(const std::vector<ShardSet>& shards) {
  std::string out;
  for (const auto& s : shards) out += (out.empty() ? "'" : ", '") + s.dir + "'";
  return out;
}

// The split `metadata` records for parameter `name`, if any.
std::optional<ParameterSplit> recorded_split(const format::Metadata& metadata, const std::string& name,
                                             const std::string& where) {
  const auto it = metadata.find(kSplitKeyPrefix + name);
  if (it == metadata.end()) return std::nullopt;
  return tensor_parallel::parse_split(it->second, where + ": metadata '" + kSplitKeyPrefix + name + "'");
}

torch::Tensor joined(const std::vector<torch::Tensor>& flat, const std::vector<int64_t>& shape,
                     const ParameterSplit& split) {
  std::vector<torch::Tensor> pieces;
  for (const auto& t : flat) pieces.push_back(t.view(shape));
  return tensor_parallel::join_shards(pieces, split.dim, split.parts).reshape({-1});
}

}  // namespace

format::Metadata split_metadata(const torch::nn::Module& part) {
  format::Metadata metadata = {{kSplitsRecordedKey, "1"}};
  for (const auto& [name, split] : tensor_parallel::parameter_splits(part)) {
    metadata[kSplitKeyPrefix + name] = tensor_parallel::split_text(split);
  }
  return metadata;
}

ShardSet join_tensor_shards(std::vector<ShardSet> shards) {
  TORCH_CHECK(!shards.empty(), "join_tensor_shards: no part");
  if (shards.size() == 1) return std::move(shards[0]);
  ShardSet out = shards[0];
  out.dir = dirs_of(shards);
  // Written before the parts recorded their splits: which tensors are shards is not known.
  TORCH_CHECK(shards[0].metadata.count(kSplitsRecordedKey), "the tensor-parallel parts ", out.dir,
              " do not record which parameters are shards (written by an older paisoar); resume with the "
              "parallel: settings they were written with");
  for (const auto& [name, buffer] : shards[0].buffers) {
    TORCH_CHECK(!shards[0].metadata.count(kSplitKeyPrefix + name), "the tensor-parallel parts ", out.dir,
                " hold '", name, "', a frozen (requires_grad false) shard, which cannot be joined yet; resume "
                "with the parallel: settings they were written with");
  }
  for (const auto& s : shards) {
    TORCH_CHECK(s.names == out.names, "the tensor-parallel parts ", out.dir,
                " do not hold the same parameters (the checkpoint is damaged or mixes two saves)");
  }
  for (const auto& name : out.names) {
    const auto split = recorded_split(shards[0].metadata, name, shards[0].dir);
    if (!split) continue;  // whole on every rank: t0's
    const std::vector<int64_t>& shape = shards[0].shapes.at(name);
    TORCH_CHECK(split->dim < static_cast<int64_t>(shape.size()), shards[0].dir, ": metadata '", kSplitKeyPrefix,
                name, "' splits dimension ", split->dim, " of a parameter of shape ",
                c10::IntArrayRef(shape), "; the file is damaged");
    std::vector<torch::Tensor> pieces;
    for (const auto& s : shards) {
      TORCH_CHECK(s.shapes.at(name) == shape, "the tensor-parallel parts ", out.dir, " hold '", name,
                  "' in different shapes");
      pieces.push_back(s.params.at(name));
    }
    out.params[name] = joined(pieces, shape, *split);
    if (const auto it = out.elementwise.find(name); it != out.elementwise.end()) {
      for (auto& [field, value] : it->second) {
        std::vector<torch::Tensor> parts;
        for (const auto& s : shards) {
          const auto state = s.elementwise.find(name);
          TORCH_CHECK(state != s.elementwise.end() && state->second.count(field), "the tensor-parallel part '",
                      s.dir, "' lacks the optimizer's '", field, "' of '", name, "' that '", shards[0].dir,
                      "' holds (the checkpoint is damaged or mixes two saves)");
          parts.push_back(state->second.at(field));
        }
        value = joined(parts, shape, *split);
      }
    }
    out.shapes[name][static_cast<size_t>(split->dim)] *= static_cast<int64_t>(shards.size());
  }
  for (auto it = out.metadata.begin(); it != out.metadata.end();) {
    const bool split_key = it->first.rfind(kSplitKeyPrefix, 0) == 0 || it->first == kSplitsRecordedKey;
    it = split_key ? out.metadata.erase(it) : std::next(it);
  }
  return out;
}

void cut_tensor_shard(ShardSet& set, const std::map<std::string, ParameterSplit>& splits, int rank, int size) {
  for (const auto& [name, split] : splits) {
    TORCH_CHECK(!set.buffers.count(name), "'", name, "' is a frozen (requires_grad false) tensor-parallel shard, "
                "which a resume cannot cut from '", set.dir, "' yet; resume with the parallel: settings it was "
                "written with");
    if (!set.params.count(name)) continue;  // another stage's: keep_part drops it
    const std::vector<int64_t> shape = set.shapes.at(name);
    const auto cut = [&](const torch::Tensor& flat) {
      return tensor_parallel::shard_of(flat.view(shape), split.dim, rank, size, split.parts).reshape({-1});
    };
    set.params[name] = cut(set.params[name]);
    if (const auto it = set.elementwise.find(name); it != set.elementwise.end()) {
      for (auto& [field, value] : it->second) value = cut(value);
    }
    set.shapes[name][static_cast<size_t>(split.dim)] /= size;
  }
}

}  // namespace paisoar::train
