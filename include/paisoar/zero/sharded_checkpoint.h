// Sharded ZeRO checkpoints: each rank writes its own shard (parameters as fp32
// master values and optimizer state, both by parameter name and element
// range) to <dir>/zero-<rank>-of-<world>.safetensors; any number of ranks can
// load them back, and consolidate_shards() writes the one full model file.
// Every file goes through the given format::FileSystem (the local disk:
// *format::local_file_system()).
#pragma once

#include <string>

#include "paisoar/format/file_system.h"
#include "paisoar/format/tensor_file.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::zero {

// Collective. Writes this rank's file (rank 0's also holds the model's
// buffers); `metadata` (step, epoch, scaler state as text...) goes into every
// file. All files of one save share a run id, so a later load notices files
// mixed from two saves. Write each checkpoint to its own directory.
// Throws c10::Error naming the directory if it cannot be written.
void save_sharded(const ZeroOptimizer& optimizer, format::FileSystem& fs, const std::string& dir,
                  const format::Metadata& metadata = {});

// This rank's shard file, as save_sharded writes it: its name
// (zero-<rank>-of-<world>.safetensors) and content, whose tensors share
// storage with the optimizer's (copy them to keep them past the next step).
// Collective over the optimizer's group (rank 0's run id is broadcast).
struct ShardFile {
  std::string name;
  format::TensorFile content;
};
ShardFile capture_shard(const ZeroOptimizer& optimizer, const format::Metadata& metadata = {});

// Collective. Reads every shard file in `dir` (written by any number of
// ranks), puts this rank's part of the parameters and optimizer state in
// place, the buffers too, and all-gathers the parameters into the model.
// Returns rank 0's file metadata. Throws c10::Error listing what is wrong:
// missing shard files, files from another save (run id) or world size, or a
// model whose parameter names or shapes differ; nothing is changed then.
format::Metadata load_sharded(ZeroOptimizer& optimizer, format::FileSystem& fs, const std::string& dir);

// Collective. load_sharded's work from a whole-model checkpoint
// (capture_training_state's layout, as written with zero.stage 0): this
// rank's part of every parameter and of its optimizer state, and the buffers.
// Throws c10::Error naming the file when it holds another model or an
// optimizer state that cannot be split by parameter; nothing is changed then.
void load_whole(ZeroOptimizer& optimizer, const format::TensorFile& whole);

// Reads the shard files in `dir` and writes the full model to `out_path` as
// one safetensors file: "model.<name>" for every parameter (in the model's
// dtype) and buffer, the layout capture_training_state() uses, so
// restore_training_state() or Python's safetensors read it. Not collective.
void consolidate_shards(format::FileSystem& fs, const std::string& dir, const std::string& out_path);

}  // namespace paisoar::zero
