// Cutting full tensors into per-rank shards along one dimension (optionally
// made of several fused blocks) and gathering them back.
#include "paisoar/tensor_parallel/sharding.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace paisoar::tensor_parallel {

int64_t divide_evenly(int64_t n, int size, const std::string& what, const std::string& layer) {
  TORCH_CHECK(size >= 1 && n % size == 0, layer, ": ", what, " (", n,
              ") is not divisible by the tensor-parallel group size (", size,
              "); choose a group size that divides it or change the model's sizes");
  return n / size;
}

torch::Tensor shard_of(const torch::Tensor& full, int64_t dim, int rank, int size, int64_t parts) {
  TORCH_CHECK(parts >= 1 && full.size(dim) % parts == 0, "shard_of: dimension ", dim, " (",
              full.size(dim), ") is not ", parts, " equal parts");
  const int64_t block = full.size(dim) / parts;
  const int64_t width = divide_evenly(block, size, "dimension " + std::to_string(dim), "shard_of");
  std::vector<torch::Tensor> slices;
  for (int64_t p = 0; p < parts; ++p) slices.push_back(full.narrow(dim, p * block + rank * width, width));
  return torch::cat(slices, dim).contiguous();
}

torch::Tensor gather_shards(const torch::Tensor& shard, int64_t dim, comm::Communicator& group,
                            int64_t parts) {
  torch::NoGradGuard no_grad;
  const int size = group.size();
  dim = dim < 0 ? dim + shard.dim() : dim;
  TORCH_CHECK(parts >= 1 && shard.size(dim) % parts == 0, "gather_shards: dimension ", dim, " (",
              shard.size(dim), ") is not ", parts, " equal parts");
  torch::Tensor flat = torch::empty({size * shard.numel()}, shard.options());
  group.allgather_into(flat, shard.contiguous()).wait();
  std::vector<int64_t> shape = {size};
  for (int64_t s : shard.sizes()) shape.push_back(s);
  std::vector<torch::Tensor> ranks = flat.view(shape).unbind(0);
  // Each rank's shard is `parts` slices; the full dimension is, for each part,
  // every rank's slice of it in rank order.
  std::vector<torch::Tensor> ordered;
  for (int64_t p = 0; p < parts; ++p) {
    for (const auto& r : ranks) ordered.push_back(r.chunk(parts, dim)[p]);
  }
  return torch::cat(ordered, dim);
}

torch::Tensor join_shards(const std::vector<torch::Tensor>& shards, int64_t dim, int64_t parts) {
  TORCH_CHECK(!shards.empty(), "join_shards: no shard");
  dim = dim < 0 ? dim + shards[0].dim() : dim;
  std::vector<torch::Tensor> ordered;
  for (int64_t p = 0; p < parts; ++p) {
    for (const auto& s : shards) {
      TORCH_CHECK(s.dim() > dim && s.size(dim) % parts == 0, "join_shards: a shard of shape ", s.sizes(),
                  " is not ", parts, " equal parts along dimension ", dim);
      ordered.push_back(s.chunk(parts, dim)[p]);
    }
  }
  return torch::cat(ordered, dim);
}

std::map<std::string, ParameterSplit> parameter_splits(const torch::nn::Module& model) {
  std::map<std::string, ParameterSplit> splits;
  const auto add = [&](const torch::nn::Module& m, const std::string& prefix) {
    const auto* layer = dynamic_cast<const SplitLayer*>(&m);
    if (!layer) return;
    for (const auto& [name, split] : layer->parameter_splits()) splits[prefix.empty() ? name : prefix + "." + name] = split;
  };
  add(model, "");  // itself without shared_from_this: a module on the stack has none
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/false)) add(*item.value(), item.key());
  return splits;
}

std::string split_text(const ParameterSplit& split) {
  std::string text = std::to_string(split.dim);
  if (split.parts != 1) {
    text += '/';
    text += std::to_string(split.parts);
  }
  return text;
}

ParameterSplit parse_split(const std::string& text, const std::string& what) {
  const size_t slash = text.find('/');
  const auto number = [&](const std::string& digits, int64_t low) {
    const bool ok = !digits.empty() && digits.size() <= 6 &&
                    std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
    TORCH_CHECK(ok && std::stoll(digits) >= low, what, " is '", text,
                "', not a split (\"<dim>\" or \"<dim>/<parts>\"); the file is damaged");
    return static_cast<int64_t>(std::stoll(digits));
  };
  ParameterSplit split;
  split.dim = number(text.substr(0, slash), 0);
  if (slash != std::string::npos) split.parts = number(text.substr(slash + 1), 1);
  return split;
}

}  // namespace paisoar::tensor_parallel
