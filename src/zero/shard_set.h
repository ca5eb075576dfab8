// ShardSet: the model and optimizer state of one checkpoint as whole
// parameters by name, whatever layout wrote it: the files of one sharded ZeRO
// checkpoint (checked for completeness, the ranks' pieces reassembled) or one
// whole-model file (zero.stage 0). It is the meeting point of every layout:
// load_sharded, load_whole, whole_of_shards and consolidate_shards read it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "paisoar/format/file_system.h"
#include "paisoar/format/tensor_file.h"
#include "paisoar/zero/zero_optimizer.h"

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
ShardSet read_shard_set(format::FileSystem& fs, const std::string& dir);

// The same view of a whole-model checkpoint (capture_training_state's layout:
// "model.<name>", "optim.<i>.<field>" with i counted over the optimizer's
// parameters, named by its "optim.param_names"; `order` stands in for that
// list in files written before it). Throws c10::Error naming the file when a
// tensor is missing or an optimizer index names no parameter.
ShardSet shard_set_of_whole(const format::TensorFile& whole, const std::vector<std::string>& order);

// Appends `part` (another part of the same model: a pipeline stage's
// parameters) to `into`: its parameters after into's, its optimizer state
// and buffers beside. A parameter both hold (a tied embedding on two stages)
// is kept once; throws c10::Error naming both sources when its values differ.
void append_part(ShardSet& into, ShardSet part);

// A model's trainable parameters (in order, with shapes) and buffers.
struct ModelNames {
  std::vector<std::string> params;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::pair<std::string, std::vector<int64_t>>> buffers;
};

// Keeps of `set` (the whole model, named as `whole`) only what `part` holds: a pipeline stage's parameters, their
// optimizer state and buffers, in the part's order. Throws c10::Error naming
// the set when the part holds a parameter the set lacks or shapes differ.
void keep_part(ShardSet& set, const ModelNames& part);

// The trainable parameters (in order) and buffers of `module`.
ModelNames names_of(const torch::nn::Module& module);

// The inverse of shard_set_of_whole: `set` as a whole-model checkpoint for
// `optimizer`, built over `model`'s trainable parameters in their order (the
// parameters in the model's dtype). Refuses (c10::Error naming the set's
// source) a set whose parameters differ from the model's.
format::TensorFile whole_of_shard_set(ShardSet set, const torch::nn::Module& model,
                                      const torch::optim::Optimizer& optimizer);

// The same, for a model given by its names, its
// optimizer's group sizes and its parameters' dtype.
format::TensorFile whole_of_shard_set(ShardSet set, const ModelNames& model, const std::vector<size_t>& group_sizes,
                                      torch::ScalarType dtype);

// The set's own model: its parameters in order and its buffers.
ModelNames names_of(const ShardSet& set);
// Its parameters' dtype (set.dtype). Throws c10::Error for another string.
torch::ScalarType dtype_of(const ShardSet& set);

// `set` as the files of a ZeRO checkpoint of `world` ranks at `stage`, in
// save_sharded's layout (read_shard_set and load_sharded read them on any
// number of ranks): rank r holds elements [n*r/world, n*(r+1)/world) of each
// parameter and of its optimizer fields, rank 0 the buffers too; `run` is
// their shared save id. Index r is zero-<r>-of-<world>.safetensors.
std::vector<format::TensorFile> shard_files_of(const ShardSet& set, int world, int stage, int64_t run);

// Collective over the optimizer's group: puts this rank's part of `set`
// (parameters, optimizer state, buffers) into `z` and all-gathers the
// parameters into the model (zero::load_sharded's work). Throws c10::Error
// listing what does not fit; nothing is changed then.
void load_shard_set(ZeroOptimizer& z, ShardSet set);

}  // namespace paisoar::zero::detail
