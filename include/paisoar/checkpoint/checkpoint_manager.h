// CheckpointManager: periodic checkpoints in one directory, named
// step-<12-digit step>.safetensors, the newest keep_last kept, and automatic
// resume from the newest one that reads back intact (a damaged newest file is
// reported on stderr and skipped).
#pragma once

#include "paisoar/format/file_system.h"
#include "paisoar/format/tensor_file.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace paisoar::checkpoint {

struct CheckpointOptions {
  std::string dir;           // created if missing; must be writable on rank 0
  int64_t every_steps = 0;   // due(step) every this many steps; 0: never due
  int64_t keep_last = 3;     // files kept after each save; <= 0 keeps all
  int rank = 0;              // only rank 0 writes and prunes; every rank can load (-1: a reader only)
  // Where the files live; null: format::local_file_system().
  std::shared_ptr<format::FileSystem> file_system;
};

struct CheckpointFile {
  int64_t step;
  std::string path;
};

// Thread safety: none; use one manager from one thread. One writing process
// per directory.
class CheckpointManager {
 public:
  // On rank 0 creates `dir`, checks that a file can be created in it, locks
  // it against a second writing job (an flock the kernel drops when the
  // process dies), and removes temporaries left by an interrupted save.
  // Throws c10::Error naming the directory if it cannot be created or
  // written, if another live process holds its lock, or if dir is empty.
  explicit CheckpointManager(CheckpointOptions options);

  // True when every_steps > 0, step > 0 and step is a multiple of every_steps.
  bool due(int64_t step) const;

  // Rank 0: writes step-<step>.safetensors atomically (see format::save_safetensors),
  // with "paisoar.step" added to the metadata, then deletes all but the newest
  // keep_last checkpoints. Other ranks return at once. REQUIRES: step >= 0.
  void save(int64_t step, const format::TensorMap& tensors, const format::Metadata& metadata = {});
  void save(int64_t step, const format::TensorFile& checkpoint) { save(step, checkpoint.tensors, checkpoint.metadata); }

  struct Loaded {
    int64_t step;
    format::TensorFile checkpoint;  // checkpoint.source is the file's path
  };
  // The newest checkpoint that loads intact, or nullopt if the directory
  // holds none. Each newer file that fails to load is named in a warning on
  // stderr with the reason, and so is a step-named entry that is not a
  // regular file (a dangling link). Throws c10::Error if checkpoints exist
  // but none loads.
  std::optional<Loaded> load_latest() const;

  // The directory's checkpoints, oldest first.
  std::vector<CheckpointFile> list() const;

  // Warns on stderr about each step-named entry that is not a regular file
  // (a dangling link, a directory): list() leaves them out.
  void warn_unusable_entries() const;

  const CheckpointOptions& options() const { return options_; }
  // The file system every file of these checkpoints goes through.
  format::FileSystem& file_system() const { return *options_.file_system; }

  // Where step `step`'s step file is (or would be) in the directory.
  std::string path_for(int64_t step) const;

 private:
  void prune() const;

  CheckpointOptions options_;
  // Rank 0: the directory's lock (<dir>/.paisoar-lock), held while the
  // manager lives so a second job cannot write the same directory.
  std::shared_ptr<const void> lock_;
};

}  // namespace paisoar::checkpoint
