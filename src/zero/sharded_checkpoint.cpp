// save_sharded / load_sharded / consolidate_shards: each rank's pieces keyed by
// parameter name and element range ("model.<name>@<begin>",
// "optim.<name>@<begin>.<field>"), so a save by N ranks loads on M.
#include "paisoar/zero/sharded_checkpoint.h"
#include "paisoar/error.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <random>

#include "paisoar/optim/optimizer_state.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"
#include "src/util/json_text.h"
#include "src/util/output_path.h"
#include "src/zero/shard_set.h"

namespace paisoar::zero {
namespace {

std::string piece_key(const std::string& prefix, const ShardParam& s) {
  return prefix + s.name + "@" + std::to_string(s.param_begin);
}

// optim.<i>.<field> (i = index among the inner optimizer's parameters, which
// are the shard tensors in order) -> optim.<name>@<begin>.<field>.
void add_sharded_optimizer_state(const ZeroOptimizer& z, format::TensorMap& tensors,
                                 format::Metadata& metadata) {
  format::TensorMap raw;
  const auto& inner = z.inner();
  optim::add_optimizer_state(inner, raw, metadata);
  TORCH_CHECK(raw.count("optim.archive") == 0, "save_sharded: ", metadata["optim.type"],
              " does not save in torch::optim's layout, so its sharded state cannot be split by parameter");
  std::vector<const ShardParam*> order;
  for (const auto& g : inner.param_groups()) {
    for (const auto& p : g.params()) {
      for (const auto& s : z.shard()) {
        if (s.tensor.is_same(p)) order.push_back(&s);
      }
    }
  }
  for (const auto& [key, t] : raw) {
    const size_t dot = key.find('.', 6);
    const size_t i = std::stoul(key.substr(6, dot - 6));
    tensors[piece_key("optim.", *order.at(i)) + key.substr(dot)] = t;
  }
}

}  // namespace

ShardFile capture_shard(const ZeroOptimizer& z, const format::Metadata& extra) {
  auto comm = z.comm();
  // One id for the files of this save, from rank 0.
  torch::Tensor run = torch::zeros({1}, torch::kInt64);
  if (comm->rank() == 0) {
    std::random_device rd;
    run[0] = static_cast<int64_t>(((static_cast<uint64_t>(rd()) << 32) | rd()) >> 1);
  }
  comm->broadcast(run, 0).wait();

  ShardFile shard;
  shard.name = detail::shard_file_name(comm->rank(), comm->size());
  format::TensorMap& tensors = shard.content.tensors;
  format::Metadata& metadata = shard.content.metadata;
  metadata = extra;
  for (const auto& s : z.shard()) tensors[piece_key("model.", s)] = s.tensor.detach();
  add_sharded_optimizer_state(z, tensors, metadata);
  if (comm->rank() == 0) {
    for (const auto& [name, b] : z.named_buffers()) tensors["model." + name] = b;
  }
  nlohmann::json params = nlohmann::json::array();
  for (size_t i = 0; i < z.param_names().size(); ++i) params.push_back({z.param_names()[i], z.param_shapes()[i]});
  metadata["zero.run"] = std::to_string(run[0].item<int64_t>());
  metadata["zero.world"] = std::to_string(comm->size());
  metadata["zero.rank"] = std::to_string(comm->rank());
  metadata["zero.stage"] = std::to_string(z.stage());
  metadata["zero.params"] = params.dump();
  metadata["zero.dtype"] = c10::toString(z.param_dtype());
  return shard;
}

void save_sharded(const ZeroOptimizer& z, format::FileSystem& fs, const std::string& dir, const format::Metadata& extra) {
  auto comm = z.comm();
  // A rank that cannot write must not leave the others waiting in a
  // collective: its error is kept until every rank has agreed at the end.
  std::string error;
  try {
    fs.create_directories(dir);
  } catch (const c10::Error& e) {
    error = std::string("save_sharded: ") + e.what_without_backtrace();
  }
  const ShardFile shard = capture_shard(z, extra);
  if (error.empty()) {
    try {
      format::save_safetensors(fs, dir + "/" + shard.name, shard.content.tensors, shard.content.metadata);
    } catch (const std::exception& e) {
      error = error_text(e);
    }
  }
  // Every file is in place when any rank returns, or every rank throws.
  const bool failed = comm::any_rank(comm, !error.empty());
  TORCH_CHECK(!failed, error.empty() ? "save_sharded: another rank could not write its shard file to '" + dir +
                                           "'; its error says why"
                                     : error);
}


void detail::load_shard_set(ZeroOptimizer& z, ShardSet set) {
  const std::string& dir = set.dir;
  // Everything is checked before anything changes.
  std::vector<std::string> problems;
  for (size_t i = 0; i < z.param_names().size(); ++i) {
    const auto& name = z.param_names()[i];
    auto it = set.shapes.find(name);
    if (it == set.shapes.end()) {
      problems.push_back("missing '" + name + "'");
    } else if (it->second != z.param_shapes()[i]) {
      problems.push_back("'" + name + "' has shape " + c10::str(c10::IntArrayRef(it->second)) + " in the files, " +
                         c10::str(c10::IntArrayRef(z.param_shapes()[i])) + " in the model");
    }
  }
  for (const auto& name : set.names) {
    if (std::find(z.param_names().begin(), z.param_names().end(), name) == z.param_names().end()) {
      problems.push_back("unexpected '" + name + "'");
    }
  }
  for (const auto& [name, b] : z.named_buffers()) {
    auto it = set.buffers.find(name);
    if (it == set.buffers.end()) problems.push_back("missing buffer '" + name + "'");
    else if (it->second.sizes() != b.sizes()) problems.push_back("buffer '" + name + "' has another shape");
  }
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += "\n  " + p;
    TORCH_CHECK(false, "ZeRO checkpoint '", dir, "' does not fit this model:", list);
  }

