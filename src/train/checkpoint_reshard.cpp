// reshard_checkpoint: a Trainer checkpoint rewritten offline for another
// number of ranks or ZeRO stage, through the same meeting point a resume
// uses (zero::detail::ShardSet): the source's model state as whole
// parameters by name, cut again for the target layout.
#include "src/train/trainer_checkpoint.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <random>

#include "paisoar/checkpoint/file_manifest.h"
#include "paisoar/format/safetensors.h"
#include "src/util/json_text.h"

namespace paisoar::train {

std::string step_dir_name(const std::string& kind, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof(name), "%s-%012lld", kind.c_str(), static_cast<long long>(step));
  return name;
}

std::string reshard_checkpoint(const std::string& source, const std::string& target, int ranks, int zero_stage) {
  format::FileSystem& files_on = *format::local_file_system();
  TORCH_CHECK(ranks >= 1, "reshard: --ranks is ", ranks, "; give 1 or more");
  TORCH_CHECK(zero_stage >= 0 && zero_stage <= 3, "reshard: --zero_stage is ", zero_stage, "; give 0, 1, 2 or 3");
  const format::FileKind there = files_on.status(target).kind;
  TORCH_CHECK(there == format::FileKind::Missing || (there == format::FileKind::Directory && files_on.list(target).empty()),
              "reshard: '",
              target, "' exists and is not an empty directory; give a new one (nothing in it is overwritten)");
  checkpoint::CheckpointOptions reader;
  reader.dir = source;
  reader.rank = 1;  // reads only
  const auto newest = newest_checkpoint(checkpoint::CheckpointManager(reader), "", "", nullptr);
  TORCH_CHECK(newest.has_value(), "reshard: '", source, "' holds no checkpoint (step-<12 digits>.safetensors)");
  const format::TensorFile& step_file = newest->step_file.checkpoint;
  const int64_t step = newest->step_file.step;
  zero::detail::ShardSet set = newest->shards ? *newest->shards : zero::detail::shard_set_of_whole(step_file, {});

  // The step file's own state (RNG, schedule, scaler) and metadata, without
  // the model state's and its layout's.
  format::TensorFile out;
  for (const auto& [name, t] : step_file.tensors) {
    if (name.rfind("model.", 0) != 0 && name.rfind("optim.", 0) != 0) out.tensors[name] = t;
  }
  for (const auto& [key, value] : step_file.metadata) {
    const bool layout = key.rfind("optim.", 0) == 0 || key.rfind("paisoar.", 0) == 0 || key == kShardKey ||
                        key == kPartsKey || key == kPartLayoutKey || key == kBoundsKey || key == checkpoint::kFilesKey;
    if (!layout) out.metadata[key] = value;
  }
  out.metadata["train.world"] = std::to_string(ranks);
  out.metadata["train.zero_stage"] = std::to_string(zero_stage);
  out.metadata["train.resharded_from"] = newest->step_file.checkpoint.source;

  files_on.create_directories(target);
  std::vector<checkpoint::FileEntry> files;
  if (zero_stage == 0) {
    // One optimizer group over every parameter, as the Trainer builds it;
    // with several, which parameter was in which is not recorded.
    const auto groups = set.metadata.find("optim.groups");
    size_t group_count = 0;
    try {
      if (groups != set.metadata.end()) group_count = util::parse_json_text(groups->second).size();
    } catch (const util::JsonTextError&) {
    }
    TORCH_CHECK(group_count == 1, "reshard: '", source, "' holds an optimizer with ", group_count,
                " parameter groups; only one (the Trainer's) can be cut into a whole-model checkpoint: reshard it "
                "to a ZeRO stage instead");
    const format::TensorFile whole = zero::detail::whole_of_shard_set(
        set, zero::detail::names_of(set), {set.names.size()}, zero::detail::dtype_of(set));
    for (const auto& [name, t] : whole.tensors) out.tensors[name] = t;
    for (const auto& [key, value] : whole.metadata) out.metadata[key] = value;
  } else {
    const std::string dir = step_dir_name("zero", step);
    std::random_device rd;
    const int64_t run = static_cast<int64_t>(((static_cast<uint64_t>(rd()) << 32) | rd()) >> 1);
    const auto shards = zero::detail::shard_files_of(set, ranks, zero_stage, run);
    files_on.create_directories(target + "/" + dir);
    for (int r = 0; r < ranks; ++r) {
      auto& shard = shards[static_cast<size_t>(r)];
      format::Metadata metadata = shard.metadata;
      metadata["train.step"] = std::to_string(step);
      format::save_safetensors(files_on, target + "/" + dir + "/" + zero::detail::shard_file_name(r, ranks), shard.tensors,
                               metadata);
    }
    out.metadata[kShardKey] = dir;
    files = checkpoint::describe_files(files_on, target, dir);
  }
  out.metadata[checkpoint::kFilesKey] = checkpoint::file_manifest_json(files);
  checkpoint::CheckpointOptions writer;
  writer.dir = target;
  checkpoint::CheckpointManager(writer).save(step, out);  // last, atomically: the commit
  const std::string& written = newest->step_file.checkpoint.source;
  return target + written.substr(written.rfind('/'));
}

}  // namespace paisoar::train