  // This rank's optimizer state, as restore_optimizer_state reads it.
  auto& inner = z.inner();
  format::TensorFile optim;
  optim.source = dir;
  const auto saved = [&](const char* key) -> const std::string& {
    const auto it = set.metadata.find(key);
    TORCH_CHECK(it != set.metadata.end(), "ZeRO checkpoint '", dir, "' has no '", key,
                "' in its metadata; restore the files of one complete save");
    return it->second;
  };
  for (const char* key : {"optim.type", "optim.scalar_fields"}) optim.metadata[key] = saved(key);
  nlohmann::json groups;
  try {
    groups = util::parse_json_text(saved("optim.groups"));
  } catch (const util::JsonTextError& e) {
    TORCH_CHECK(false, "ZeRO checkpoint '", dir, "': metadata 'optim.groups' is ", e.what(),
                "; restore the files of one complete save");
  }
  TORCH_CHECK(groups.is_array() && std::all_of(groups.begin(), groups.end(), [](const auto& g) { return g.is_object(); }),
              "ZeRO checkpoint '", dir, "': metadata 'optim.groups' is not a list of groups; restore the files of "
              "one complete save");
  TORCH_CHECK(groups.size() == inner.param_groups().size(), "ZeRO checkpoint '", dir, "' has ", groups.size(),
              " optimizer groups, this optimizer ", inner.param_groups().size(),
              "; build the optimizer with the groups it was saved with");
  for (size_t g = 0; g < groups.size(); ++g) groups[g]["params"] = inner.param_groups()[g].params().size();
  optim.metadata["optim.groups"] = groups.dump();
  int64_t index = 0;
  for (const auto& g : inner.param_groups()) {
    for (const auto& p : g.params()) {
      const ShardParam* s = nullptr;
      for (const auto& candidate : z.shard()) {
        if (candidate.tensor.is_same(p)) s = &candidate;
      }
      const std::string prefix = "optim." + std::to_string(index++) + ".";
      if (auto it = set.elementwise.find(s->name); it != set.elementwise.end()) {
        for (const auto& [field, full] : it->second) {
          optim.tensors[prefix + field] = full.narrow(0, s->param_begin, s->tensor.numel()).clone();
        }
      }
      if (auto it = set.scalars.find(s->name); it != set.scalars.end()) {
        for (const auto& [field, value] : it->second) optim.tensors[prefix + field] = value.clone();
      }
    }
  }
  optim::restore_optimizer_state(inner, optim);
  for (size_t g = 0; g < inner.param_groups().size(); ++g) {
    z.param_groups()[g].set_options(inner.param_groups()[g].options().clone());
  }

  torch::NoGradGuard no_grad;
  for (const auto& s : z.shard()) {
    s.tensor.copy_(set.params.at(s.name).narrow(0, s.param_begin, s.tensor.numel()));
  }
  for (const auto& [name, b] : z.named_buffers()) b.copy_(set.buffers.at(name));
  z.publish();
}

format::Metadata load_sharded(ZeroOptimizer& z, format::FileSystem& fs, const std::string& dir) {
  detail::ShardSet set = detail::read_shard_set(fs, dir);
  format::Metadata metadata = set.metadata;
  detail::load_shard_set(z, std::move(set));
  return metadata;
}

void load_whole(ZeroOptimizer& z, const format::TensorFile& whole) {
  detail::load_shard_set(z, detail::shard_set_of_whole(whole, z.param_names()));
}

void consolidate_shards(format::FileSystem& fs, const std::string& dir, const std::string& out_path) {
  const detail::ShardSet set = detail::read_shard_set(fs, dir);
  std::vector<std::string> shards;
  for (int r = 0; r < set.world; ++r) shards.push_back(dir + "/" + detail::shard_file_name(r, set.world));
  util::require_not_an_input(out_path, shards, "zero-consolidate: the output");
  torch::ScalarType dtype = torch::kFloat;
  for (auto t : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf}) {
    if (set.dtype == c10::toString(t)) dtype = t;
  }
  format::TensorMap tensors;
  for (const auto& name : set.names) tensors["model." + name] = set.params.at(name).to(dtype).reshape(set.shapes.at(name));
  for (const auto& [name, b] : set.buffers) tensors["model." + name] = b;
  format::Metadata metadata;
  for (const char* key : {"zero.run", "zero.world", "zero.stage"}) metadata[key] = set.metadata.at(key);
  metadata["zero.consolidated_from"] = dir;
  format::save_safetensors(fs, out_path, tensors, metadata);
}

}  // namespace paisoar::zero
